/* The spans of HTTP/2 client streams that a process outside Go opens over
 * TLS, when the server end of its connection is traced on this host.
 *
 * HPACK leaves no room to inject a traceparent, and a thread-mode client
 * (curl, say) has no hook that names its streams, so the server end can
 * have the client's span as parent only if the kernel decides that span
 * before the server reads the stream, and leaves it where the server's
 * hooks look (h2_client_spans, h2link.h: nginx's upstream call, a Go
 * server's handler). User space adopts it for the client span.
 *
 * The decision is made at the entry of the TLS write, before any byte
 * leaves: the write's plaintext is scanned from where the connection's
 * walk stands (h2walk.h), and each HEADERS frame that opens a stream
 * (its id above the highest seen, so a retried write or trailers open
 * none) starts a trace of its own, as user space would start it: the
 * kernel only decides it earlier, and tells user space (WEFT_EV_H2_OPEN).
 *
 * A stream its thread claimed for a request (the Node.js and Python
 * companions, h2claim.h) goes under that request instead.
 *
 * Only where the server end is traced on this host (traced_client.served,
 * h2peer.h). Plaintext HTTP/2 (h2c) is not covered: its bytes are
 * reported after they left. Included by tlscall.h. */
#ifndef WEFT_H2SEED_H
#define WEFT_H2SEED_H

#include "common.h"

struct h2_seed_ctx {
	__u64 buf;  /* where the write's bytes go on in user memory */
	__u64 sock;
	__u32 tgid;
	__u32 bytes; /* the write's length */
	__u32 pos;   /* bytes of it scanned */
	__u32 _pad;
	struct h2_walk st; /* the walk's state, advanced over the write here only */
	struct h2_conn_key conn;
};

/* Stream `stream` opens: its span is decided, under the request its
 * thread claimed it for (h2claim.h) or as a root, left for the server end
 * and told to user space. */
static __always_inline void h2_seed_open(struct h2_seed_ctx *s, __u32 stream)
{
	struct h2_stream_key k = {.conn = s->conn, .stream = stream};
	struct span_ctx span = {}, parent = {};
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct h2_thread_claim_key ck = {.tgid = pid_tgid >> 32, .tid = (__u32)pid_tgid, .stream = stream};
	struct span_ctx *claim = bpf_map_lookup_elem(&h2_thread_claims, &ck);
	if (claim) {
		/* Two connections' streams of one id: which is whose cannot be
		 * told, as user space cannot tell its claims apart. */
		if (!claim->ambiguous && bpf_ktime_get_ns() - claim->start_ns < H2_CLAIM_FRESH_NS)
			parent = *claim;
		bpf_map_delete_elem(&h2_thread_claims, &ck);
	}
	__u64 hi, lo;
	__builtin_memcpy(&hi, parent.trace_id, sizeof(hi));
	__builtin_memcpy(&lo, parent.trace_id + 8, sizeof(lo));
	if (hi | lo) {
		__builtin_memcpy(span.trace_id, parent.trace_id, sizeof(span.trace_id));
		span.trace_flags = parent.trace_flags;
		random_ids(0, span.span_id);
	} else {
		__builtin_memset(&parent, 0, sizeof(parent));
		random_ids(span.trace_id, span.span_id);
		span.trace_flags = root_flags(span.trace_id);
	}
	/* A write retried after part of it left may open a stream again:
	 * the span its server end may have taken stays the stream's. */
	if (bpf_map_update_elem(&h2_client_spans, &k, &span, BPF_NOEXIST) < 0)
		return;
	struct event_header *h = h2_event(WEFT_EV_H2_OPEN, s->tgid, 0, stream);
	if (!h)
		return; /* counted; user space starts the stream's trace, split from its server's */
	h->sock_id = s->sock;
	h->tls = 1;
	h->dir = WEFT_DIR_EGRESS;
	h->ctx_kind = WEFT_CTX_CLIENT;
	h->trace_flags = span.trace_flags;
	__builtin_memcpy(h->trace_id, span.trace_id, sizeof(h->trace_id));
	__builtin_memcpy(h->span_id, span.span_id, sizeof(h->span_id));
	__builtin_memcpy(h->parent_id, parent.span_id, sizeof(h->parent_id));
	fill_addrs(h, (struct sock *)s->sock);
	h2_event_submit(h);
}

