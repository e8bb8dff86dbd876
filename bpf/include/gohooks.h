/* uprobes on Go functions (goroutine.h says why). User space attaches
 * them to one process at a time, at addresses it reads from the binary's
 * function table, so stripped binaries are covered; Go's register ABI
 * (Go 1.17+) passes the receiver and first arguments in RAX, RBX, ... and
 * keeps the current g in R14. No uretprobe: Go moves stacks, so return
 * addresses on them cannot be swapped; a uprobe on each RET instruction,
 * or on a call made after what is read is set, plays its part. Entry
 * probes sit on the stack check's conditional jump, which uprobes emulate
 * (one trap) where they single-step the entry's compare (two). Included
 * by common.h. */
#ifndef WEFT_GOHOOKS_H
#define WEFT_GOHOOKS_H

#include "common.h"

/* runtime.newproc1 is running on this thread for the g stored (its
 * creator; Go before 1.21 only): it runs on the system stack, where R14
 * is g0. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} go_creating SEC(".maps");

#define GO_GDEAD 6 /* runtime._Gdead */

static __always_inline struct proc_info *go_traced(__u32 tgid)
{
	if (!pid_traced(tgid))
		return 0;
	struct proc_info *pi = proc_of(tgid);
	return pi && pi->mode == WEFT_MODE_GO ? pi : 0;
}

/* The process and goroutine a uprobe in Go code fired in; false when the
 * process is not followed by goroutine or the goroutine's ids cannot be
 * read. */
static __always_inline bool go_probed_goroutine(struct pt_regs *ctx, __u32 *tgid, struct go_id *id)
{
	*tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc_info *pi = go_traced(*tgid);
	return pi && go_id_of(pi, ctx->r14, id);
}

/* The process and goroutine id a uprobe in Go code fired in, where its
 * creator's is not needed; 0 when the process is not followed by
 * goroutine. */
static __always_inline __u64 go_probed_goid(struct pt_regs *ctx, __u32 *tgid)
{
	*tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc_info *pi = go_traced(*tgid);
	return pi ? go_goid(pi, ctx->r14) : 0;
}

/* runtime.newproc1(fn *funcval, callergp *g, callerpc uintptr, ...) *g,
 * at entry (Go before 1.21, which has no parentGoid). */
SEC("uprobe/go_newproc1")
int weft_go_newproc1(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!go_traced(pid_tgid >> 32))
		return 0;
	__u64 caller = ctx->bx;
	bpf_map_update_elem(&go_creating, &pid_tgid, &caller, BPF_ANY);
	return 0;
}

static __always_inline bool go_h2_handed(__u32 tgid, __u64 creator, __u64 child);

/* The new goroutine newg works for its creator's live request, if any:
 * a copy of the creator's entry (whose root says when it ends); or it is
 * a grpc-go stream's handler, which serves the stream's span
 * (h2serve.h). */
static __always_inline void go_created(__u64 pid_tgid, __u64 newg)
{
	__u32 tgid = pid_tgid >> 32;
	struct proc_info *pi = go_traced(tgid);
	if (!pi)
		return;
	struct go_id child;
	if (!go_id_of(pi, newg, &child))
		return;
	struct go_id creator = {.goid = child.parent};
	if (!pi->parent_goid_off) {
		__u64 *caller = bpf_map_lookup_elem(&go_creating, &pid_tgid);
		if (!caller)
			return;
		struct go_id c;
		if (go_id_of(pi, *caller, &c))
			creator.goid = c.goid;
		bpf_map_delete_elem(&go_creating, &pid_tgid);
	}
	if (pi->h2 && go_h2_handed(tgid, creator.goid, child.goid))
		return;
	bool stale = false;
	struct go_ctx parent;
	if (go_entry(tgid, creator.goid, &stale, &parent))
		go_child_set(tgid, child.goid, &parent);
}

/* In runtime.newproc1 (Go before 1.24) at the first instruction uprobes
 * emulate after the new g's goid is stored (goexec's NewG), else at each
 * RET (single-stepped): the new g is in RAX, its goid and parentGoid set. */
SEC("uprobe/go_newproc1_ret")
int weft_go_newproc1_ret(struct pt_regs *ctx)
{
	go_created(bpf_get_current_pid_tgid(), ctx->ax);
	return 0;
}

/* At newproc1's calls of casgstatus(gp, oldval, newval) (Go 1.24+, which
 * sets goid and parentGoid before): the one from _Gdead makes the new
 * goroutine runnable. A call is emulated by uprobes: one trap, where a
 * RET costs two. */
SEC("uprobe/go_newproc1_casg")
int weft_go_newproc1_casg(struct pt_regs *ctx)
{
	if ((__u32)ctx->bx != GO_GDEAD)
		return 0;
	go_created(bpf_get_current_pid_tgid(), ctx->ax);
	return 0;
}

/* net/http.(*persistConn).roundTrip(pc, req), on the caller's goroutine
 * after the connection was chosen: what the caller works for goes to the
 * connection, for its writeLoop goroutine to send with. */
