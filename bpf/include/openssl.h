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
 *   void SSL_free(SSL *s)
 *   int SSL_shutdown(SSL *s)
 *   int BIO_write(BIO *b, const void *data, int dlen)   (libcrypto)
 *
 * tls.h ties each call to its socket (tlsbio.h where the library moves
 * the ciphertext itself), tlscall.h reports it. Included by
 * common.h after emit_data. */
#ifndef WEFT_OPENSSL_H
#define WEFT_OPENSSL_H

#include "common.h"
#include "tlscall.h"

/* Which function a probe sits on: its attach cookie (user space sets it). */
enum ssl_fn {
	SSL_FN_WRITE = 0,
	SSL_FN_WRITE_EX = 1,
	SSL_FN_READ = 2,
	SSL_FN_READ_EX = 3,
	/* (SSL_FN_READ_EX and SSL_FN_WRITE_EX may sit on the function the
	 * _ex variant hands its arguments to, with its contract: user space
	 * picks probe sites, pkg/tracer/opensslsites.go.) */
	/* The handshake moves ciphertext only: its nested calls name the
	 * socket before the first write, whose client span is decided at its
	 * start. */
	SSL_FN_HANDSHAKE = 4,
	/* void SSL_free(SSL *s), entry only: the connection's address may
	 * name the next one (tlsbio.h). */
	SSL_FN_FREE = 5,
	/* int BIO_write(BIO *b, const void *data, int dlen), entry only: the
	 * ciphertext going to or coming from a memory BIO (tlsbio.h). */
	SSL_FN_BIO_WRITE = 6,
	/* int SSL_shutdown(SSL *s), entry only: it may consume what the
	 * runtime fed to the connection's BIO (tlsbio.h). */
	SSL_FN_SHUTDOWN = 7,
};

static __always_inline int ssl_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	__u64 fn = bpf_get_attach_cookie(ctx);
	if (fn == SSL_FN_FREE) {
		tls_conn_freed(pid_tgid >> 32, ctx->di);
		return 0;
	}
	if (fn == SSL_FN_BIO_WRITE) {
		tls_bio_write(proc_of(pid_tgid >> 32), pid_tgid, ctx->si, (__u64)(int)ctx->dx);
		return 0;
	}
	if (fn == SSL_FN_SHUTDOWN) {
		tls_bio_call_begins(proc_of(pid_tgid >> 32), pid_tgid, ctx->di);
		return 0;
	}
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
	struct proc_info *pi = proc_of(pid_tgid >> 32);
	tls_bio_call_begins(pi, pid_tgid, c.conn);
	tls_call_begin(pi, pid_tgid, &c);
	if (c.dir == WEFT_DIR_EGRESS)
		tls_write_begins(pid_tgid, c.conn, 0, c.buf, ex ? ctx->dx : (__u64)(int)ctx->dx, 0);
	return 0;
}

/* The return of any of them: the plaintext it moved, as its socket's
 * data. Failures and retries (WANT_READ, WANT_WRITE) move none. */
static __always_inline int ssl_return(struct pt_regs *ctx, void *progs)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 fn = bpf_get_attach_cookie(ctx);
	__u8 dir = fn == SSL_FN_WRITE || fn == SSL_FN_WRITE_EX ? WEFT_DIR_EGRESS
		   : fn == SSL_FN_READ || fn == SSL_FN_READ_EX ? WEFT_DIR_INGRESS
							       : TLS_NO_PLAINTEXT;
	struct tls_call c;
	if (!tls_call_end(pid_tgid, dir, &c))
		return 0;
	long rc = (int)ctx->ax;
	__u64 n = 0;
	if (c.done) {
		if (rc != 1 || bpf_probe_read_user(&n, sizeof(n), (void *)c.done) < 0)
			return 0;
	} else if (rc > 0) {
		n = rc;
	}
	tls_report(ctx, progs, pid_tgid, &c, n);
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
	return ssl_return(ctx, &emit_multi_progs);
}

SEC("uprobe")
int weft_ssl_enter(struct pt_regs *ctx)
{
	return ssl_enter(ctx);
}

SEC("uretprobe")
int weft_ssl_ret(struct pt_regs *ctx)
{
	return ssl_return(ctx, &emit_probe_progs);
}

#endif
