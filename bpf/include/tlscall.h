/* What every TLS library's probes share once a call is noted (tls.h):
 * the early client span of a write that begins a request (tlslink.h), and
 * the report of the plaintext a call moved. Included by openssl.h and
 * gotls.h. */
#ifndef WEFT_TLSCALL_H
#define WEFT_TLSCALL_H

#include "common.h"
#include "sockfd.h"
#include "h2seed.h"

/* Notes call c of process pi under key. A handshake the library runs
 * inside an open read or write of the same connection (Go's Write before
 * its first handshake) leaves that call's note alone. */
static __always_inline void tls_call_begin(struct proc_info *pi, __u64 key, const struct tls_call *c)
{
	proc_tls_mark(pi, WEFT_PROC_TLS_CALLS);
	struct tls_call *open = bpf_map_lookup_elem(&tls_calls, &key);
	if (!open) {
		bpf_map_update_elem(&tls_calls, &key, c, BPF_ANY);
		return;
	}
	if (c->dir == TLS_NO_PLAINTEXT && open->conn == c->conn && open->dir != TLS_NO_PLAINTEXT)
		return;
	/* In place: only this thread (goroutine) writes its note, and an
	 * update would allocate and free an LRU node per call. */
	*open = *c;
}

/* The note of the call returning now under key, copied out and marked
 * ended: dir is what the returning function moves (TLS_NO_PLAINTEXT: a
 * handshake), so a nested handshake's return leaves its caller's note.
 * The entry stays for the thread's next call (a delete and an insert
 * would free and allocate an LRU node per call). */
static __always_inline bool tls_call_end(__u64 key, __u8 dir, struct tls_call *out)
{
	struct tls_call *p = bpf_map_lookup_elem(&tls_calls, &key);
	if (!p || !p->conn || p->dir != dir)
		return false;
	*out = *p;
	p->conn = 0;
	return true;
}

/* A TLS write that begins a request on a connection whose socket is
 * known: its client span is decided now, before a byte leaves, for the
 * server at the other end (tlslink.h). goid: the writing goroutine in a
 * Go program, else 0. A global function: verified once. */
__noinline int tls_client_start(struct event_buf *e, __u32 n, __u64 pid_tgid, __u64 sk, __u64 goid)
{
	if (!e)
		return 0;
	BOUND(n, 0x1fff);
	struct span_ctx own = {};
	if (!is_request_start(e->data, n) || parse_traceparent(e->data, n, HEAD_START, &own) == TP_FOUND)
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
	struct go_id g = {.goid = goid};
	new_client_ctx(pid_tgid, correlation_key((__u32)pid_tgid), &k, goid ? &g : 0, &fresh.cs.ctx,
		       fresh.cs.parent_id);
	bpf_map_update_elem(&tls_links, &k, &fresh, BPF_ANY);
	return 0;
}

/* A TLS write of num bytes at buf on connection conn: when they begin a
 * request, its client span is decided now (tls_client_start); when they
 * open HTTP/2 streams, theirs may be (h2seed.h). sock: the
 * connection's socket if the caller knows it, else 0; goid: the writing
 * goroutine in a Go program, else 0. A response's bytes
 * are not copied here: a first look at the method tells it. */
static __always_inline void tls_write_begins(__u64 pid_tgid, __u64 conn, __u64 sock, __u64 buf, __u64 num,
					     __u64 goid)
{
	__u32 zero = 0;
	struct event_buf *e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e || num < 8 || bpf_probe_read_user(e->data, 8, (void *)buf) < 0)
		return;
	if (!is_request_start(e->data, 8)) {
		h2_client_writes(pid_tgid, conn, sock, buf, num, e->data);
		return;
	}
	if (!sock)
		sock = tls_sock_of(conn, pid_tgid >> 32);
	if (!sock)
		return;
	struct user_buf ub = {.ptr = buf};
	__u32 n = copy_payload(e, &ub, num > 0xffffffff ? 0xffffffff : num);
	tls_client_start(e, n, pid_tgid, sock, goid);
}

/* A TLS call c moved n bytes of plaintext: they are the data of the
 * socket its connection uses, emitted through progs (emit_data). False
 * when nothing was reported. */
static __always_inline bool tls_report(void *ctx, void *progs, __u64 pid_tgid, const struct tls_call *c, __u64 n)
{
	if (c->dir == TLS_NO_PLAINTEXT || n == 0 || n > 0xffffffff)
		return false;
	__u64 sk = c->sock;
	if (!sk) {
		struct tls_conn_key k = {.conn = c->conn, .tgid = pid_tgid >> 32};
		__u64 *s = bpf_map_lookup_elem(&tls_socks, &k);
		if (!s) {
			count(WEFT_STAT_TLS_NO_SOCK);
			return false;
		}
		sk = *s;
	}
	struct user_buf ub = {.ptr = c->buf};
	emit_data(ctx, progs, (struct sock *)sk, c->dir, (__u32)n, &ub, true, false);
	return true;
}

#endif
