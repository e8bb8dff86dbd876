/* uprobes on Go functions (goroutine.h says why). User space attaches
 * them to one process at a time, at addresses it reads from the binary's
 * function table, so stripped binaries are covered; Go's register ABI
 * (Go 1.17+) passes the receiver and first arguments in RAX, RBX, ... and
 * keeps the current g in R14. No uretprobe: Go moves stacks, so return
 * addresses on them cannot be swapped; a uprobe on each RET instruction
 * of the function plays its part. Included by common.h. */
#ifndef WEFT_GOHOOKS_H
#define WEFT_GOHOOKS_H

#include "common.h"

/* runtime.newproc1 is running on this thread for the goroutine stored
 * (its caller): it runs on the system stack, where R14 is g0. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} go_creating SEC(".maps");

static __always_inline bool go_traced(__u32 tgid)
{
	if (!pid_traced(tgid))
		return false;
	__u8 *m = bpf_map_lookup_elem(&proc_mode, &tgid);
	return m && *m == WEFT_MODE_GO;
}

/* runtime.newproc1(fn *funcval, callergp *g, callerpc uintptr, ...) *g */
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

/* At each RET of runtime.newproc1: the new g is in RAX. It may be a g
 * struct reused from a goroutine that ended: whatever that one worked
 * for is forgotten, and the new goroutine works for its creator's live
 * request, if any. */
SEC("uprobe/go_newproc1_ret")
int weft_go_newproc1_ret(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 *caller = bpf_map_lookup_elem(&go_creating, &pid_tgid);
	if (!caller)
		return 0;
	__u32 tgid = pid_tgid >> 32;
	struct go_key nk = {.tgid = tgid, .ptr = ctx->ax};
	bool stale = false;
	struct go_ctx *parent = go_lookup(tgid, *caller, &stale);
	bpf_map_delete_elem(&go_creating, &pid_tgid);
	bpf_map_delete_elem(&go_writer, &nk);
	if (parent) {
		struct go_ctx c = *parent;
		bpf_map_update_elem(&go_active, &nk, &c, BPF_ANY);
	} else {
		bpf_map_delete_elem(&go_active, &nk);
	}
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
	if (!go_traced(tgid))
		return 0;
	struct go_key pk = {.tgid = tgid, .ptr = ctx->ax};
	struct go_route r = {};
	bool stale = false;
	struct go_ctx *c = go_lookup(tgid, ctx->r14, &stale);
	if (c) {
		r.from = *c;
		r.has_parent = GO_ROUTE_PARENT;
	} else if (stale) {
		r.has_parent = GO_ROUTE_STALE;
	}
	bpf_map_update_elem(&go_route, &pk, &r, BPF_ANY);
	return 0;
}

/* net/http.(*persistConn).writeLoop(pc): this goroutine writes the
 * connection's requests for as long as the connection lives. */
SEC("uprobe/go_persistconn_writeloop")
int weft_go_writeloop(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!go_traced(tgid))
		return 0;
	struct go_key gk = {.tgid = tgid, .ptr = ctx->r14};
	__u64 pc = ctx->ax;
	bpf_map_update_elem(&go_writer, &gk, &pc, BPF_ANY);
	return 0;
}

#endif
