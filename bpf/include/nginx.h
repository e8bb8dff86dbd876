/* nginx: tie each upstream request to the downstream request it proxies.
 * A worker serves many requests on one thread, so the thread names none;
 * nginx itself knows, at the moment it picks the upstream connection.
 *
 * - ngx_http_upstream_init(r) starts the upstream part of downstream
 *   request r (its connection: r->connection->fd).
 * - Within it, ngx_event_connect_peer(pc) returns with pc->connection set:
 *   a fresh connection (NGX_OK, NGX_AGAIN) or one from a keepalive pool
 *   (NGX_DONE). That connection's next request works for r: conn_parent.
 *
 * An HTTP/1 request's span is the one the kernel decided at its read
 * (serving_sock). An HTTP/2 stream's span is made in user space, from
 * frames the kernel does not decode, after nginx has called upstream:
 * so its server span is decided here, for the stream r->stream names,
 * and reported to user space (WEFT_EV_H2_SERVE naming the socket), when
 * the kernel can decide it right: the stream's traceparent, read from
 * the request's parsed headers; the span a traced client of this host
 * decided for the stream (h2seed.h, h2link.h); or a new trace when no
 * traced process of this host is the connection's client (h2peer.h);
 * else (a traced client here that left no span, whose span user space
 * links the stream to; a subrequest; headers it cannot read) the call
 * starts its own trace, never one under the worker thread's other
 * requests.
 *
 * Offsets read (stable since nginx 0.x, as its module ABI needs them):
 * ngx_http_request_t.connection at 8, ngx_connection_t.fd at 24,
 * ngx_peer_connection_t.connection at 0; for HTTP/2 (1.9.5+), the first
 * fields of ngx_http_v2_stream_t (request, connection, node), of
 * ngx_http_v2_connection_t (connection) and ngx_http_v2_node_t (id), and
 * ngx_http_request_t.headers_in.headers, after the request's first 12 or
 * 13 pointers (13 with the cache module). r->stream's offset changes with
 * the version and the modules built in: it is found once per process, as
 * the field that points at a stream whose request has r's connection and
 * whose HTTP/2 connection has r's socket. Each read is checked: the
 * downstream socket must be one with a live request or an HTTP/2
 * connection, the upstream fd a socket. Retries outside
 * ngx_http_upstream_init find no request and fall back to the thread rule
 * (ambiguous, so no parent). Included by common.h. */
#ifndef WEFT_NGINX_H
#define WEFT_NGINX_H

#include "common.h"
#include "sockfd.h"

#define NGX_REQUEST_CONNECTION 8
#define NGX_CONNECTION_FD 24
#define NGX_PEER_CONNECTION 0
#define NGX_OK 0
#define NGX_AGAIN -2
#define NGX_DONE -4

/* pid_tgid -> the span of the downstream request whose upstream is
 * being set up. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct span_ctx);
} ngx_upstream_for SEC(".maps");

#define NGX_STREAM_SCAN_FROM 0x80 /* r->stream comes after headers_in, which starts before */
#define NGX_STREAM_SCAN_WORDS 224 /* to 0x780, past the end of the request */
#define NGX_STREAM_SCANS 16       /* scans that found nothing before weft stops looking */
#define NGX_HEADERS_NO_CACHE 96   /* r->headers_in.headers without the cache module */
#define NGX_HEADERS_CACHE 104     /* with it (r->cache before r->upstream) */
#define NGX_HEADERS_PER_PART 20   /* ngx_list_init(&r->headers_in.headers, .., 20, ..) */

/* Where a process's nginx keeps ngx_http_request_t.stream. */
struct ngx_stream_offset {
	__u32 off;    /* 0 until found */
	__u32 misses; /* scans that found nothing */
};

/* tgid -> where its requests' stream is. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct ngx_stream_offset);
} ngx_stream_offsets SEC(".maps");

/* ngx_list_t, as r->headers_in.headers: its first part inline. */
struct ngx_list {
	__u64 last;
	__u64 elts;
	__u64 nelts;
	__u64 next;
	__u64 size;
	__u64 nalloc;
	__u64 pool;
};

