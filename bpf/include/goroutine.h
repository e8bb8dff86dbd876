/* Go: which request a goroutine works for. A Go program runs many
 * goroutines on few threads and moves them between threads at will, so
 * the thread says nothing about the request; the goroutine does. Its g is
 * in R14 in Go code and at every system call Go makes; goroutines are
 * named by their id (runtime.g.goid, never reused, where g structs are).
 *
 * - A goroutine that reads the start of a request serves it (its root).
 * - A goroutine created by one serving a request works for it too, for as
 *   long as that request is live: uprobes in runtime.newproc1 copy the
 *   creator's request to the new goroutine when it is created (the
 *   creator from runtime.g.parentGoid on Go 1.21+, from newproc1's
 *   argument before).
 * - net/http's client writes requests from its connection's writeLoop
 *   goroutine, not the caller's: the caller's (*persistConn).roundTrip
 *   leaves its request on the connection (go_route), and the writeLoop
 *   goroutine registered for that connection (go_writer) sends with it.
 *
 * User space attaches the uprobes (gohooks.h) per process, then sets its
 * proc_info: mode WEFT_MODE_GO and the offsets of goid and parentGoid,
 * from the binary's DWARF or a table per Go release. */
#ifndef WEFT_GOROUTINE_H
#define WEFT_GOROUTINE_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "weft.h"
#include "stats.h"
#include "procmode.h"

/* A probe on a stack check's JBE (Go's entry probes) passes twice when
 * the stack must grow first: the pass into the body is the one with
 * neither flag set. */
#define X86_FLAGS_CF 0x0001
#define X86_FLAGS_ZF 0x0040

/* A goroutine, by id, and the goroutine that created it (0: unknown). */
struct go_id {
	__u64 goid;
	__u64 parent;
};

struct go_key {
	__u32 tgid;
	__u32 _pad;
	__u64 id; /* a goroutine id, or a *persistConn */
};

/* The request a goroutine works for: the span, and the goroutine that
 * read the request (root), whose entry says whether it is still live. */
struct go_ctx {
	struct span_ctx ctx;
	__u64 root;
};

/* Roots: the goroutines serving a request. A root's entry stays when its
 * request is answered, its span id zeroed, and is written in place by
 * the next: a connection's goroutine serves request after request, and
 * an LRU insert and delete per request cost more. It goes when the
 * connection closes (go_forget). The span id is written last and zeroed
 * first, so that a reader (go_copy) never takes a half-written entry. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct go_key);
	__type(value, struct go_ctx);
} go_active SEC(".maps");

/* Copies for the goroutines a root's goroutines create. Goroutines end
 * unseen, so a hash map of copies fills with the dead and every insert
 * would evict (an LRU insert cost ~1 us a goroutine, and evicted live
 * roots). Here a copy goes in one of the GO_CHILD_WAYS ways of the set
 * its (process, goroutine id) hashes to, in place of the oldest: a live
 * goroutine loses its copy only when GO_CHILD_WAYS goroutines of that
 * set were created after it, and then has no request, never another's
 * (the ids in the way say whose it is). */
#define GO_CHILD_WAYS 4
#define GO_CHILD_SET_BITS 14
#define GO_CHILD_CLAIMED (~0ULL) /* a writer is filling the way */

struct go_child {
	__u32 tgid;
	__u32 _pad;
	__u64 goid; /* 0: empty */
	__u64 born; /* when it was written: the oldest way is replaced */
	struct go_ctx c;
};

struct go_child_set {
	struct go_child way[GO_CHILD_WAYS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << GO_CHILD_SET_BITS);
	__type(key, __u32);
	__type(value, struct go_child_set);
} go_children SEC(".maps");

/* The set of a process's goroutine: a multiplicative hash, so that the
 * sequential ids of one process, and equal ids of two, spread. */
static __always_inline struct go_child_set *go_child_set_of(__u32 tgid, __u64 goid)
{
	__u32 set = ((goid ^ ((__u64)tgid << 40)) * 0x9E3779B97F4A7C15ULL) >> (64 - GO_CHILD_SET_BITS);
	return bpf_map_lookup_elem(&go_children, &set);
}

/* writeLoop goroutine id -> the *persistConn whose requests it writes. */
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
	__type(value, struct go_id);
} go_sender SEC(".maps");

/* The current g at a system call or kernel function a Go program's thread
 * entered: R14 of its user registers. */
static __always_inline __u64 user_g(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(t);
	return r ? r->r14 : 0;
}

/* The id of goroutine g of a Go process; 0 when it cannot be read. Where
 * its creator's is not needed, one read less than go_id_of. */
static __always_inline __u64 go_goid(const struct proc_info *pi, __u64 g)
{
	__u64 goid = 0;
	if (g)
		bpf_probe_read_user(&goid, sizeof(goid), (void *)(g + pi->goid_off));
	return goid;
}

