/* The handlers of grpc-go's server streams. grpc-go reads a connection's
 * frames on one goroutine, which decodes each stream's HEADERS
 * (operateHeaders) and starts the stream's handler goroutine from there.
 * When the HEADERS carry a traceparent, a uprobe at operateHeaders
 * decides the stream's server span (the incoming trace, a new span id)
 * and leaves it for the next goroutine that reader creates: the handler,
 * which then serves the span as a root (go_serve), so that its outgoing
 * calls, and its goroutines', go under it. A claim event
 * (WEFT_EV_H2_SERVE) gives user space the span's ids for that stream of
 * the connection the reader goroutine reads (h2_stream_parent names it in
 * every read), or its creator read: grpc-go's connection goroutine reads
 * the first frames, and the frames it buffered then (the first streams'
 * HEADERS) are decoded by the reader it starts. The handler's
 * writeStatus ends the span's root. A stream
 * without traceparent leaves nothing: user space decides its span
 * (h2link), and its handler serves no request. Only the decoded header
 * list is read: HeaderField of x/net/http2/hpack and the stream id of
 * the frame header, unchanged since 2016. Included by gohooks.h. */
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

/* Tells user space the ids of the server span of stream `stream` that
 * goroutine reader decoded. */
static __always_inline void emit_h2_serve(__u32 tgid, const struct go_id *reader, __u32 stream,
					  const struct span_ctx *span, const __u8 *parent)
{
	struct event_header *h = h2_event(WEFT_EV_H2_SERVE, tgid, reader->goid, stream);
	if (!h)
		return;
	h->sock_id = reader->parent;
	h->ctx_kind = WEFT_CTX_SERVER;
	h->trace_flags = span->trace_flags;
	__builtin_memcpy(h->trace_id, span->trace_id, sizeof(h->trace_id));
	__builtin_memcpy(h->span_id, span->span_id, sizeof(h->span_id));
	__builtin_memcpy(h->parent_id, parent, sizeof(h->parent_id));
	h2_event_submit(h);
}

/* grpc-go's (*http2Server).operateHeaders(t, ctx, frame
 * *MetaHeadersFrame, handle): the frame in RDI (in the releases probed,
 * goexec.GRPCServeHeaders, ctx comes first). */
SEC("uprobe/go_grpc_serve_headers")
int weft_go_grpc_serve_headers(struct pt_regs *ctx)
{
	if ((bpf_get_attach_cookie(ctx) & GO_H2_AT_CHECK) && (ctx->flags & (X86_FLAGS_CF | X86_FLAGS_ZF)))
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc_info *pi = go_traced(tgid);
	struct go_id id;
	if (!pi || !go_id_of(pi, ctx->r14, &id))
		return 0;
	struct go_key k = {.tgid = tgid, .id = id.goid};
	struct go_meta_headers m;
	__u32 stream = 0;
	struct span_ctx in = {};
	if (bpf_probe_read_user(&m, sizeof(m), (void *)ctx->di) < 0 || !m.headers_frame ||
	    bpf_probe_read_user(&stream, sizeof(stream), (void *)(m.headers_frame + FRAME_HEADER_STREAM_ID)) < 0 ||
	    !stream || !grpc_traceparent(m.fields, m.nfields, &in)) {
		delete_present(&go_h2_handoff, &k);
		return 0;
	}
	struct span_ctx span = {};
	__builtin_memcpy(span.trace_id, in.trace_id, sizeof(span.trace_id));
	span.trace_flags = continued_flags(&in);
	random_ids(0, span.span_id);
	span.start_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&go_h2_handoff, &k, &span, BPF_ANY);
	/* The handler's creation looks for a handoff only in processes
	 * marked so (TLS plaintext may not have marked it). */
	pi->h2 = 1;
	emit_h2_serve(tgid, &id, stream & 0x7fffffff, &span, in.span_id);
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

/* grpc-go's (*http2Server).writeStatus, on the handler's goroutine once
 * its handler returned: the stream's span is answered, and goroutines
 * the handler left behind work for it no more. */
SEC("uprobe/go_grpc_serve_status")
int weft_go_grpc_serve_status(struct pt_regs *ctx)
{
	if ((bpf_get_attach_cookie(ctx) & GO_H2_AT_CHECK) && (ctx->flags & (X86_FLAGS_CF | X86_FLAGS_ZF)))
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc_info *pi = go_traced(tgid);
	__u64 goid = pi ? go_goid(pi, ctx->r14) : 0;
	if (!goid)
		return 0;
	struct go_key k = {.tgid = tgid, .id = goid};
	struct go_ctx *c = bpf_map_lookup_elem(&go_active, &k);
	if (c && c->root == goid)
		bpf_map_delete_elem(&go_active, &k);
	return 0;
}

#endif