/* ngx_table_elt_t's first fields: hash, key, value. */
struct ngx_table_elt {
	__u64 hash;
	__u64 key_len;
	__u64 key;
	__u64 value_len;
	__u64 value;
};

/* pid_tgid -> the ngx_peer_connection_t being connected. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} ngx_connecting SEC(".maps");

/* The fd of the ngx_connection_t at user address c. */
static __always_inline __s32 ngx_conn_fd(__u64 c)
{
	__s32 fd = -1;
	if (!c || bpf_probe_read_user(&fd, sizeof(fd), (void *)(c + NGX_CONNECTION_FD)) < 0)
		return -1;
	return fd;
}

/* The ngx_http_v2_stream_t that r's field at off points at, if it is
 * the stream of r's connection c: its request's connection is c, and its
 * HTTP/2 connection's socket is fd. Its request goes to req: r, or, for
 * a subrequest (which shares its stream), the main request. */
static __always_inline __u64 ngx_stream_at(__u64 r, __u32 off, __u64 c, __s32 fd, __u64 *req)
{
	__u64 s = 0, m = 0, mc = 0, h2c = 0, hc = 0;
	if (bpf_probe_read_user(&s, sizeof(s), (void *)(r + off)) < 0 || !s || (s & 7) ||
	    bpf_probe_read_user(&m, sizeof(m), (void *)s) < 0 || !m ||
	    bpf_probe_read_user(&mc, sizeof(mc), (void *)(m + NGX_REQUEST_CONNECTION)) < 0 || mc != c ||
	    bpf_probe_read_user(&h2c, sizeof(h2c), (void *)(s + 8)) < 0 || !h2c ||
	    bpf_probe_read_user(&hc, sizeof(hc), (void *)h2c) < 0 || ngx_conn_fd(hc) != fd)
		return 0;
	*req = m;
	return s;
}

/* r's HTTP/2 stream (on connection c, socket fd) and its request (req),
 * the stream's offset found at the process's first HTTP/2 upstream call
 * and kept; 0 for none. */
static __always_inline __u64 ngx_stream_of(__u32 tgid, __u64 r, __u64 c, __s32 fd, __u64 *req)
{
	struct ngx_stream_offset *known = bpf_map_lookup_elem(&ngx_stream_offsets, &tgid);
	if (known && known->off)
		return ngx_stream_at(r, known->off, c, fd, req);
	if (known && known->misses >= NGX_STREAM_SCANS)
		return 0;
	struct ngx_stream_offset o = {.misses = known ? known->misses : 0};
	__u64 s = 0;
	for (__u32 i = 0; i < NGX_STREAM_SCAN_WORDS; i++) {
		s = ngx_stream_at(r, NGX_STREAM_SCAN_FROM + i * 8, c, fd, req);
		if (s) {
			o.off = NGX_STREAM_SCAN_FROM + i * 8;
			break;
		}
	}
	if (!s)
		o.misses++;
	bpf_map_update_elem(&ngx_stream_offsets, &tgid, &o, BPF_ANY);
	return s;
}

/* r->headers_in.headers, told from what precedes it by its own fields. */
static __always_inline bool ngx_headers_of(__u64 r, struct ngx_list *l)
{
	__u64 pool = 0;
	for (__u32 off = NGX_HEADERS_CACHE; off >= NGX_HEADERS_NO_CACHE; off -= 8) {
		/* r->pool is two fields before the list: the list's own pool */
		if (bpf_probe_read_user(l, sizeof(*l), (void *)(r + off)) == 0 &&
		    bpf_probe_read_user(&pool, sizeof(pool), (void *)(r + off - 16)) == 0 && l->pool == pool &&
		    l->nalloc == NGX_HEADERS_PER_PART && l->nelts <= l->nalloc && l->size >= sizeof(struct ngx_table_elt) &&
		    l->size <= 64)
			return true;
	}
	return false;
}

