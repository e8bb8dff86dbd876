/* The handlers of Go's HTTP/2 server streams. When a stream's HEADERS
 * carry a traceparent, a uprobe where the server decodes them decides the
 * stream's server span (the incoming trace, a new span id), and the
 * stream's handler goroutine then serves it as a root (go_serve), so that
 * its outgoing calls, and its goroutines', go under it. A claim event
 * (WEFT_EV_H2_SERVE) gives user space the span's ids for that stream of
 * the connection that the decoding goroutine reads, or a goroutine it
 * created, or its creator (h2_stream_parent names every read's goroutine
 * and that goroutine's creator). A probe on the handler's goroutine once
 * its handler returned ends the span's root. A stream without
 * traceparent gets the span its client decided for it when that client
 * is a Go program weft follows on this host (h2link.h); a new trace when
 * its decoding goroutine, or the one that created it, is marked as
 * decoding a connection whose client weft does not follow on this host
 * (go_h2_fresh, h2peer.h); else it leaves nothing: user space decides
 * its span (h2link.go: under its client's span when weft follows both
 * ends here), and its handler serves no request. Only the decoded header list is read:
 * HeaderField of x/net/http2/hpack and the stream id of the frame
 * header, unchanged since 2016.
 *
 * grpc-go reads a connection's frames on one goroutine, which decodes
 * each stream's HEADERS (operateHeaders) and starts the stream's handler
 * goroutine from there: the span is left for the next goroutine that
 * reader creates. grpc-go's connection goroutine reads the first frames,
 * and the frames it buffered then (the first streams' HEADERS) are
 * decoded by the reader it starts: hence the reader's creator.
 *
 * net/http's HTTP/2 server (and x/net/http2's) decodes them on the
 * connection's serve goroutine (newWriterAndRequest), which reads nothing
 * itself (goroutines it starts read) and starts each handler (runHandler)
 * at once or, past the streams it lets run at a time, later: the span is
 * left under the stream's *stream, which runHandler's response writer
 * names. Included by gohooks.h. */
#ifndef WEFT_H2SERVE_H
#define WEFT_H2SERVE_H

#define GO_H2_AT_CHECK 1 /* cookie: probed at the stack check's JBE */
#define GRPC_FIELDS_MAX 32 /* header fields searched for traceparent */

/* (tgid, reader goroutine) -> the span its next goroutine serves. The
 * reader's next operateHeaders replaces or removes it, so a handler
 * started without a goroutine (grpc-go's optional workers) leaves it to
 * no other stream's. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct go_key);
	__type(value, struct span_ctx);
} go_h2_handoff SEC(".maps");

/* A net/http stream's span, until its handler starts: with the stream's
 * connection and id, which runHandler checks against the stream it is
 * given (a *stream address freed and reused names another stream). */
struct go_h2_pending {
	struct span_ctx span;
	__u64 sc;     /* *serverConn */
	__u32 stream; /* its id */
	__u32 _pad;
};

/* (tgid, *stream) -> its span. Every stream a client opens passes
 * newWriterAndRequest, which writes or removes its entry; runHandler
 * takes it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct go_key);
	__type(value, struct go_h2_pending);
} go_h2_pending SEC(".maps");

/* x/net/http2's MetaHeadersFrame: *HeadersFrame, then Fields. */
struct go_meta_headers {
	__u64 headers_frame;
	__u64 fields;
	__u64 nfields;
};

/* hpack.HeaderField: Name, Value string; Sensitive bool. */
struct go_header_field {
	__u64 name;
	__u64 name_len;
	__u64 value;
	__u64 value_len;
	__u64 sensitive;
};

#define FRAME_HEADER_STREAM_ID 8 /* http2.FrameHeader.StreamID */

/* A stream's first fields, copied in one read (a read per field cost
 * more than the search). */
struct grpc_fields {
	struct go_header_field f[GRPC_FIELDS_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct grpc_fields);
} grpc_fields_buf SEC(".maps");

static __always_inline bool tp_header_name(const char *p)
{
	const char name[] = "traceparent";
	for (int k = 0; k < 11; k++)
		if (p[k] != name[k])
			return false;
	return true;
}

/* The stream's traceparent among its first GRPC_FIELDS_MAX decoded
 * fields (HPACK names are lowercase), parsed into in. */
