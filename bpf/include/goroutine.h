/* Go: which request a goroutine works for. A Go program runs many
 * goroutines on few threads and moves them between threads at will, so
 * the thread says nothing about the request; the goroutine (its g, held
 * in R14 by Go code and at every system call Go makes) does.
 *
 * - A goroutine that reads the start of a request serves it (its root).
 * - A goroutine created by one that works for a request works for it too
 *   (runtime.newproc1), for as long as that request is live: never after,
 *   since goroutines outlive requests and g structs are reused.
 * - net/http's client writes requests from its connection's writeLoop
 *   goroutine, not the caller's: the caller's (*persistConn).roundTrip
 *   leaves its context on the connection (go_route), and the writeLoop
 *   goroutine registered for that connection (go_writer) sends with it.
 *
 * user space attaches the uprobes (gohooks.h) per process and then sets
 * its mode to WEFT_MODE_GO; no struct offset of Go is read. */
#ifndef WEFT_GOROUTINE_H
#define WEFT_GOROUTINE_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "weft.h"
#include "stats.h"

struct go_key {
	__u32 tgid;
	__u32 _pad;
	__u64 ptr; /* a g, or a *persistConn */
};

/* The request a goroutine works for: the span, and the goroutine that
 * read the request (root), whose entry says whether it is still live. */
struct go_ctx {
	struct span_ctx ctx;
	__u64 root;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct go_key);
	__type(value, struct go_ctx);
} go_active SEC(".maps");

/* writeLoop goroutine -> the *persistConn whose requests it writes. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct go_key);
	__type(value, __u64);
} go_writer SEC(".maps");

enum go_route_kind {
	GO_ROUTE_ROOT = 0,   /* the caller serves nothing: a root is right */
	GO_ROUTE_PARENT = 1, /* from names the caller's request */
	GO_ROUTE_STALE = 2,  /* the caller's inherited request had ended */
};

/* What the caller of a connection's current request works for. */
struct go_route {
	struct go_ctx from;
	__u8 has_parent; /* enum go_route_kind */
	__u8 _pad[7];
};

/* *persistConn -> struct go_route, written by the caller's roundTrip
 * before its request is handed to the writeLoop goroutine. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct go_key);
	__type(value, struct go_route);
} go_route SEC(".maps");

/* pid_tgid -> the goroutine making the send in flight: sk_msg cannot read
 * registers, so the send's entry leaves it here. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} go_sender SEC(".maps");

/* The current goroutine at a system call or kernel function a Go
 * program's thread entered: R14 of its user registers. */
static __always_inline __u64 user_g(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(t);
	return r ? r->r14 : 0;
}

/* A Go program's thread starts a send: sk_msg, which cannot read
 * registers, finds the sending goroutine here. */
static __always_inline void go_note_sender(__u64 pid_tgid, bool go)
{
	if (!go)
		return;
	__u64 g = user_g();
	bpf_map_update_elem(&go_sender, &pid_tgid, &g, BPF_ANY);
}

/* The request root still serves span: its entry is its own and the same. */
static __always_inline bool go_live(__u32 tgid, __u64 root, const __u8 *span_id)
{
	struct go_key k = {.tgid = tgid, .ptr = root};
	struct go_ctx *r = bpf_map_lookup_elem(&go_active, &k);
	return r && r->root == root && *(__u64 *)r->ctx.span_id == *(__u64 *)span_id;
}

/* The live request goroutine g works for, or 0. A goroutine that inherited
 * a request that has since ended works for nothing it can name:
 * *stale is set. */
static __always_inline struct go_ctx *go_lookup(__u32 tgid, __u64 g, bool *stale)
{
	struct go_key k = {.tgid = tgid, .ptr = g};
	struct go_ctx *c = bpf_map_lookup_elem(&go_active, &k);
	if (!c)
		return 0;
	if (c->root != g && !go_live(tgid, c->root, c->ctx.span_id)) {
		*stale = true;
		return 0;
	}
	return c;
}

/* The parent of a client request goroutine g sends: the request of the
 * caller whose connection it writes for (writeLoop), else its own. */
static __always_inline struct span_ctx *go_parent(__u32 tgid, __u64 g)
{
	if (!g) {
		count(WEFT_STAT_PARENT_UNKNOWN);
		return 0;
	}
	struct go_key k = {.tgid = tgid, .ptr = g};
	__u64 *pc = bpf_map_lookup_elem(&go_writer, &k);
	if (pc) {
		struct go_key ck = {.tgid = tgid, .ptr = *pc};
		struct go_route *r = bpf_map_lookup_elem(&go_route, &ck);
		if (!r) {
			count(WEFT_STAT_PARENT_UNKNOWN);
			return 0;
		}
		if (r->has_parent != GO_ROUTE_PARENT) {
			if (r->has_parent == GO_ROUTE_STALE)
				count(WEFT_STAT_PARENT_STALE);
			return 0;
		}
		if (!go_live(tgid, r->from.root, r->from.ctx.span_id)) {
			count(WEFT_STAT_PARENT_STALE);
			return 0;
		}
		return &r->from.ctx;
	}
	bool stale = false;
	struct go_ctx *c = go_lookup(tgid, g, &stale);
	if (stale)
		count(WEFT_STAT_PARENT_STALE);
	return c ? &c->ctx : 0;
}

/* Goroutine g read the start of a request: it serves span now. */
static __always_inline void go_serve(__u32 tgid, __u64 g, const struct span_ctx *span)
{
	struct go_key k = {.tgid = tgid, .ptr = g};
	struct go_ctx c = {.ctx = *span, .root = g};
	bpf_map_update_elem(&go_active, &k, &c, BPF_ANY);
}

/* The request goroutine g read (span_id) is answered or abandoned. */
static __always_inline void go_end(__u32 tgid, __u64 g, const __u8 *span_id)
{
	struct go_key k = {.tgid = tgid, .ptr = g};
	struct go_ctx *c = bpf_map_lookup_elem(&go_active, &k);
	if (c && c->root == g && *(__u64 *)c->ctx.span_id == *(__u64 *)span_id)
		bpf_map_delete_elem(&go_active, &k);
}

#endif