/* The ids of goroutine g of a Go process; false when they cannot be read. */
static __always_inline bool go_id_of(const struct proc_info *pi, __u64 g, struct go_id *out)
{
	out->goid = 0;
	out->parent = 0;
	if (!g || bpf_probe_read_user(&out->goid, sizeof(out->goid), (void *)(g + pi->goid_off)) < 0 || !out->goid)
		return false;
	if (pi->parent_goid_off)
		bpf_probe_read_user(&out->parent, sizeof(out->parent), (void *)(g + pi->parent_goid_off));
	return true;
}

/* Set by user space: sockops cannot tell which process connects (6.1-like
 * kernels), so any Go process's sends may go through sk_msg. */
volatile const __u8 note_all_senders = 0;

/* A Go program's thread starts a send: sk_msg, which cannot read
 * registers, finds the sending goroutine here. Only processes whose
 * sockets may be in the sockhash pay for it: a server that calls nobody
 * does not. */
static __always_inline void go_note_sender(__u64 pid_tgid)
{
	struct proc_info *pi = proc_of(pid_tgid >> 32);
	if (!pi || pi->mode != WEFT_MODE_GO || !(pi->clients || note_all_senders))
		return;
	struct go_id id = {.goid = go_goid(pi, user_g())};
	/* In place when the thread has an entry: an LRU update allocates. */
	struct go_id *noted = bpf_map_lookup_elem(&go_sender, &pid_tgid);
	if (noted)
		*noted = id;
	else
		bpf_map_update_elem(&go_sender, &pid_tgid, &id, BPF_ANY);
}

/* Keeps the compiler from moving loads and stores across it; x86 keeps
 * stores in order, and loads in order, so that is all a slot needs. */
#define go_barrier() asm volatile("" ::: "memory")

#define GO_SPAN(c) (*(volatile __u64 *)(c)->ctx.span_id)

/* The request root still serves span. */
static __always_inline bool go_live(__u32 tgid, __u64 root, const __u8 *span_id)
{
	struct go_key k = {.tgid = tgid, .id = root};
	struct go_ctx *r = bpf_map_lookup_elem(&go_active, &k);
	return r && r->root == root && GO_SPAN(r) == *(__u64 *)span_id;
}

/* A root's entry copied to out, between two reads of its span id; false
 * when it serves nothing now or was being written. */
static __always_inline bool go_copy(const struct go_ctx *c, struct go_ctx *out)
{
	__u64 span = GO_SPAN(c);
	if (!span)
		return false;
	go_barrier();
	*out = *c;
	go_barrier();
	return GO_SPAN(c) == span && *(__u64 *)out->ctx.span_id == span;
}

/* Goroutine goid's copy, copied out between two reads of its way's id: a
 * writer claims a way (GO_CHILD_CLAIMED) before it writes, so a way being
 * taken over is never read half-written. */
static __always_inline bool go_child_get(__u32 tgid, __u64 goid, struct go_ctx *out)
{
	struct go_child_set *set = go_child_set_of(tgid, goid);
	if (!set)
		return false;
	for (int i = 0; i < GO_CHILD_WAYS; i++) {
		struct go_child *w = &set->way[i];
		if (*(volatile __u64 *)&w->goid != goid || w->tgid != tgid)
			continue;
		go_barrier();
		*out = w->c;
		go_barrier();
		return *(volatile __u64 *)&w->goid == goid && w->tgid == tgid;
	}
	return false;
}

/* Writes goroutine goid's copy in place of the oldest way of its set.
 * The way is claimed with a compare-and-swap, so two creations that pick
 * it at once cannot interleave their writes; the loser's goroutine goes
 * without a copy. */
static __always_inline void go_child_set(__u32 tgid, __u64 goid, const struct go_ctx *c)
{
	struct go_child_set *set = go_child_set_of(tgid, goid);
	if (!set)
		return;
	int victim = 0;
	__u64 oldest = ~0ULL;
	for (int i = 0; i < GO_CHILD_WAYS; i++) {
		__u64 g = *(volatile __u64 *)&set->way[i].goid;
		__u64 born = g ? set->way[i].born : 0;
		if (g != GO_CHILD_CLAIMED && born < oldest) {
			oldest = born;
			victim = i;
		}
	}
	if (oldest == ~0ULL)
		return; /* every way is being written */
	struct go_child *w = &set->way[victim & (GO_CHILD_WAYS - 1)];
	__u64 seen = *(volatile __u64 *)&w->goid;
	if (seen == GO_CHILD_CLAIMED || __sync_val_compare_and_swap(&w->goid, seen, GO_CHILD_CLAIMED) != seen)
		return;
	w->tgid = tgid;
	w->born = bpf_ktime_get_ns();
	w->c = *c;
	go_barrier();
	*(volatile __u64 *)&w->goid = goid;
}

