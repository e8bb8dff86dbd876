/* TLS between two traced processes of this host. sk_msg cannot write a
 * traceparent into encrypted bytes, so the callee would start its own
 * trace; but weft sees both ends of the connection. The client decides
 * its span when the TLS write begins, before any byte leaves (openssl.h),
 * and leaves it under the connection's 4-tuple; the server's read of the
 * request start, on the same connection seen from the other end, takes
 * it as the traceparent the bytes could not carry.
 *
 * Never a wrong parent: an entry serves one request. A client that sends
 * the next request before the server read the last (pipelining, or a
 * server weft does not trace) leaves an ambiguous entry, which links
 * nothing. Included by tracectx.h; the data path (emit_data) takes the
 * links, outside trace_context, whose stack is deep enough. */
#ifndef WEFT_TLSLINK_H
#define WEFT_TLSLINK_H

struct tls_link {
	struct client_span cs; /* the client span of the connection's next request */
	__u64 sock;     /* the client's socket and the thread whose write decided it: */
	__u64 writer;   /* a retry of that write keeps it, anything else does not */
	__u8 reported;  /* the client's data event took the ids */
	__u8 consumed;  /* the server's read of the request took them */
	__u8 ambiguous; /* sent while the last one was unread: links nothing */
	__u8 _pad[5];
};

/* The client's end of a connection (conn_key, local = the client) ->
 * the span of its next request. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct conn_key);
	__type(value, struct tls_link);
} tls_links SEC(".maps");

/* An IPv4 connection seen by a dual-stack socket (::ffff:a.b.c.d) is
 * keyed as IPv4, as its other end keys it. */
static __always_inline void conn_key_v4mapped(struct conn_key *k)
{
	if (k->family != 10 /* AF_INET6 */)
		return;
	__u32 mapped = bpf_htonl(0xffff);
	if (k->local_ip[0] || k->local_ip[1] || k->local_ip[2] != mapped || k->remote_ip[0] || k->remote_ip[1] ||
	    k->remote_ip[2] != mapped)
		return;
	k->family = 2 /* AF_INET */;
	k->local_ip[0] = k->local_ip[3];
	k->remote_ip[0] = k->remote_ip[3];
	k->local_ip[1] = k->local_ip[2] = k->local_ip[3] = 0;
	k->remote_ip[1] = k->remote_ip[2] = k->remote_ip[3] = 0;
}

/* The client's data event of a request it began over TLS: the span the
 * write decided at its start, if it did, written into h; 1 when so. A
 * global function, as tls_link_server. */
__noinline int tls_link_client(struct event_header *h)
{
	if (!h)
		return 0;
	struct conn_key k = {};
	conn_key_of_event(h, &k);
	conn_key_v4mapped(&k);
	struct tls_link *l = bpf_map_lookup_elem(&tls_links, &k);
	if (!l || l->reported)
		return 0;
	__builtin_memcpy(h->trace_id, l->cs.ctx.trace_id, 16);
	__builtin_memcpy(h->span_id, l->cs.ctx.span_id, 8);
	__builtin_memcpy(h->parent_id, l->cs.parent_id, 8);
	h->trace_flags = l->cs.ctx.trace_flags;
	if (l->consumed || l->ambiguous)
		bpf_map_delete_elem(&tls_links, &k);
	else
		l->reported = 1;
	return 1;
}

/* The server's read of a request start over TLS that carried no
 * traceparent: the client span of a traced process at the other end of
 * the connection, as if the header had come; 1 when there is one. A
 * global function: verified once, not once per path of its caller. */
__noinline int tls_link_server(const struct event_header *h, struct span_ctx *in)
{
	if (!h || !in)
		return 0;
	struct conn_key k = {
		.family = h->family,
		.local_port = h->dport,
		.remote_port = h->sport,
	};
	__builtin_memcpy(k.local_ip, h->daddr, 16);
	__builtin_memcpy(k.remote_ip, h->saddr, 16);
	if (h->family != 10 /* AF_INET6 */) {
		k.local_ip[1] = k.local_ip[2] = k.local_ip[3] = 0;
		k.remote_ip[1] = k.remote_ip[2] = k.remote_ip[3] = 0;
	}
	conn_key_v4mapped(&k);
	struct tls_link *l = bpf_map_lookup_elem(&tls_links, &k);
	if (!l || l->consumed)
		return 0;
	if (l->ambiguous) {
		count(WEFT_STAT_TLS_LINK_AMBIGUOUS);
		if (l->reported)
			bpf_map_delete_elem(&tls_links, &k);
		else
			l->consumed = 1;
		return 0;
	}
	__builtin_memcpy(in->trace_id, l->cs.ctx.trace_id, 16);
	__builtin_memcpy(in->span_id, l->cs.ctx.span_id, 8);
	in->trace_flags = l->cs.ctx.trace_flags;
	if (l->reported)
		bpf_map_delete_elem(&tls_links, &k);
	else
		l->consumed = 1;
	return 1;
}

#endif