SEC("uprobe/go_persistconn_roundtrip")
int weft_go_roundtrip(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct proc_info *pi = go_traced(tgid);
	if (!pi)
		return 0;
	struct go_key pk = {.tgid = tgid, .id = ctx->ax};
	struct go_route r = {};
	struct go_id id;
	bool stale = false;
	if (go_id_of(pi, ctx->r14, &id) && go_lookup(tgid, &id, &stale, &r.from)) {
		r.has_parent = GO_ROUTE_PARENT;
	} else if (stale) {
		r.has_parent = GO_ROUTE_STALE;
	}
	/* In place for a connection seen before: an LRU update allocates. Its
	 * writeLoop reads it only after this caller hands the request over. */
	struct go_route *prev = bpf_map_lookup_elem(&go_route, &pk);
	if (prev)
		*prev = r;
	else
		bpf_map_update_elem(&go_route, &pk, &r, BPF_ANY);
	return 0;
}

/* net/http.(*persistConn).writeLoop(pc): this goroutine writes the
 * connection's requests for as long as the connection lives. */
SEC("uprobe/go_persistconn_writeloop")
int weft_go_writeloop(struct pt_regs *ctx)
{
	__u32 tgid;
	struct go_id id;
	if (!go_probed_goroutine(ctx, &tgid, &id))
		return 0;
	struct go_key gk = {.tgid = tgid, .id = id.goid};
	__u64 pc = ctx->ax;
	bpf_map_update_elem(&go_writer, &gk, &pc, BPF_ANY);
	return 0;
}

/* net/http.(*http2ClientConn).writeHeaders(cc, streamID uint32, ...),
 * and x/net/http2's: the goroutine of a request is about to write and
 * flush its stream's HEADERS (h2claim.h); cc in RAX names the connection
 * (h2link.h). A goroutine whose request is unknown or over leaves no
 * claim. */
SEC("uprobe/go_h2_headers")
int weft_go_h2_headers(struct pt_regs *ctx)
{
	__u32 tgid;
	struct go_id id;
	if (!go_probed_goroutine(ctx, &tgid, &id))
		return 0;
	struct go_key k = {.tgid = tgid, .id = id.goid};
	struct h2_claim c = {.stream = (__u32)ctx->bx, .conn = ctx->ax};
	if (go_parent(tgid, &id, &c.parent)) {
		h2_client_span(tgid, c.conn, c.stream, &c.parent, c.span);
		bpf_map_update_elem(&h2_claims, &k, &c, BPF_ANY);
	} else {
		bpf_map_delete_elem(&h2_claims, &k);
	}
	return 0;
}

/* grpc-go's (*http2Client).NewStream, at its call of
 * controlBuffer.executeAndPut(f, it cbItem): the header item (its data
 * word, in RDI) goes to the loopy writer for the caller's request
 * (h2claim.h). A goroutine whose request is unknown or over leaves none. */
SEC("uprobe/go_grpc_put")
int weft_go_grpc_put(struct pt_regs *ctx)
{
	__u32 tgid;
	struct go_id id;
	if (!go_probed_goroutine(ctx, &tgid, &id))
		return 0;
	struct grpc_item_key k = {.tgid = tgid, .item = ctx->di};
	struct span_ctx parent;
	if (go_parent(tgid, &id, &parent))
		bpf_map_update_elem(&grpc_items, &k, &parent, BPF_ANY);
	else
		bpf_map_delete_elem(&grpc_items, &k);
	return 0;
}

/* grpc-go's (*loopyWriter).clientHeaderHandler(hdr *clientHeaders) (the
 * item in RBX; cookie 0), or originateStream(str, hdr *headerFrame)
 * before grpc-go 1.85 (in RCX; cookie 1), on the loopy goroutine, before
 * it writes the stream's HEADERS: the claim goes to user space ahead of
 * the write (h2claim.h). Probed at the stack check, which a stack growth
 * passes twice: the first pass takes the item, the second finds none. */
SEC("uprobe/go_grpc_headers")
int weft_go_grpc_headers(struct pt_regs *ctx)
{
	__u32 tgid;
	struct go_id id;
	if (!go_probed_goroutine(ctx, &tgid, &id))
		return 0;
	__u64 bx = ctx->bx, cx = ctx->cx;
	/* Both loaded as they are: the verifier refuses a context load at an
	 * offset chosen at run time, which the select would become. */
	asm volatile("" : "+r"(bx), "+r"(cx));
	struct grpc_item_key k = {.tgid = tgid, .item = bpf_get_attach_cookie(ctx) ? cx : bx};
	struct span_ctx *p = bpf_map_lookup_elem(&grpc_items, &k);
	if (!p)
		return 0;
	__u32 stream = 0;
	if (bpf_probe_read_user(&stream, sizeof(stream), (void *)k.item) == 0 && stream) {
		/* The loopy goroutine writes its one connection (h2link.h). */
		__u8 span[8];
		bool decided = h2_client_span(tgid, id.goid | H2_CLIENT_LOOPY, stream, p, span);
		emit_h2_claim(tgid, id.goid, stream, p, decided ? span : NULL);
	}
	bpf_map_delete_elem(&grpc_items, &k);
	return 0;
}

#include "h2serve.h"

#endif
