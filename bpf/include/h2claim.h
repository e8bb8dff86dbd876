/* The parents of HTTP/2 client streams. HTTP/2 multiplexes requests on
 * one connection, so the trace context of the thread or goroutine that
 * writes says nothing about a stream unless the stream's own request
 * wrote it. Go's HTTP/2 client does: each request's goroutine writes its
 * HEADERS in writeHeaders and flushes them at once. A uprobe there
 * (weft_go_h2_headers) leaves the stream's id and parent under the
 * goroutine; that goroutine's next write on an HTTP/2 connection carries
 * them to user space, which gives them to the stream only if that write
 * opened it.
 *
 * grpc-go writes every stream's HEADERS on the connection's loopy-writer
 * goroutine, several in one write. Its caller hands each stream's header
 * item to the loopy through controlBuffer.executeAndPut: a uprobe on that
 * call in NewStream (weft_go_grpc_put) leaves the caller's request under
 * the item's address, and one where the loopy takes the item
 * (weft_go_grpc_headers: clientHeaderHandler, or originateStream before
 * grpc-go 1.85) sends user space a claim
 * event naming the loopy goroutine, the stream (the item's first field)
 * and the request. The loopy's writes on HTTP/2 connections carry its
 * goroutine id, by which user space gives each stream the write opens its
 * claim. weft_go_h2_headers and weft_go_grpc_headers also decide the
 * stream's span when its server end decodes on this host (h2link.h).
 * OkHttp, with weft's Java agent, claims its streams the same way, naming
 * the thread that flushes them (jvmtls.h); outside Go a write carries its
 * thread's id. Included by common.h before emit_data. */
#ifndef WEFT_H2CLAIM_H
#define WEFT_H2CLAIM_H

struct h2_claim {
	struct span_ctx parent;
	__u64 conn;    /* net/http's *ClientConn (h2link.h) */
	__u8 span[8];  /* the stream's span, when decided here (h2link.h) */
	__u32 stream;
	__u32 _pad;
};

/* (tgid, goroutine id) -> the stream it is writing the HEADERS of. A
 * goroutine id is never reused, so a claim whose write never came (a
 * broken connection) can match nothing else; the goroutine's next
 * writeHeaders replaces it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct go_key);
	__type(value, struct h2_claim);
} h2_claims SEC(".maps");

struct grpc_item_key {
	__u32 tgid;
	__u32 _pad;
	__u64 item; /* the address of grpc-go's header item (*clientHeaders) */
};

/* grpc-go header items put by a request's goroutine, not yet taken by
 * the loopy writer -> that request. An item whose stream never opened
 * leaves an entry that the next item at its address replaces (the put
 * comes first) or the LRU drops. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct grpc_item_key);
	__type(value, struct span_ctx);
} grpc_items SEC(".maps");

struct h2_thread_claim_key {
	__u32 tgid;
	__u32 tid;
	__u32 stream;
	__u32 _pad;
};

/* How long a thread's claim waits for its write: it is made just before
 * (OkHttp's flush, the companions' next turn of the loop); an older one
 * is of a write that never came. */
#define H2_CLAIM_FRESH_NS 1000000000ULL

/* Claims of threads outside Go (the companions': the JVM's streams go
 * over its own TLS, which h2seed.h does not see), for the kernel's own
 * decision of the streams' spans where their writes begin (h2seed.h): (tgid, thread, stream) -> the request, with
 * `ambiguous` set when a second claim for the key came while the first
 * was fresh (two connections' streams of one id), and start_ns when it
 * was made. User space has the claims as events too. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct h2_thread_claim_key);
	__type(value, struct span_ctx);
} h2_thread_claims SEC(".maps");

/* Thread pid_tgid claims stream `stream` for request p (all zero: none). */
static __always_inline void h2_claim_thread(__u64 pid_tgid, __u32 stream, const struct span_ctx *p)
{
	struct h2_thread_claim_key k = {.tgid = pid_tgid >> 32, .tid = (__u32)pid_tgid, .stream = stream};
	__u64 now = bpf_ktime_get_ns();
	struct span_ctx *old = bpf_map_lookup_elem(&h2_thread_claims, &k);
	if (old && now - old->start_ns < H2_CLAIM_FRESH_NS) {
		old->ambiguous = 1;
		return;
	}
	struct span_ctx c = *p;
	c.ambiguous = 0;
	c.start_ns = now;
	bpf_map_update_elem(&h2_thread_claims, &k, &c, BPF_ANY);
}

/* An event of process tgid about HTTP/2 stream `stream` of goroutine (or
 * thread) goid, reserved with its common fields; the caller fills the
 * rest and submits it (h2_event_submit). NULL when the ring is full. */
