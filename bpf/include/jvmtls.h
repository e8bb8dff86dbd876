/* The JVM's TLS, as weft's Java agent sees it: its advice on the JDK's
 * SSLSocket streams and SSLEngine hands each call's plaintext to
 * libweft_jni (jni/weft_tls.c), which calls weft_tls_event(io) once per
 * call (and weft_tls_request before it for what may begin a request);
 * user space uprobes their entries in each JVM that mapped the library.
 * Writes come before their bytes are encrypted (the client span is
 * decided before any leaves), reads after they were decrypted.
 *
 *   SSLSocket: io->fd is the socket's descriptor; its socket is the one.
 *   SSLEngine: io->conn names the engine, which moves no bytes itself (the
 *     JDK's HttpClient, Netty and others do, on threads of their own); it
 *     is tied to its socket by its ciphertext as a memory BIO is
 *     (tlsbio.h): the first TLS_FP_LEN bytes of a record wrap made are
 *     noted and the send that begins with them ties the engine; a record
 *     unwrap reads is tied by the socket read that began with it.
 * Included by common.h after openssl.h. */
#ifndef WEFT_JVMTLS_H
#define WEFT_JVMTLS_H

#include "common.h"
#include "sockfd.h"

#define JVM_TLS_SOCKET 1
#define JVM_TLS_ENGINE 2

/* jni/weft_jni.h's struct weft_tls_io, byte for byte. */
struct jvm_tls_io {
	__u64 conn;
	__s32 fd;
	__u8 dir;
	__u8 kind;
	__u8 has_fp;
	__u8 _pad;
	__u64 len;
	__u64 buf;
	__u8 fp[TLS_FP_LEN];
};

/* One call's record and the key its fingerprint makes, per CPU: the
 * program's stack, with emit_data's calls below it, has no room for them
 * on older kernels' verifiers. */
struct jvm_tls_scratch {
	struct jvm_tls_io io;
	struct tls_fp_key fp;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jvm_tls_scratch);
} jvm_tls_scratch SEC(".maps");

/* The call's record, in this CPU's scratch; NULL when process tgid is not
 * traced or the record is not one. */
static __always_inline struct jvm_tls_scratch *jvm_tls_read(struct pt_regs *ctx, __u32 tgid)
{
	if (!pid_traced(tgid))
		return NULL;
	__u32 zero = 0;
	struct jvm_tls_scratch *w = bpf_map_lookup_elem(&jvm_tls_scratch, &zero);
	if (!w || bpf_probe_read_user(&w->io, sizeof(w->io), (void *)ctx->di) < 0 || w->io.dir > WEFT_DIR_INGRESS)
		return NULL;
	return w;
}

/* The socket engine conn of process tgid is tied to; 0 if none yet. */
static __always_inline __u64 jvm_engine_tied(__u64 conn, __u32 tgid)
{
	struct tls_conn_key k = {.conn = conn, .tgid = tgid};
	__u64 *s = bpf_map_lookup_elem(&tls_socks, &k);
	return s ? *s : 0;
}

/* sk when weft tracks it: plaintext for a socket that closed (its
 * address may be another socket's by now) names nothing. */
static __always_inline __u64 jvm_tracked(__u64 sk)
{
	return sk && bpf_map_lookup_elem(&tracked_socks, &sk) ? sk : 0;
}

/* The socket of the engine in w->io of process pi, tied now by its
 * record's fingerprint when it can be; 0 while it is not known. */
static __always_inline __u64 jvm_engine_sock(struct proc_info *pi, __u32 tgid, struct jvm_tls_scratch *w)
{
	proc_tls_mark(pi, WEFT_PROC_TLS_BIO);
	__u64 sk = jvm_engine_tied(w->io.conn, tgid);
	if (sk)
		return sk;
	if (!w->io.has_fp)
		return 0;
	w->fp.tgid = tgid;
	__builtin_memcpy(w->fp.b, w->io.fp, TLS_FP_LEN);
	if (w->io.dir == WEFT_DIR_EGRESS) {
		bpf_map_update_elem(&tls_out_fps, &w->fp, &w->io.conn, BPF_ANY);
		return 0;
	}
	__u64 *s = bpf_map_lookup_elem(&tls_in_fps, &w->fp);
	if (!s)
		return 0;
	sk = *s;
	bpf_map_delete_elem(&tls_in_fps, &w->fp);
	tls_bio_tie(w->io.conn, tgid, sk);
	return sk;
}