/* The live request goroutine goid works for through its own entry (its
 * root, or one copied at its creation), copied to out; false when none,
 * and *stale when that entry names a request that has ended. */
static __always_inline bool go_entry(__u32 tgid, __u64 goid, bool *stale, struct go_ctx *out)
{
	struct go_key k = {.tgid = tgid, .id = goid};
	struct go_ctx *c = bpf_map_lookup_elem(&go_active, &k);
	if (!(c && go_copy(c, out)) && !go_child_get(tgid, goid, out))
		return false;
	if (out->root != goid && !go_live(tgid, out->root, out->ctx.span_id)) {
		*stale = true;
		return false;
	}
	return true;
}

/* The live request a goroutine works for. Only its own entry counts,
 * made when it read a request or copied when it was created: its
 * creator's current request may have begun after it was created (a
 * connection's goroutine serves one request after another), so it is
 * never asked later. */
static __always_inline bool go_lookup(__u32 tgid, const struct go_id *id, bool *stale, struct go_ctx *out)
{
	if (!id->goid)
		return false;
	return go_entry(tgid, id->goid, stale, out);
}

/* The parent of a client request goroutine id sends, copied to out: the
 * request of the caller whose connection it writes for (writeLoop), else
 * its own; false for none. */
static __always_inline bool go_parent(__u32 tgid, const struct go_id *id, struct span_ctx *out)
{
	if (!id || !id->goid) {
		count(WEFT_STAT_PARENT_UNKNOWN);
		return false;
	}
	struct go_key k = {.tgid = tgid, .id = id->goid};
	__u64 *pc = bpf_map_lookup_elem(&go_writer, &k);
	if (pc) {
		struct go_key ck = {.tgid = tgid, .id = *pc};
		struct go_route *r = bpf_map_lookup_elem(&go_route, &ck);
		if (!r) {
			count(WEFT_STAT_PARENT_UNKNOWN);
			return false;
		}
		if (r->has_parent != GO_ROUTE_PARENT) {
			if (r->has_parent == GO_ROUTE_STALE)
				count(WEFT_STAT_PARENT_STALE);
			return false;
		}
		if (!go_live(tgid, r->from.root, r->from.ctx.span_id)) {
			count(WEFT_STAT_PARENT_STALE);
			return false;
		}
		*out = r->from.ctx;
		return true;
	}
	bool stale = false;
	struct go_ctx c;
	if (!go_lookup(tgid, id, &stale, &c)) {
		if (stale)
			count(WEFT_STAT_PARENT_STALE);
		return false;
	}
	*out = c.ctx;
	return true;
}

/* Goroutine goid read the start of a request: it serves span now. */
static __always_inline void go_serve(__u32 tgid, __u64 goid, const struct span_ctx *span)
{
	struct go_key k = {.tgid = tgid, .id = goid};
	struct go_ctx c = {.ctx = *span, .root = goid};
	struct go_ctx *old = bpf_map_lookup_elem(&go_active, &k);
	if (old) {
		__u64 span_id = *(__u64 *)c.ctx.span_id;
		*(__u64 *)c.ctx.span_id = 0;
		GO_SPAN(old) = 0;
		go_barrier();
		*old = c;
		go_barrier();
		GO_SPAN(old) = span_id;
	} else {
		bpf_map_update_elem(&go_active, &k, &c, BPF_ANY);
	}
	/* Its copy from its creation is not to come back when this ends. */
	struct go_child_set *set = go_child_set_of(tgid, goid);
	if (!set)
		return;
	for (int i = 0; i < GO_CHILD_WAYS; i++) {
		struct go_child *w = &set->way[i];
		if (*(volatile __u64 *)&w->goid == goid && w->tgid == tgid)
			__sync_val_compare_and_swap(&w->goid, goid, 0);
	}
}

/* The request goroutine goid read (span_id) is answered or abandoned. */
static __always_inline void go_end(__u32 tgid, __u64 goid, const __u8 *span_id)
{
	struct go_key k = {.tgid = tgid, .id = goid};
	struct go_ctx *c = bpf_map_lookup_elem(&go_active, &k);
	if (c && c->root == goid && GO_SPAN(c) == *(__u64 *)span_id)
		GO_SPAN(c) = 0;
}

/* The connection goroutine goid served closed: its entry goes, unless it
 * serves a request again (of another connection). */
static __always_inline void go_forget(__u32 tgid, __u64 goid)
{
	struct go_key k = {.tgid = tgid, .id = goid};
	struct go_ctx *c = bpf_map_lookup_elem(&go_active, &k);
	if (c && !GO_SPAN(c))
		bpf_map_delete_elem(&go_active, &k);
}

#endif
