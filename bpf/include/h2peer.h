/* Whether a Go HTTP/2 server connection's client is followed by weft on
 * this host, known in the kernel before the connection's first stream.
 *
 * A stream without traceparent gets its span from the kernel, a new
 * trace, only when no client span can be its parent (h2serve.h): when its
 * client is not a traced process of this host. User space learns that
 * from the connection's reads, up to a ring-buffer drain after its first
 * streams were decoded. The kernel knows it at the connection's first
 * read: a traced process's connect() notes its socket (SYN_SENT, in the
 * caller's context), and the socket's address 4-tuple is noted once it is
 * established (before the handshake's last ACK, so before the server can
 * read a byte). The server's read of the client preface looks its
 * reversed 4-tuple up, as user space's link does (h2link): when it is not
 * there, the reading goroutine is marked in go_h2_fresh, and the
 * goroutine that created it while that one created the preface reader of
 * no other connection: grpc-go's decoding reader is created by the
 * goroutine that read the preface; net/http's serve goroutine, which
 * decodes, reads the preface itself over h2c and creates the goroutine
 * that reads it over TLS.
 * A 4-tuple the table lost (LRU) or never saw (NAT) marks the connection
 * fresh: its streams then start traces of their own, split from a client
 * span there may be, never under another's. Included by common.h. */
#ifndef WEFT_H2PEER_H
#define WEFT_H2PEER_H

/* Addresses as the event header has them (IPv4 in the first 4 bytes, the
 * rest zero; an IPv4-mapped IPv6 address as IPv4), the client's first. */
struct peer_key {
	__u8 caddr[16];
	__u8 saddr[16];
	__u16 cport;
	__u16 sport;
	__u32 _pad;
};

/* Sockets of traced processes that are connecting -> 1, until established. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u8);
} traced_connecting SEC(".maps");

/* A traced process's established client connection. */
struct traced_client {
	__u64 gen;    /* when it was established: names it among those of its 4-tuple */
	__u8 linked;  /* a Go server of this host read its client preface (h2link.h) */
	__u8 served;  /* a traced process of this host is its server end (h2seed.h) */
	__u8 _pad[6];
};

/* The 4-tuples of traced processes' established client connections,
 * deleted at their close. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct peer_key);
	__type(value, struct traced_client);
} traced_clients SEC(".maps");

/* (tgid, goroutine) -> 1: the goroutine reads, or created the reader of,
 * a server connection whose client weft does not follow on this host,
 * so that no client span can be its streams' parent; set here at the
 * client preface, and by user space once it has seen the connection's
 * reads; removed by user space when the client's end shows up. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct go_key);
	__type(value, __u8);
} go_h2_fresh SEC(".maps");

/* A connection between two ends of this host (h2link.h). */
struct h2_conn_key {
	struct peer_key pk;
	__u64 gen; /* traced_client.gen */
};

/* (tgid, goroutine) -> the connection of a traced client of this host
 * whose preface the goroutine, or one it created, read; set and removed
 * as go_h2_fresh is here. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct go_key);
	__type(value, struct h2_conn_key);
} go_h2_peers SEC(".maps");

#define H2_CREATOR_OF_MANY ((__u64)-1)

/* (tgid, goroutine) -> the socket of the one connection whose preface a
 * goroutine it created read, or H2_CREATOR_OF_MANY. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct go_key);
	__type(value, __u64);
} h2_preface_creators SEC(".maps");

/* Returns the family of the address written. */
static __always_inline __u16 peer_addr(__u8 *out, const __u8 *in, __u16 family)
{
	__builtin_memset(out, 0, 16);
	if (family != AF_INET6) {
		__builtin_memcpy(out, in, 4);
		return AF_INET;
	}
	const __u32 *w = (const __u32 *)in;
	if (w[0] == 0 && w[1] == 0 && w[2] == bpf_htonl(0xffff)) {
		__builtin_memcpy(out, in + 12, 4);
		return AF_INET;
	}
	__builtin_memcpy(out, in, 16);
	return AF_INET6;
}