static __always_inline struct event_header *h2_event(__u8 kind, __u32 tgid, __u64 goid, __u32 stream)
{
	struct event_header *h = bpf_ringbuf_reserve(&events, sizeof(*h), 0);
	if (!h) {
		count_drop(WEFT_STAT_LOST_RINGBUF);
		return NULL;
	}
	__builtin_memset(h, 0, sizeof(*h));
	h->ts_ns = bpf_ktime_get_ns();
	h->pid = tgid;
	h->tid = (__u32)bpf_get_current_pid_tgid();
	h->key = h->tid;
	h->kind = kind;
	h->h2_stream = stream;
	h->goid = goid;
	return h;
}

static __always_inline void h2_event_submit(struct event_header *h)
{
	bpf_ringbuf_submit(h, wakeup_flags());
	count(WEFT_STAT_EVENTS);
}

/* Tells user space that the HTTP/2 stream `stream` the goroutine (or, outside
 * Go, the thread) `writer` of process tgid is about to write the HEADERS
 * of is a call of request p, with span id span when the kernel decided it
 * (h2link.h; else NULL): a claim event, ahead of the write. */
static __always_inline void emit_h2_claim(__u32 tgid, __u64 writer, __u32 stream, const struct span_ctx *p,
					  const __u8 *span)
{
	struct event_header *h = h2_event(WEFT_EV_H2_CLAIM, tgid, writer, stream);
	if (!h)
		return;
	h->ctx_kind = WEFT_CTX_H2_STREAM;
	h->trace_flags = p->trace_flags;
	__builtin_memcpy(h->trace_id, p->trace_id, sizeof(h->trace_id));
	__builtin_memcpy(h->parent_id, p->span_id, sizeof(h->parent_id));
	if (span)
		__builtin_memcpy(h->span_id, span, sizeof(h->span_id));
	h2_event_submit(h);
}

/* A call on an HTTP/2 connection: its goroutine's id in a Go process,
 * its thread's elsewhere (whose claims are events too, jvmtls.h), go into
 * the event; for a write, the claim of its goroutine too, if any
 * (WEFT_CTX_H2_STREAM). A read's goroutine, and the goroutine that
 * created it (in more_span_ids[0]), name the connection a Go server's
 * stream claims are for (h2serve.h); a server's read of the client
 * preface decides whether the connection's streams start traces in the
 * kernel (h2peer.h). The map
 * key is built in the event's pipelined-ids field, unused on HTTP/2, not
 * on the stack: the programs that inline emit_data have little left. */
static __noinline void h2_stream_parent(struct event_header *h)
{
	if (!h)
		return;
	struct proc_info *pi = proc_of(h->pid);
	bool preface = h->h2_stream == H2_PREFACE_CALL;
	h->h2_stream = 0;
	if (!pi)
		return;
	if (pi->mode != WEFT_MODE_GO) {
		h->goid = h->tid;
		return;
	}
	struct go_key *k = (struct go_key *)h->more_span_ids;
	k->tgid = h->pid;
	k->_pad = 0;
	if (bpf_probe_read_user(&k->id, sizeof(k->id), (void *)(user_g() + pi->goid_off)) == 0) {
		h->goid = k->id;
		struct h2_claim *c = h->dir == WEFT_DIR_EGRESS ? bpf_map_lookup_elem(&h2_claims, k) : NULL;
		if (c) {
			h->ctx_kind = WEFT_CTX_H2_STREAM;
			h->h2_stream = c->stream;
			h->trace_flags = c->parent.trace_flags;
			__builtin_memcpy(h->trace_id, c->parent.trace_id, sizeof(h->trace_id));
			__builtin_memcpy(h->parent_id, c->parent.span_id, sizeof(h->parent_id));
			__builtin_memcpy(h->span_id, c->span, sizeof(h->span_id));
			__u64 conn = c->conn;
			bpf_map_delete_elem(&h2_claims, k);
			k->id = conn;
		} else {
			k->id |= H2_CLIENT_LOOPY; /* grpc-go's, if it is one */
		}
		/* A client connection object's socket (h2link.h). */
		if (h->dir == WEFT_DIR_EGRESS)
			h2_client_learn(k, h->sock_id);
	}
	__builtin_memset(h->more_span_ids, 0, sizeof(h->more_span_ids));
	/* A read names its goroutine's creator too (h2serve.h): net/http's
	 * server reads on goroutines of the one that decodes. */
	if (h->dir == WEFT_DIR_INGRESS && h->goid && pi->parent_goid_off)
		bpf_probe_read_user(h->more_span_ids[0], sizeof(h->more_span_ids[0]),
				    (void *)(user_g() + pi->parent_goid_off));
	/* A server's read of the client preface (h2peer.h). */
	if (preface && h->dir == WEFT_DIR_INGRESS && h->goid)
		h2_fresh_at_preface(h, h->goid, *(__u64 *)h->more_span_ids[0]);
}

#endif
