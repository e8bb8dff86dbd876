/* OpenSSL (1.1 and 3.x; libssl.so or linked into the executable, as
 * Node.js's): SSL_read, SSL_write and their _ex variants, per process
 * (user space attaches them to each traced process's libssl). C keeps
 * its stack, so uretprobes are safe.
 *
 *   int SSL_read(SSL *s, void *buf, int num)            > 0: bytes read
 *   int SSL_write(SSL *s, const void *buf, int num)     > 0: bytes written
 *   int SSL_read_ex(SSL *s, void *buf, size_t num, size_t *readbytes)  1: ok
 *   int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written)
 *   int SSL_do_handshake(SSL *s)   (SSL_connect and SSL_accept call it)
 *
 * tls.h ties each call to its socket. Included by common.h after emit_data. */
#ifndef WEFT_OPENSSL_H
#define WEFT_OPENSSL_H

#include "common.h"
#include "sockfd.h"

/* A TLS write that begins a request on a connection whose socket is
 * known: its client span is decided now, before a byte leaves, for the
 * server at the other end (tlslink.h). A global function: verified once. */
__noinline int tls_client_start(struct event_buf *e, __u32 n, __u64 pid_tgid, __u64 sk)
{
	if (!e)
		return 0;
	BOUND(n, 0x1fff);
	struct span_ctx own = {};
	if (!is_request_start(e->data, n) || parse_traceparent(e->data, n, false, &own) == TP_FOUND)
		return 0; /* not a request, or it carries its own traceparent */
	struct conn_key k = {};
	conn_key_of_sock((struct sock *)sk, &k);
	conn_key_v4mapped(&k);
	struct tls_link *l = bpf_map_lookup_elem(&tls_links, &k);
	if (l && !l->reported && l->sock == sk && l->writer == pid_tgid)
		return 0; /* a retry of the write that decided it */
	struct tls_link fresh = {.sock = sk, .writer = pid_tgid};
	/* The last request is still unread at the other end: which one the
	 * server reads next cannot be told. */
	fresh.ambiguous = l && !l->consumed;
	new_client_ctx(pid_tgid, correlation_key((__u32)pid_tgid), &k, 0, &fresh.cs.ctx, fresh.cs.parent_id);
	bpf_map_update_elem(&tls_links, &k, &fresh, BPF_ANY);
	return 0;
}

static __always_inline void tls_write_begins(__u64 pid_tgid, __u64 conn, __u64 buf, __u64 num)
{
	struct tls_conn_key tk = {.conn = conn, .tgid = pid_tgid >> 32};
	__u64 *sk = bpf_map_lookup_elem(&tls_socks, &tk);
	if (!sk || !num)
		return;
	__u64 sock = *sk;
	__u32 zero = 0;
	struct event_buf *e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return;
	struct user_buf ub = {.ptr = buf};
	__u32 n = copy_payload(e, &ub, num > 0xffffffff ? 0xffffffff : num);
	tls_client_start(e, n, pid_tgid, sock);
}

/* Which function a probe sits on: its attach cookie (user space sets it). */
enum ssl_fn {
	SSL_FN_WRITE = 0,
	SSL_FN_WRITE_EX = 1,
	SSL_FN_READ = 2,
	SSL_FN_READ_EX = 3,
	/* The handshake moves ciphertext only: its nested calls name the
	 * socket before the first write, whose client span is decided at its
	 * start. */
	SSL_FN_HANDSHAKE = 4,
};

static __always_inline int ssl_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	__u64 fn = bpf_get_attach_cookie(ctx);
	bool ex = fn == SSL_FN_WRITE_EX || fn == SSL_FN_READ_EX;
	struct tls_call c = {.conn = ctx->di, .buf = ctx->si, .done = ex ? ctx->cx : 0};
	switch (fn) {
	case SSL_FN_WRITE:
	case SSL_FN_WRITE_EX:
		c.dir = WEFT_DIR_EGRESS;
		break;
	case SSL_FN_READ:
	case SSL_FN_READ_EX:
		c.dir = WEFT_DIR_INGRESS;
		break;
	case SSL_FN_HANDSHAKE:
		c.dir = TLS_NO_PLAINTEXT;
		c.buf = 0;
		break;
	default:
		return 0;
	}
	bpf_map_update_elem(&tls_calls, &pid_tgid, &c, BPF_ANY);
	if (c.dir == WEFT_DIR_EGRESS)
		tls_write_begins(pid_tgid, c.conn, c.buf, ex ? ctx->dx : (__u64)(int)ctx->dx);
	return 0;
}

/* The return of any of them: the plaintext it moved, as its socket's
 * data. Failures and retries (WANT_READ, WANT_WRITE) move none. */
static __always_inline int ssl_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tls_call *p = bpf_map_lookup_elem(&tls_calls, &pid_tgid);
	if (!p)
		return 0;
	struct tls_call c = *p;
	bpf_map_delete_elem(&tls_calls, &pid_tgid);
	if (c.dir == TLS_NO_PLAINTEXT)
		return 0;
	long rc = (int)ctx->ax;
	__u64 n = 0;
	if (c.done) {
		if (rc != 1 || bpf_probe_read_user(&n, sizeof(n), (void *)c.done) < 0)
			return 0;
	} else if (rc > 0) {
		n = rc;
	}
	if (n == 0 || n > 0xffffffff)
		return 0;
	__u64 sk = c.sock;
	if (!sk) {
		struct tls_conn_key k = {.conn = c.conn, .tgid = pid_tgid >> 32};
		__u64 *s = bpf_map_lookup_elem(&tls_socks, &k);
		if (!s) {
			count(WEFT_STAT_TLS_NO_SOCK);
			return 0;
		}
		sk = *s;
	}
	struct user_buf ub = {.ptr = c.buf};
	emit_data(ctx, (struct sock *)sk, c.dir, (__u32)n, &ub, true);
	return 0;
}

/* Each probe in two forms; user space loads the one the kernel has:
 * one uprobe_multi link per file and direction (Linux 6.6+), whose
 * removal costs one grace period, or a perf-event uprobe per function,
 * about 0.1 s each to remove. */
SEC("uprobe.multi")
int weft_ssl_enter_multi(struct pt_regs *ctx)
{
	return ssl_enter(ctx);
}

SEC("uretprobe.multi")
int weft_ssl_ret_multi(struct pt_regs *ctx)
{
	return ssl_return(ctx);
}

SEC("uprobe")
int weft_ssl_enter(struct pt_regs *ctx)
{
	return ssl_enter(ctx);
}

SEC("uretprobe")
int weft_ssl_ret(struct pt_regs *ctx)
{
	return ssl_return(ctx);
}

#endif
