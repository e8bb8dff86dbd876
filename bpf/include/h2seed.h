/* The spans of HTTP/2 client streams that a process outside Go opens,
 * over TLS or h2c, when the server end of its connection is traced on
 * this host.
 *
 * HPACK leaves no room to inject a traceparent, and a thread-mode client
 * (curl, say) has no hook that names its streams, so the server end can
 * have the client's span as parent only if the kernel decides that span
 * before the server reads the stream, and leaves it where the server's
 * hooks look (h2_client_spans, h2link.h: nginx's upstream call, a Go
 * server's handler). User space adopts it for the client span.
 *
 * The decision is made before any byte of the write leaves: at the entry
 * of the TLS write, or in sk_msg for h2c (the socket hooks report a
 * write after its bytes left, when the server may have read them). The
 * write's bytes are scanned from where the connection's walk stands
 * (h2walk.h), and each HEADERS frame that opens a stream (its id above
 * the highest seen, so a retried write or trailers open none) starts a
 * trace of its own, as user space would start it: the kernel only
 * decides it earlier, and tells user space (WEFT_EV_H2_OPEN).
 *
 * A stream its thread claimed for a request (the Node.js and Python
 * companions, h2claim.h) goes under that request instead.
 *
 * Only where the server end is traced on this host (traced_client.served,
 * h2peer.h), which is known once the server has read from the
 * connection: over TLS before any stream (the ClientHello), over h2c
 * only from the server's read of the preface on, so the streams of an
 * h2c client's first writes may be left to user space (split at the
 * server). Included by tlscall.h. */
#ifndef WEFT_H2SEED_H
#define WEFT_H2SEED_H

#include "common.h"
#include "msgcopy.h"

struct h2_seed_ctx {
	__u64 buf;  /* where the write's bytes go on in user memory (TLS) */
	__u64 sock;
	__u32 tgid;
	__u32 bytes; /* the write's length (h2c: of its copy) */
	__u32 pos;   /* bytes of it scanned */
	__u16 family; /* of the addresses in key.conn.pk, as events give them */
	__u8 tls;
	__u8 _pad;
	struct h2_walk st; /* the walk's state, advanced over the write here only */
	struct h2_stream_key key; /* the connection, and the stream opening (the callback's stack is short) */
};

/* Stream `stream` opens: its span is decided, under the request its
 * thread claimed it for (h2claim.h) or as a root, left for the server end
 * and told to user space. */
static __always_inline void h2_seed_open(struct h2_seed_ctx *s, __u32 stream)
{
	s->key.stream = stream;
	struct span_ctx span = {};
	__u8 parent_id[8] = {}; /* the stack is short under sk_msg: no whole parent here */
	bool child = false;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct h2_thread_claim_key ck = {.tgid = pid_tgid >> 32, .tid = (__u32)pid_tgid, .stream = stream};
	struct span_ctx *claim = bpf_map_lookup_elem(&h2_thread_claims, &ck);
	if (claim) {
		/* Two connections' streams of one id: which is whose cannot be
		 * told, as user space cannot tell its claims apart. */
		const __u64 *trace = (const __u64 *)claim->trace_id;
		if (!claim->ambiguous && bpf_ktime_get_ns() - claim->start_ns < H2_CLAIM_FRESH_NS &&
		    (trace[0] | trace[1])) {
			__builtin_memcpy(span.trace_id, claim->trace_id, sizeof(span.trace_id));
			span.trace_flags = claim->trace_flags;
			__builtin_memcpy(parent_id, claim->span_id, sizeof(parent_id));
			child = true;
		}
		bpf_map_delete_elem(&h2_thread_claims, &ck);
	}
	if (child) {
		random_ids(0, span.span_id);
	} else {
		random_ids(span.trace_id, span.span_id);
		span.trace_flags = root_flags(span.trace_id);
	}
	/* A write retried after part of it left may open a stream again:
	 * the span its server end may have taken stays the stream's. */
	if (bpf_map_update_elem(&h2_client_spans, &s->key, &span, BPF_NOEXIST) < 0)
		return;
	struct event_header *h = h2_event(WEFT_EV_H2_OPEN, s->tgid, 0, stream);
	if (!h)
		return; /* counted; user space starts the stream's trace, split from its server's */
	h->sock_id = s->sock;
	h->tls = s->tls;
	h->dir = WEFT_DIR_EGRESS;
	h->ctx_kind = WEFT_CTX_CLIENT;
	h->trace_flags = span.trace_flags;
	__builtin_memcpy(h->trace_id, span.trace_id, sizeof(h->trace_id));
	__builtin_memcpy(h->span_id, span.span_id, sizeof(h->span_id));
	__builtin_memcpy(h->parent_id, parent_id, sizeof(h->parent_id));
	h->family = s->family;
	__builtin_memcpy(h->saddr, s->key.conn.pk.caddr, sizeof(h->saddr));
	__builtin_memcpy(h->daddr, s->key.conn.pk.saddr, sizeof(h->daddr));
	h->sport = s->key.conn.pk.cport;
	h->dport = s->key.conn.pk.sport;
	h2_event_submit(h);
}

/* The n (at most H2_FRAME_HDR) bytes of the write at s->pos, into b:
 * from user memory (TLS), or from sk_msg's copy of the message. */