static __always_inline bool grpc_traceparent(__u64 fields, __u64 n, struct span_ctx *in)
{
	__u32 zero = 0;
	struct grpc_fields *b = bpf_map_lookup_elem(&grpc_fields_buf, &zero);
	if (!b || n == 0)
		return false;
	if (n > GRPC_FIELDS_MAX)
		n = GRPC_FIELDS_MAX;
	if (bpf_probe_read_user(b, n * sizeof(b->f[0]), (void *)fields) < 0)
		return false;
	for (int i = 0; i < GRPC_FIELDS_MAX; i++) {
		if (i >= n)
			return false;
		struct go_header_field *f = &b->f[i];
		if (f->name_len != 11)
			continue;
		char name[12] = {};
		if (bpf_probe_read_user(name, 11, (void *)f->name) < 0)
			return false;
		if (!tp_header_name(name))
			continue;
		__u8 v[TP_VALUE_LEN + 1];
		if (f->value_len != TP_VALUE_LEN || bpf_probe_read_user(v, TP_VALUE_LEN, (void *)f->value) < 0)
			return false;
		return parse_tp_value(v, in);
	}
	return false;
}

/* Whether goroutine id of process tgid, or its creator, decodes a
 * connection marked fresh (go_h2_fresh). */
static __always_inline bool go_h2_fresh_for(__u32 tgid, const struct go_id *id)
{
	struct go_key k = {.tgid = tgid, .id = id->goid};
	if (bpf_map_lookup_elem(&go_h2_fresh, &k))
		return true;
	k.id = id->parent;
	return k.id && bpf_map_lookup_elem(&go_h2_fresh, &k);
}

/* The id of the stream whose HEADERS frame (a *MetaHeadersFrame)
 * goroutine id of process tgid decodes, its parent (in: the incoming
 * traceparent's, or the client span of this host's, h2link.h; zero when
 * it starts a trace), and the server span decided for it. The kind of
 * the claim event: WEFT_CTX_SERVER, or WEFT_CTX_H2_STREAM for a span
 * under its client's span; 0 when the frame cannot be read, or when it
 * has no traceparent, its client left no span, and its connection is not
 * marked fresh. */
static __always_inline __u8 h2_served_span(__u64 frame, __u32 tgid, const struct go_id *id, __u32 *stream,
					   struct span_ctx *in, struct span_ctx *span)
{
	struct go_meta_headers m;
	__u8 kind = WEFT_CTX_SERVER;
	*stream = 0;
	if (bpf_probe_read_user(&m, sizeof(m), (void *)frame) < 0 || !m.headers_frame ||
	    bpf_probe_read_user(stream, sizeof(*stream), (void *)(m.headers_frame + FRAME_HEADER_STREAM_ID)) < 0)
		return 0;
	*stream &= 0x7fffffff;
	if (!*stream)
		return 0;
	if (grpc_traceparent(m.fields, m.nfields, in)) {
		__builtin_memcpy(span->trace_id, in->trace_id, sizeof(span->trace_id));
		span->trace_flags = continued_flags(in);
		random_ids(0, span->span_id);
	} else if (h2_client_span_of(tgid, id, *stream, in, span)) {
		/* Its client, on this host, decided its span (h2link.h): a
		 * fresh mark user space left meanwhile is stale. */
		kind = WEFT_CTX_H2_STREAM;
	} else if (go_h2_fresh_for(tgid, id)) {
		__builtin_memset(in, 0, sizeof(*in));
		random_ids(span->trace_id, span->span_id);
		span->trace_flags = root_flags(span->trace_id);
	} else {
		return 0;
	}
	span->start_ns = bpf_ktime_get_ns();
	return kind;
}

/* Tells user space the ids of the server span of stream `stream` that
 * goroutine reader decoded, and what decided them (h2_served_span). */
static __always_inline void emit_h2_serve(__u32 tgid, const struct go_id *reader, __u32 stream,
					  const struct span_ctx *span, const __u8 *parent, __u8 kind)
{
	struct event_header *h = h2_event(WEFT_EV_H2_SERVE, tgid, reader->goid, stream);
	if (!h)
		return;
	h->sock_id = reader->parent;
	h->ctx_kind = kind;
	h->trace_flags = span->trace_flags;
	__builtin_memcpy(h->trace_id, span->trace_id, sizeof(h->trace_id));
	__builtin_memcpy(h->span_id, span->span_id, sizeof(h->span_id));
	__builtin_memcpy(h->parent_id, parent, sizeof(h->parent_id));
	h2_event_submit(h);
}

/* False on the pass of an entry probe at a stack check's jump (the
 * cookie says so) that goes to grow the stack: the body comes next. */
static __always_inline bool go_entry_pass(struct pt_regs *ctx)
{
	return !((bpf_get_attach_cookie(ctx) & GO_H2_AT_CHECK) && (ctx->flags & (X86_FLAGS_CF | X86_FLAGS_ZF)));
}

/* grpc-go's (*http2Server).operateHeaders(t, ctx, frame
 * *MetaHeadersFrame, handle): the frame in RDI (in the releases probed,
 * goexec.GRPCServeHeaders, ctx comes first). */