/* The 4-tuple of socket sk, from its side, read as fill_addrs reads a
 * socket's for the events (the tracepoint's own fields would have to be
 * copied at fixed offsets of its ctx, which clang does not keep); returns
 * the family of the addresses in k. */
static __always_inline __u16 peer_key_of_sock(struct peer_key *k, struct sock *sk)
{
	struct sock_common *c = &sk->__sk_common;
	__u8 local[16] = {}, remote[16] = {};
	__u16 family = BPF_CORE_READ(c, skc_family);
	if (family == AF_INET6) {
		BPF_CORE_READ_INTO(&local, c, skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&remote, c, skc_v6_daddr.in6_u.u6_addr8);
	} else {
		BPF_CORE_READ_INTO((__u32 *)local, c, skc_rcv_saddr);
		BPF_CORE_READ_INTO((__u32 *)remote, c, skc_daddr);
	}
	__u16 out = peer_addr(k->caddr, local, family);
	peer_addr(k->saddr, remote, family);
	k->cport = BPF_CORE_READ(c, skc_num);
	k->sport = bpf_ntohs(BPF_CORE_READ(c, skc_dport));
	k->_pad = 0;
	return out;
}

/* The entry proc_mode gives a process not classified yet at its first
 * connect(): user space keeps the mark when it classifies the process. */
static const struct proc_info calls_out_noted = {.mode = WEFT_MODE_UNKNOWN, .calls_out = 1};

/* A traced process connects: the first time, its mark is set, and a Go
 * process followed by goroutine is reported, for user space to follow
 * its goroutines' creation from now on. Until a process calls out, no
 * goroutine of it makes a call whose parent matters, and the uprobe in
 * runtime.newproc1, a trap per goroutine created (one per request in
 * net/http's server), is not worth its cost. */
static __always_inline void note_calls_out(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;
	struct proc_info *pi = proc_of(tgid);
	if (!pi) {
		if (bpf_map_update_elem(&proc_mode, &tgid, &calls_out_noted, BPF_NOEXIST) == 0)
			return;
		pi = proc_of(tgid); /* classified meanwhile */
		if (!pi)
			return;
	}
	if (pi->calls_out)
		return;
	/* An atomic add (a locked instruction, a full barrier) between the
	 * mark and the mode's load, as weft_set_mode has one between the
	 * mode's store and the mark's load: one of the two sees the other's
	 * write, so a process classified as it connects is either reported
	 * or told to user space as marked. Two threads connecting at once
	 * may both report it. */
	__sync_fetch_and_add(&pi->calls_out, 1);
	if (pi->mode == WEFT_MODE_GO)
		emit_small(WEFT_EV_CALLS_OUT, 0, tgid, (__u32)pid_tgid, 0, 0, BPF_RB_FORCE_WAKEUP);
}

/* At a TCP state change to `to` (weft_sock_state): a traced process's
 * connect() notes its socket; the socket, once established, its 4-tuple. */
static __always_inline void note_traced_client(struct trace_event_raw_inet_sock_set_state *ctx, int to)
{
	__u64 sk = (__u64)ctx->skaddr;
	if (to == TCP_SYN_SENT) {
		__u64 pid_tgid = bpf_get_current_pid_tgid();
		if (pid_traced(pid_tgid >> 32)) {
			__u8 one = 1;
			bpf_map_update_elem(&traced_connecting, &sk, &one, BPF_ANY);
			note_calls_out(pid_tgid);
		}
		return;
	}
	if (!bpf_map_lookup_elem(&traced_connecting, &sk))
		return;
	bpf_map_delete_elem(&traced_connecting, &sk);
	struct peer_key k;
	peer_key_of_sock(&k, (struct sock *)sk);
	struct traced_client tc = {.gen = bpf_ktime_get_ns()};
	bpf_map_update_elem(&traced_clients, &k, &tc, BPF_ANY);
}

/* The traced client of this host whose connection server socket sk
 * accepted, if any; its key (as the client sees it) goes to k. */