enum ngx_tp { NGX_TP_ABSENT, NGX_TP_FOUND, NGX_TP_UNKNOWN };

/* The traceparent among r's request headers, parsed into in. Unknown
 * when the headers cannot be read, or go on past the first part (where
 * it could be). */
static __always_inline enum ngx_tp ngx_traceparent(__u64 r, struct span_ctx *in)
{
	struct ngx_list l;
	if (!ngx_headers_of(r, &l))
		return NGX_TP_UNKNOWN;
	for (__u32 i = 0; i < NGX_HEADERS_PER_PART; i++) {
		if (i >= l.nelts)
			return l.next ? NGX_TP_UNKNOWN : NGX_TP_ABSENT;
		struct ngx_table_elt e;
		if (bpf_probe_read_user(&e, sizeof(e), (void *)(l.elts + i * l.size)) < 0)
			return NGX_TP_UNKNOWN;
		if (e.key_len != 11)
			continue;
		char name[12] = {};
		if (bpf_probe_read_user(name, 11, (void *)e.key) < 0)
			return NGX_TP_UNKNOWN;
		if (!tp_header_name(name)) /* HTTP/2 field names are lowercase */
			continue;
		__u8 v[TP_VALUE_LEN + 1];
		if (e.value_len != TP_VALUE_LEN || bpf_probe_read_user(v, TP_VALUE_LEN, (void *)e.value) < 0)
			return NGX_TP_ABSENT; /* not one weft can continue, as on HTTP/1 */
		return parse_tp_value(v, in) ? NGX_TP_FOUND : NGX_TP_ABSENT;
	}
	return l.next ? NGX_TP_UNKNOWN : NGX_TP_ABSENT;
}

enum ngx_h2 { NGX_H2_NOT, NGX_H2_DECIDED, NGX_H2_UNDECIDED };

/* Decides the server span of HTTP/2 request r of connection c (socket
 * sk), into span, and reports it; undecided when the kernel cannot decide
 * it (see the top of this file), not when sk is no HTTP/2 connection weft
 * follows. */
static __always_inline enum ngx_h2 ngx_h2_span(__u64 pid_tgid, __u64 r, __u64 c, struct sock *sk,
					       struct span_ctx *span)
{
	__u32 tgid = pid_tgid >> 32;
	bool tls = h2_lookup(TLS_SOCK_KEY(sk), WEFT_DIR_INGRESS) != 0;
	if (!tls && !h2_lookup((__u64)sk, WEFT_DIR_INGRESS))
		return NGX_H2_NOT;
	__u64 req = 0, node = 0, id = 0;
	__u64 stream = ngx_stream_of(tgid, r, c, ngx_conn_fd(c), &req);
	/* A subrequest's call works for its main request, which the kernel
	 * has no span of yet: it is left to the thread rule. */
	if (!stream || req != r || bpf_probe_read_user(&node, sizeof(node), (void *)(stream + 16)) < 0 || !node ||
	    bpf_probe_read_user(&id, sizeof(id), (void *)node) < 0 || !(id & 1) || id > 0x7fffffff)
		return NGX_H2_UNDECIDED;
	struct span_ctx in = {};
	__u8 kind = WEFT_CTX_SERVER;
	switch (ngx_traceparent(r, &in)) {
	case NGX_TP_FOUND:
		__builtin_memcpy(span->trace_id, in.trace_id, sizeof(span->trace_id));
		span->trace_flags = continued_flags(&in);
		random_ids(0, span->span_id);
		break;
	case NGX_TP_ABSENT: {
		struct h2_stream_key k = {.stream = id};
		struct traced_client *tc = traced_client_of_server(&k.conn.pk, sk);
		if (tc) {
			/* Its client, on this host, decided the stream's span
			 * (h2seed.h, h2link.h), or the call cannot have a parent. */
			k.conn.gen = tc->gen;
			if (!h2_take_client_span(&k, &in, span))
				return NGX_H2_UNDECIDED;
			kind = WEFT_CTX_H2_STREAM;
			break;
		}
		__builtin_memset(&in, 0, sizeof(in));
		random_ids(span->trace_id, span->span_id);
		span->trace_flags = root_flags(span->trace_id);
		break;
	}
	default:
		return NGX_H2_UNDECIDED;
	}
	struct event_header *h = h2_event(WEFT_EV_H2_SERVE, tgid, 0, id);
	if (!h)
		return NGX_H2_DECIDED; /* counted: the span is the calls' parent all the same */
	h->sock_id = (__u64)sk;
	h->tls = tls;
	h->ctx_kind = kind;
	h->trace_flags = span->trace_flags;
	__builtin_memcpy(h->trace_id, span->trace_id, sizeof(h->trace_id));
	__builtin_memcpy(h->span_id, span->span_id, sizeof(h->span_id));
	__builtin_memcpy(h->parent_id, in.span_id, sizeof(h->parent_id));
	h2_event_submit(h);
	return NGX_H2_DECIDED;
}