SEC("uprobe/go_grpc_serve_headers")
int weft_go_grpc_serve_headers(struct pt_regs *ctx)
{
	if (!go_entry_pass(ctx))
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc_info *pi = go_traced(tgid);
	struct go_id id;
	if (!pi || !go_id_of(pi, ctx->r14, &id))
		return 0;
	struct go_key k = {.tgid = tgid, .id = id.goid};
	__u32 stream;
	struct span_ctx in = {}, span = {};
	__u8 kind = h2_served_span(ctx->di, tgid, &id, &stream, &in, &span);
	if (!kind) {
		delete_present(&go_h2_handoff, &k);
		return 0;
	}
	bpf_map_update_elem(&go_h2_handoff, &k, &span, BPF_ANY);
	/* The handler's creation looks for a handoff only in processes
	 * marked so (TLS plaintext may not have marked it). */
	pi->h2 = 1;
	emit_h2_serve(tgid, &id, stream, &span, in.span_id, kind);
	return 0;
}

/* The goroutine creator made child: when creator left a stream's span
 * (above), child serves it. */
static __always_inline bool go_h2_handed(__u32 tgid, __u64 creator, __u64 child)
{
	struct go_key k = {.tgid = tgid, .id = creator};
	struct span_ctx *s = bpf_map_lookup_elem(&go_h2_handoff, &k);
	if (!s)
		return false;
	struct span_ctx span = *s;
	bpf_map_delete_elem(&go_h2_handoff, &k);
	go_serve(tgid, child, &span);
	return true;
}

/* net/http's (*http2serverConn).newWriterAndRequest(sc, st *stream, f
 * *MetaHeadersFrame), x/net/http2's (*serverConn) one alike: sc in RAX,
 * st in RBX, f in RCX; on the connection's serve goroutine, for each
 * stream the client opens. */
SEC("uprobe/go_h2_serve_request")
int weft_go_h2_serve_request(struct pt_regs *ctx)
{
	__u32 tgid;
	struct go_id id;
	if (!go_entry_pass(ctx) || !go_probed_goroutine(ctx, &tgid, &id) || !ctx->bx)
		return 0;
	struct go_key k = {.tgid = tgid, .id = ctx->bx};
	struct go_h2_pending p = {.sc = ctx->ax};
	struct span_ctx in = {};
	__u8 kind = h2_served_span(ctx->cx, tgid, &id, &p.stream, &in, &p.span);
	if (!kind) {
		delete_present(&go_h2_pending, &k);
		return 0;
	}
	bpf_map_update_elem(&go_h2_pending, &k, &p, BPF_ANY);
	emit_h2_serve(tgid, &id, p.stream, &p.span, in.span_id, kind);
	return 0;
}

/* net/http's stream: its connection, then its id. */
struct go_h2_stream_head {
	__u64 sc;
	__u32 id;
	__u32 _pad;
};

/* net/http's (*http2serverConn).runHandler(sc, rw *responseWriter, req,
 * handler), x/net/http2's alike, on the handler's own goroutine: sc in
 * RAX, rw in RBX; rw.rws (first field) .stream (first field) is the
 * stream it serves. */
SEC("uprobe/go_h2_serve_handler")
int weft_go_h2_serve_handler(struct pt_regs *ctx)
{
	__u32 tgid = 0;
	__u64 goid = go_entry_pass(ctx) ? go_probed_goid(ctx, &tgid) : 0;
	__u64 rws = 0;
	struct go_key k = {.tgid = tgid};
	if (!goid || bpf_probe_read_user(&rws, sizeof(rws), (void *)ctx->bx) < 0 || !rws ||
	    bpf_probe_read_user(&k.id, sizeof(k.id), (void *)rws) < 0 || !k.id)
		return 0;
	struct go_h2_pending *found = bpf_map_lookup_elem(&go_h2_pending, &k);
	if (!found)
		return 0;
	struct go_h2_pending p = *found;
	bpf_map_delete_elem(&go_h2_pending, &k);
	struct go_h2_stream_head st;
	if (bpf_probe_read_user(&st, sizeof(st), (void *)k.id) < 0 || st.sc != p.sc || st.id != p.stream ||
	    p.sc != ctx->ax)
		return 0;
	go_serve(tgid, goid, &p.span);
	return 0;
}

/* A Go HTTP/2 server's handler returned, on its goroutine: grpc-go's
 * (*http2Server).writeStatus, net/http's (*http2responseWriter)
 * .handlerDone. The stream's span is answered, and goroutines the
 * handler left behind work for it no more. */
SEC("uprobe/go_h2_serve_done")
int weft_go_h2_serve_done(struct pt_regs *ctx)
{
	__u32 tgid;
	__u64 goid = go_entry_pass(ctx) ? go_probed_goid(ctx, &tgid) : 0;
	if (!goid)
		return 0;
	struct go_key k = {.tgid = tgid, .id = goid};
	struct go_ctx *c = bpf_map_lookup_elem(&go_active, &k);
	if (c && c->root == goid)
		bpf_map_delete_elem(&go_active, &k);
	return 0;
}

#endif