/* One step of the scan: the rest of the preface, of a payload, or of a
 * frame header, which is kept until complete. */
static long h2_seed_step(__u64 i, void *arg)
{
	struct h2_seed_ctx *s = arg;
	if (s->pos >= s->bytes)
		return 1;
	__u32 n = s->bytes - s->pos;
	struct h2_walk *st = &s->st;
	if (st->preface) {
		if (n > st->preface)
			n = st->preface;
		st->preface -= n;
	} else if (st->left) {
		if (n > st->left)
			n = st->left;
		st->left -= n;
	} else {
		__u32 have;
		n = h2_header_take(st, n, &have);
		__u8 b[H2_FRAME_HDR] = {};
		__u64 l = n;
		BOUND(l, 15);
		if (l > H2_FRAME_HDR || bpf_probe_read_user(b, l, (void *)(s->buf + s->pos)) < 0)
			return 1;
		for (__u32 k = 0; k < H2_FRAME_HDR; k++) {
			if (k >= n)
				break;
			__u64 idx = have + k;
			BOUND(idx, 15);
			st->hdr[idx] = b[k];
		}
		st->have = have + n;
		if (st->have == H2_FRAME_HDR) {
			__u32 stream = h2_frame_stream(st->hdr);
			bool opens = st->hdr[3] == H2_HEADERS && (stream & 1) && stream > st->opened;
			h2_begin(st);
			if (opens)
				h2_seed_open(s, stream);
		}
	}
	s->pos += n;
	return 0;
}

/* Thread tgid's TLS write of `bytes` at buf on socket sock, whose client
 * direction's walk state is *st (NULL for the write that carries the
 * preface): the streams it opens get their spans. A global function:
 * checked once, apart from the probe that calls it. */
__noinline int h2_seed_streams(__u32 tgid, __u64 sock, __u64 buf, __u32 bytes, struct h2_walk *st)
{
	struct h2_seed_ctx s = {.buf = buf, .sock = sock, .tgid = tgid, .bytes = bytes};
	peer_key_of_sock(&s.conn.pk, (struct sock *)sock);
	struct traced_client *tc = bpf_map_lookup_elem(&traced_clients, &s.conn.pk);
	if (!tc || !tc->served)
		return 0;
	s.conn.gen = tc->gen;
	if (st)
		s.st = *st;
	else
		s.st.preface = H2_PREFACE_LEN;
	if (s.st.cut)
		return 0;
	bpf_loop(H2_MAX_STEPS, h2_seed_step, &s, 0);
	if (st && s.st.opened > st->opened)
		st->opened = s.st.opened;
	return 0;
}

/* A TLS write of num bytes at buf on connection conn (socket sock if the
 * caller knows it), of a process outside Go, that does not begin an
 * HTTP/1 request; first8, its first 8 bytes. */
static __always_inline void h2_client_writes(__u64 pid_tgid, __u64 conn, __u64 sock, __u64 buf, __u64 num,
					     const __u8 *first8)
{
	__u32 tgid = pid_tgid >> 32;
	struct proc_info *pi = proc_of(tgid);
	if (pi && pi->mode == WEFT_MODE_GO)
		return; /* its hooks decide its streams' spans (h2link.h) */
	/* "PRI * HT": the write that opens the connection. */
	bool preface = first8[0] == 'P' && first8[1] == 'R' && first8[2] == 'I' && first8[3] == ' ' &&
		       first8[4] == '*' && first8[5] == ' ' && first8[6] == 'H' && first8[7] == 'T';
	if (!preface && (!pi || !pi->h2))
		return;
	if (!sock)
		sock = tls_sock_of(conn, tgid);
	if (!sock || num > 0xffffffff)
		return;
	struct h2_walk *st = 0;
	if (!preface) {
		st = h2_lookup(TLS_SOCK_KEY(sock), WEFT_DIR_EGRESS);
		if (!st || !st->client)
			return;
	}
	h2_seed_streams(tgid, sock, buf, num, st);
}

#endif
