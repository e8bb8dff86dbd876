/* The JVM's TLS, as weft's Java agent sees it: its advice on the JDK's
 * SSLSocket streams and SSLEngine hands each call's plaintext to
 * libweft_jni (jni/weft_tls.c), which calls weft_tls_event(io) once per
 * call; user space uprobes that function's entry in each JVM that mapped
 * the library. Writes come before their bytes are encrypted (the client
 * span is decided before any leaves), reads after they were decrypted.
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

/* The socket of engine conn of process pi, tied now by the record fp
 * when it can be; 0 while it is not known. */
static __always_inline __u64 jvm_engine_sock(struct proc_info *pi, __u32 tgid, const struct jvm_tls_io *io)
{
	proc_tls_mark(pi, WEFT_PROC_TLS_BIO);
	struct tls_conn_key k = {.conn = io->conn, .tgid = tgid};
	__u64 *s = bpf_map_lookup_elem(&tls_socks, &k);
	if (s)
		return *s;
	if (!io->has_fp)
		return 0;
	struct tls_fp_key fp = {.tgid = tgid};
	__builtin_memcpy(fp.b, io->fp, TLS_FP_LEN);
	if (io->dir == WEFT_DIR_EGRESS) {
		__u64 conn = io->conn;
		bpf_map_update_elem(&tls_out_fps, &fp, &conn, BPF_ANY);
		return 0;
	}
	s = bpf_map_lookup_elem(&tls_in_fps, &fp);
	if (!s)
		return 0;
	__u64 sk = *s;
	bpf_map_delete_elem(&tls_in_fps, &fp);
	tls_bio_tie(io->conn, tgid, sk);
	return sk;
}

SEC("uprobe")
int weft_jvm_tls(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!pid_traced(tgid))
		return 0;
	struct jvm_tls_io io;
	if (bpf_probe_read_user(&io, sizeof(io), (void *)ctx->di) < 0 || io.dir > WEFT_DIR_INGRESS)
		return 0;
	struct proc_info *pi = proc_of(tgid);
	__u64 sk = 0;
	switch (io.kind) {
	case JVM_TLS_SOCKET:
		sk = (__u64)fd_sock(io.fd);
		break;
	case JVM_TLS_ENGINE:
		sk = jvm_engine_sock(pi, tgid, &io);
		break;
	default:
		return 0;
	}
	if (io.len == 0 || io.len > 0x7fffffff)
		return 0;
	/* A socket closes untracked: a tie to one that closed (its address
	 * may be another socket's by now) names nothing. */
	if (!sk || !bpf_map_lookup_elem(&tracked_socks, &sk)) {
		count(WEFT_STAT_TLS_NO_SOCK);
		return 0;
	}
	/* The id the agent mounted on this thread now, as at a socket call. */
	refresh_slot((__u32)pid_tgid);
	struct user_buf ub = {.ptr = io.buf};
	if (io.dir == WEFT_DIR_EGRESS) {
		/* A request's client span, decided before its bytes leave, for
		 * the server at the other end (tlslink.h). */
		__u32 zero = 0;
		struct event_buf *e = bpf_map_lookup_elem(&scratch, &zero);
		if (e)
			tls_client_start(e, copy_payload(e, &ub, (__u32)io.len), pid_tgid, sk, 0);
	}
	emit_data(ctx, (struct sock *)sk, io.dir, (__u32)io.len, &ub, true);
	return 0;
}

#endif
