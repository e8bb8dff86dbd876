/* The handlers of a Go HTTP/2 server whose client weft follows on this
 * host too. HPACK leaves no room to inject a traceparent, so the server's
 * stream can have its client's span as parent only if the kernel hands it
 * over: the client decides its stream's span where it claims the stream
 * (h2claim.h), before the HEADERS are written, and leaves it under the
 * connection and the stream id; the server, decoding the stream, takes it
 * (h2serve.h), and its handler serves a span under it.
 *
 * Both ends name a connection by its 4-tuple (as the client sees it) and
 * the time it was established (traced_clients, h2peer.h): a new
 * connection with the same addresses never takes an older one's spans.
 * The server end's goroutines learn it at the client preface; the client
 * end knows only its own connection object (net/http's *ClientConn,
 * grpc-go's loopy-writer goroutine) when it claims a stream, and learns
 * that object's socket at its first claimed write (h2_client_learn):
 * streams claimed before that start no span here, and their server
 * streams' handlers serve none (user space still links the two spans).
 * The client decides a span only for a connection whose server end read
 * the preface on this host (traced_client.linked). Included by common.h. */
#ifndef WEFT_H2LINK_H
#define WEFT_H2LINK_H

struct h2_stream_key {
	struct h2_conn_key conn;
	__u32 stream;
	__u32 _pad;
};

enum h2_client_state {
	H2_CLIENT_WANTED = 0,  /* claimed, its socket not known yet */
	H2_CLIENT_SOCKET = 1,  /* a claimed write named its socket */
	H2_CLIENT_KNOWN = 2,   /* its connection is known (conn) */
	H2_CLIENT_UNKNOWN = 3, /* its socket is not a traced client's connection */
};

struct h2_client_conn {
	__u64 sk;
	struct h2_conn_key conn;
	__u8 state;
	__u8 _pad[7];
};

/* grpc-go's loopy writers are keyed by goroutine, net/http's client
 * connections by address: the bit keeps the two apart. */
#define H2_CLIENT_LOOPY (1ULL << 63)

/* (tgid, client connection object) -> its socket and connection. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct go_key);
	__type(value, struct h2_client_conn);
} h2_client_conns SEC(".maps");

/* A socket named in h2_client_conns -> the entry, which goes with the
 * socket's close: the object may name another connection next. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct go_key);
} h2_client_socks SEC(".maps");

/* A client stream's span, until its server end decodes the stream. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct h2_stream_key);
	__type(value, struct span_ctx);
} h2_client_spans SEC(".maps");

/* A claimed write of client connection object k (a key in event memory)
 * on socket id sock_id (its plaintext's, over TLS): the object's socket,
 * if a claim asked for it. */
static __always_inline void h2_client_learn(struct go_key *k, __u64 sock_id)
{
	__u64 sk = sock_id & ~1ULL; /* TLS_SOCK_KEY's bit */
	struct h2_client_conn *c = bpf_map_lookup_elem(&h2_client_conns, k);
	if (!c || c->sk == sk)
		return;
	c->sk = sk;
	c->state = H2_CLIENT_SOCKET;
	bpf_map_update_elem(&h2_client_socks, &c->sk, k, BPF_ANY);
}

/* At a tracked socket's close: what named it goes. */
static __always_inline void h2_client_closed(__u64 sk)
{
	struct go_key *k = bpf_map_lookup_elem(&h2_client_socks, &sk);
	if (!k)
		return;
	struct h2_client_conn *c = bpf_map_lookup_elem(&h2_client_conns, k);
	if (c && c->sk == sk)
		bpf_map_delete_elem(&h2_client_conns, k);
	bpf_map_delete_elem(&h2_client_socks, &sk);
}

/* Client connection object `object` of process tgid is about to write
 * the HEADERS of stream `stream` for request parent: when the server end
 * of its connection decodes on this host, the stream's span is decided
 * now and left for it; its id goes to span_id. False when none is. */
static __always_inline bool h2_client_span(__u32 tgid, __u64 object, __u32 stream, const struct span_ctx *parent,
					   __u8 *span_id)
{
	struct go_key k = {.tgid = tgid, .id = object};
	struct h2_client_conn *c = bpf_map_lookup_elem(&h2_client_conns, &k);
	if (!c) {
		struct h2_client_conn want = {};
		bpf_map_update_elem(&h2_client_conns, &k, &want, BPF_NOEXIST);
		return false;
	}
	if (c->state == H2_CLIENT_SOCKET) {
		peer_key_of_sock(&c->conn.pk, (struct sock *)c->sk);
		struct traced_client *tc = bpf_map_lookup_elem(&traced_clients, &c->conn.pk);
		c->conn.gen = tc ? tc->gen : 0;
		c->state = tc ? H2_CLIENT_KNOWN : H2_CLIENT_UNKNOWN;
	}
	if (c->state != H2_CLIENT_KNOWN)
		return false;
	/* Its server end may read the preface after the first claims. */
	struct traced_client *tc = bpf_map_lookup_elem(&traced_clients, &c->conn.pk);
	if (!tc || tc->gen != c->conn.gen || !tc->linked)
		return false;
	struct h2_stream_key sk = {.conn = c->conn, .stream = stream};
	struct span_ctx span = {.trace_flags = parent->trace_flags};
	__builtin_memcpy(span.trace_id, parent->trace_id, sizeof(span.trace_id));
	random_ids(0, span.span_id);
	bpf_map_update_elem(&h2_client_spans, &sk, &span, BPF_ANY);
	__builtin_memcpy(span_id, span.span_id, sizeof(span.span_id));
	return true;
}

/* Takes the span the client left for stream k into in, and makes span
 * the server span under it. */
static __always_inline bool h2_take_client_span(const struct h2_stream_key *k, struct span_ctx *in,
						struct span_ctx *span)
{
	struct span_ctx *s = bpf_map_lookup_elem(&h2_client_spans, k);
	if (!s)
		return false;
	*in = *s;
	bpf_map_delete_elem(&h2_client_spans, k);
	__builtin_memcpy(span->trace_id, in->trace_id, sizeof(span->trace_id));
	span->trace_flags = in->trace_flags;
	random_ids(0, span->span_id);
	return true;
}

/* The span the client left for stream `stream` of the connection
 * goroutine id (or its creator) of process tgid decodes, taken into in;
 * span, the server span under it. */
static __always_inline bool h2_client_span_of(__u32 tgid, const struct go_id *id, __u32 stream, struct span_ctx *in,
					      struct span_ctx *span)
{
	struct go_key g = {.tgid = tgid, .id = id->goid};
	struct h2_conn_key *conn = bpf_map_lookup_elem(&go_h2_peers, &g);
	if (!conn && id->parent) {
		g.id = id->parent;
		conn = bpf_map_lookup_elem(&go_h2_peers, &g);
	}
	if (!conn)
		return false;
	struct h2_stream_key k = {.conn = *conn, .stream = stream};
	return h2_take_client_span(&k, in, span);
}

#endif