static __always_inline struct traced_client *traced_client_of_server(struct peer_key *k, struct sock *sk)
{
	struct peer_key mine;
	peer_key_of_sock(&mine, sk);
	__builtin_memcpy(k->caddr, mine.saddr, sizeof(k->caddr));
	__builtin_memcpy(k->saddr, mine.caddr, sizeof(k->saddr));
	k->cport = mine.sport;
	k->sport = mine.cport;
	k->_pad = 0;
	return bpf_map_lookup_elem(&traced_clients, k);
}

/* A traced process's first event on socket sk: when sk is the server end
 * of a traced client's connection, the client's entry says so. The
 * server reads before it answers, so over TLS this is known before the
 * handshake ends, before the client's first request (h2seed.h). A global
 * function: checked once, not in each program that inlines emit_body. */
__noinline int note_traced_server(__u64 sk)
{
	struct peer_key k;
	struct traced_client *tc = traced_client_of_server(&k, (struct sock *)sk);
	if (tc && !tc->served)
		tc->served = 1;
	return 0;
}

/* At the close of a tracked socket: its 4-tuple, if a traced client's, goes. */
static __always_inline void forget_traced_client(struct trace_event_raw_inet_sock_set_state *ctx)
{
	struct peer_key k;
	peer_key_of_sock(&k, (struct sock *)ctx->skaddr);
	delete_present(&traced_clients, &k);
}

/* What the goroutine g decodes: a connection whose client is not traced
 * here (fresh), or the connection conn of a traced client (h2link.h). */
static __always_inline void h2_mark_decoder(struct go_key *g, bool fresh, struct h2_conn_key *conn)
{
	__u8 one = 1;
	if (fresh)
		bpf_map_update_elem(&go_h2_fresh, g, &one, BPF_ANY);
	else
		bpf_map_update_elem(&go_h2_peers, g, conn, BPF_ANY);
}

static __always_inline void h2_unmark_decoder(struct go_key *g)
{
	delete_present(&go_h2_fresh, g);
	delete_present(&go_h2_peers, g);
}

/* A Go server's goroutine goid, created by creator, read the client
 * preface of the connection of event h: when its client is not a traced
 * process of this host, the streams it and (unless it created other
 * preface readers) its creator decode start traces in the kernel; when
 * it is, they take the spans its client decides (h2link.h). */
static __noinline void h2_fresh_at_preface(const struct event_header *h, __u64 goid, __u64 creator)
{
	if (!h)
		return;
	struct h2_conn_key conn = {.pk = {.cport = h->dport, .sport = h->sport}};
	peer_addr(conn.pk.caddr, h->daddr, h->family);
	peer_addr(conn.pk.saddr, h->saddr, h->family);
	struct traced_client *tc = bpf_map_lookup_elem(&traced_clients, &conn.pk);
	bool fresh = !tc;
	if (tc) {
		tc->linked = 1;
		conn.gen = tc->gen;
	}
	struct go_key g = {.tgid = h->pid, .id = goid};
	h2_mark_decoder(&g, fresh, &conn);
	if (!creator)
		return;
	g.id = creator;
	__u64 sock = h->sock_id;
	__u64 *seen = bpf_map_lookup_elem(&h2_preface_creators, &g);
	if (!seen) {
		bpf_map_update_elem(&h2_preface_creators, &g, &sock, BPF_NOEXIST);
		seen = bpf_map_lookup_elem(&h2_preface_creators, &g);
		if (!seen)
			return;
	}
	if (*seen != sock) {
		/* It starts the readers of many connections (an accept loop):
		 * its mark would hold for them all. */
		*seen = H2_CREATOR_OF_MANY;
		h2_unmark_decoder(&g);
		return;
	}
	h2_mark_decoder(&g, fresh, &conn);
	/* Another connection's preface, on another CPU, may have come in between. */
	if (*(volatile __u64 *)seen != sock)
		h2_unmark_decoder(&g);
}

#endif