SEC("uprobe/ngx_http_upstream_init")
int weft_ngx_upstream_init(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	__u64 r = ctx->di, c = 0;
	if (bpf_probe_read_user(&c, sizeof(c), (void *)(r + NGX_REQUEST_CONNECTION)) < 0)
		return 0;
	struct sock *sk = fd_sock(ngx_conn_fd(c));
	if (!sk)
		return 0;
	__u64 down = (__u64)sk;
	struct span_ctx span = {};
	struct serving *sv = bpf_map_lookup_elem(&serving_sock, &down);
	if (sv && sv->pending) {
		__builtin_memcpy(span.trace_id, sv->trace_id, 16);
		__builtin_memcpy(span.span_id, sv->span_id, 8);
		span.trace_flags = sv->trace_flags;
	} else if (ngx_h2_span(pid_tgid, r, c, sk, &span) == NGX_H2_NOT) {
		return 0; /* no live request read on it: not a downstream we know */
	} /* else the span decided, or all-zero ids: decided, no parent */
	bpf_map_update_elem(&ngx_upstream_for, &pid_tgid, &span, BPF_ANY);
	return 0;
}

SEC("uretprobe/ngx_http_upstream_init")
int weft_ngx_upstream_init_ret(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&ngx_upstream_for, &pid_tgid);
	bpf_map_delete_elem(&ngx_connecting, &pid_tgid);
	return 0;
}

SEC("uprobe/ngx_event_connect_peer")
int weft_ngx_connect_peer(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&ngx_upstream_for, &pid_tgid))
		return 0;
	__u64 pc = ctx->di;
	bpf_map_update_elem(&ngx_connecting, &pid_tgid, &pc, BPF_ANY);
	return 0;
}

SEC("uretprobe/ngx_event_connect_peer")
int weft_ngx_connect_peer_ret(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 *pc = bpf_map_lookup_elem(&ngx_connecting, &pid_tgid);
	if (!pc)
		return 0;
	__u64 peer = *pc;
	bpf_map_delete_elem(&ngx_connecting, &pid_tgid);
	int rc = (int)ctx->ax;
	if (rc != NGX_OK && rc != NGX_AGAIN && rc != NGX_DONE)
		return 0;
	struct span_ctx *down = bpf_map_lookup_elem(&ngx_upstream_for, &pid_tgid);
	if (!down)
		return 0;
	struct span_ctx parent = *down;
	__u64 c = 0;
	if (bpf_probe_read_user(&c, sizeof(c), (void *)(peer + NGX_PEER_CONNECTION)) < 0)
		return 0;
	struct sock *up = fd_sock(ngx_conn_fd(c));
	if (!up)
		return 0;
	struct conn_key k = {};
	conn_key_of_sock(up, &k);
	bpf_map_update_elem(&conn_parent, &k, &parent, BPF_ANY);
	return 0;
}

#endif