static __always_inline bool h2_seed_read(struct h2_seed_ctx *s, __u8 *b, __u32 n, bool user)
{
	__u64 l = n;
	BOUND(l, 15);
	if (l > H2_FRAME_HDR)
		return false;
	if (user)
		return bpf_probe_read_user(b, l, (void *)(s->buf + s->pos)) == 0;
	__u32 zero = 0;
	struct inject_buf *m = bpf_map_lookup_elem(&inject_scratch, &zero);
	if (!m)
		return false;
	/* Nine bytes whatever n is (the copy has room past its end): one
	 * path for the verifier. */
	__builtin_memcpy(b, &m->data[s->pos & (INJECT_PULL - 1)], H2_FRAME_HDR);
	return true;
}

/* One step of the scan: the rest of the preface, of a payload, or of a
 * frame header, which is kept until complete. */
static __always_inline long h2_seed_advance(struct h2_seed_ctx *s, bool user)
{
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
		if (!h2_seed_read(s, b, n, user))
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

static long h2_seed_step(__u64 i, void *arg) { return h2_seed_advance(arg, true); }
static long h2c_seed_step(__u64 i, void *arg) { return h2_seed_advance(arg, false); }

/* Scans s's write from where the walk *st stands (NULL for the write that
 * carries the preface), when the server end of s->key.conn.pk is traced here. */
static __always_inline void h2_seed_scan(struct h2_seed_ctx *s, struct h2_walk *st, bool user)
{
	struct traced_client *tc = bpf_map_lookup_elem(&traced_clients, &s->key.conn.pk);
	if (!tc || !tc->served)
		return;
	s->key.conn.gen = tc->gen;
	if (st)
		s->st = *st;
	else
		s->st.preface = H2_PREFACE_LEN;
	if (s->st.cut)
		return;
	bpf_loop(H2_MAX_STEPS, user ? h2_seed_step : h2c_seed_step, s, 0);
	if (st && s->st.opened > st->opened)
		st->opened = s->st.opened;
}

/* Thread tgid's TLS write of `bytes` at buf on socket sock, whose client
 * direction's walk state is *st (NULL for the write that carries the
 * preface): the streams it opens get their spans. A global function:
 * checked once, apart from the probe that calls it. */
__noinline int h2_seed_streams(__u32 tgid, __u64 sock, __u64 buf, __u32 bytes, struct h2_walk *st)
{
	struct h2_seed_ctx s = {.buf = buf, .sock = sock, .tgid = tgid, .bytes = bytes, .tls = 1};
	s.family = peer_key_of_sock(&s.key.conn.pk, (struct sock *)sock);
	h2_seed_scan(&s, st, true);
	return 0;
}

/* The write that opens an HTTP/2 connection: "PRI * HT". */
static __always_inline bool h2_preface_start(const __u8 *d)
{
	return d[0] == 'P' && d[1] == 'R' && d[2] == 'I' && d[3] == ' ' && d[4] == '*' && d[5] == ' ' && d[6] == 'H' &&
	       d[7] == 'T';
}

/* Whether the kernel decides the HTTP/2 client streams of process pi
 * here: not a Go program's (its hooks decide them, h2link.h), nor those
 * of a process whose agent claims them (the JVM's: its claims reach user
 * space only, and rule there). */
static __always_inline bool h2_seeds(const struct proc_info *pi)
{
	return !pi || (pi->mode != WEFT_MODE_GO && pi->mode != WEFT_MODE_AGENT);
}

/* A TLS write of num bytes at buf on connection conn (socket sock if the
 * caller knows it), of a process outside Go, that does not begin an
 * HTTP/1 request; first8, its first 8 bytes. */
static __always_inline void h2_client_writes(__u64 pid_tgid, __u64 conn, __u64 sock, __u64 buf, __u64 num,
					     const __u8 *first8)
{
	__u32 tgid = pid_tgid >> 32;
	struct proc_info *pi = proc_of(tgid);
	if (!h2_seeds(pi))
		return;
	bool preface = h2_preface_start(first8);
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

/* The 4-tuple of an sk_msg program's connection (conn_key_of), as
 * peer_key_of_sock gives it; returns the family of its addresses. */
static __always_inline __u16 peer_key_of_conn(struct peer_key *k, const struct conn_key *ck)
{
	__u16 out = peer_addr(k->caddr, (const __u8 *)ck->local_ip, ck->family);
	peer_addr(k->saddr, (const __u8 *)ck->remote_ip, ck->family);
	k->cport = ck->local_port;
	k->sport = ck->remote_port;
	k->_pad = 0;
	return out;
}

/* sk_msg: a plaintext (h2c) write of a process h2_seeds allows on the
 * connection ck, whose first n bytes were copied to inject_scratch;
 * preface: it is the connection's first, which opens with the client
 * preface. The socket hooks report a write after its bytes left, when
 * the server may have read them: sk_msg runs before, so the streams the
 * write opens get their spans here. A write's streams past the copy get
 * none (split at the server, as before). A global function: checked
 * once, apart from the long sk_msg program. */
__noinline int h2c_seed_streams(struct sk_msg_md *msg, const struct conn_key *ck, __u32 n, bool preface)
{
	struct bpf_sock *bsk = msg->sk;
	if (!bsk || !ck)
		return 0;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(bsk);
	if (!tp)
		return 0;
	__u64 sock = (__u64)tp;
	struct h2_walk *st = 0;
	if (!preface) {
		st = h2_lookup(sock, WEFT_DIR_EGRESS);
		if (!st || !st->client)
			return 0;
	}
	struct h2_seed_ctx s = {.sock = sock, .tgid = bpf_get_current_pid_tgid() >> 32, .bytes = n};
	s.family = peer_key_of_conn(&s.key.conn.pk, ck);
	h2_seed_scan(&s, st, false);
	return 0;
}

#endif