static __always_inline int jvm_tls(struct pt_regs *ctx, void *progs)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct jvm_tls_scratch *w = jvm_tls_read(ctx, tgid);
	if (!w)
		return 0;
	__u8 dir = w->io.dir;
	__u64 len = w->io.len, buf = w->io.buf;
	__u64 sk = 0;
	switch (w->io.kind) {
	case JVM_TLS_SOCKET:
		sk = (__u64)fd_sock(w->io.fd);
		break;
	case JVM_TLS_ENGINE:
		sk = jvm_engine_sock(proc_of(tgid), tgid, w);
		break;
	default:
		return 0;
	}
	if (len == 0 || len > 0x7fffffff)
		return 0;
	if (!jvm_tracked(sk)) {
		count(WEFT_STAT_TLS_NO_SOCK);
		return 0;
	}
	/* The id the agent mounted on this thread now, as at a socket call. */
	refresh_slot((__u32)pid_tgid);
	struct user_buf ub = {.ptr = buf};
	emit_data(ctx, progs, (struct sock *)sk, dir, (__u32)len, &ub, true, false);
	return 0;
}

/* In the two forms of the other TLS probes (openssl.h), so that the
 * kernel has one emitting program fewer to verify where it has
 * uprobe_multi: the socket tracepoints' and uprobe_multi's. */
SEC("uprobe.multi")
int weft_jvm_tls_multi(struct pt_regs *ctx)
{
	return jvm_tls(ctx, &emit_multi_progs);
}

SEC("uprobe")
int weft_jvm_tls(struct pt_regs *ctx)
{
	return jvm_tls(ctx, &emit_probe_progs);
}

/* weft_tls_request(io), which libweft_jni calls before weft_tls_event for
 * plaintext that may begin a request: the request's client span, decided
 * before its bytes leave, for the server at the other end (tlslink.h). A
 * program of its own: with emit_data's frame beside it, the two calls
 * below would pass older verifiers' 512 bytes of combined stack. An
 * engine not tied yet has no socket to decide for. */
SEC("uprobe")
int weft_jvm_tls_request(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct jvm_tls_scratch *w = jvm_tls_read(ctx, tgid);
	if (!w || w->io.dir != WEFT_DIR_EGRESS || w->io.len == 0 || w->io.len > 0x7fffffff)
		return 0;
	__u64 sk = jvm_tracked(w->io.kind == JVM_TLS_SOCKET ? (__u64)fd_sock(w->io.fd) : jvm_engine_tied(w->io.conn, tgid));
	if (!sk)
		return 0;
	refresh_slot((__u32)pid_tgid);
	struct user_buf ub = {.ptr = w->io.buf};
	__u32 len = (__u32)w->io.len, zero = 0;
	struct event_buf *e = bpf_map_lookup_elem(&scratch, &zero);
	if (e)
		tls_client_start(e, copy_payload(e, &ub, len), pid_tgid, sk, 0);
	return 0;
}

/* weft_h2_claim(stream, id, tid), which the agent calls on the thread
 * that is about to write buffered HEADERS opening HTTP/2 client stream
 * `stream` (OkHttp's Http2Writer.flush), for the request of logical id
 * `id` (0: of thread tid, which buffered them). The claim goes to user
 * space ahead of the write, naming the writing thread, as grpc-go's do
 * with its goroutine (h2claim.h): each stream the thread's write opens
 * takes its claim. A request that cannot be named (none live, or two
 * under the key) is claimed as none: the stream starts a trace of its
 * own. */
SEC("uprobe")
int weft_jvm_h2_claim(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!pid_traced(tgid) || !by_thread(mode_of(tgid)))
		return 0;
	__u32 stream = (__u32)ctx->di;
	__u64 id = ctx->si;
	if (!stream)
		return 0;
	struct span_ctx *srv = lookup_active(tgid, id ? logical_key(id) : (__u32)ctx->dx);
	if (srv && srv->ambiguous) {
		count(WEFT_STAT_PARENT_AMBIGUOUS);
		srv = 0;
	}
	/* Without a request, a claim all the same, naming none: it replaces
	 * any claim left for this stream id by an earlier write of the
	 * thread that did not carry it, which must not be taken for this
	 * one (another connection's stream). */
	struct span_ctx none = {};
	emit_h2_claim(tgid, (__u32)pid_tgid, stream, srv ? srv : &none, NULL);
	return 0;
}

#endif
