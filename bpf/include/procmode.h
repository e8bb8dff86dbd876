/* How the kernel side tells which request a traced process's threads work
 * for (enum weft_proc_mode), per process. */
#ifndef WEFT_PROCMODE_H
#define WEFT_PROCMODE_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "weft.h"

/* tgid -> struct proc_info, decided by user space (weft_set_mode) and
 * marked by the kernel side; copied to children at fork, dropped at exec
 * (the new program is classified again). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct proc_info);
} proc_mode SEC(".maps");

static __always_inline struct proc_info *proc_of(__u32 tgid)
{
	return bpf_map_lookup_elem(&proc_mode, &tgid);
}

static __always_inline __u8 mode_of(__u32 tgid)
{
	struct proc_info *p = proc_of(tgid);
	return p ? p->mode : WEFT_MODE_UNKNOWN;
}

/* User space's classification of process tgid: want's mode and offsets
 * (its marks are ignored). */
struct set_mode_args {
	__u32 tgid;
	struct proc_info want;
	__u32 _pad;
};

/* In weft_set_mode's return: the process connected out before (its
 * calls_out mark, which the kernel side reports only once the mode is
 * known). */
#define WEFT_SET_MODE_CALLS_OUT 0x100

/* Writes user space's classification into tgid's entry, from inside the
 * kernel: a read and a write back from user space, microseconds apart,
 * would lose what the kernel side notes in between, on any CPU: the
 * marks (clients, tls, h2, calls_out, set by stores of their own, which the
 * stores here leave alone) and an agent's mode (set by its first packet),
 * which rules. Run by user space (BPF_PROG_RUN); returns the entry's
 * mode (with WEFT_SET_MODE_CALLS_OUT), or -1 when the entry kept
 * vanishing (an exec drops it). */
SEC("syscall")
int weft_set_mode(struct set_mode_args *a)
{
	__u32 tgid = a->tgid;
	struct proc_info want = {.mode = a->want.mode, .goid_off = a->want.goid_off, .parent_goid_off = a->want.parent_goid_off};
	for (int i = 0; i < 2; i++) {
		if (bpf_map_update_elem(&proc_mode, &tgid, &want, BPF_NOEXIST) == 0)
			return want.mode;
		struct proc_info *pi = proc_of(tgid);
		if (!pi)
			continue;
		if (pi->mode == WEFT_MODE_AGENT)
			return WEFT_MODE_AGENT;
		pi->goid_off = want.goid_off;
		pi->parent_goid_off = want.parent_goid_off;
		asm volatile("" ::: "memory"); /* the offsets before the mode that reads them */
		pi->mode = want.mode;
		/* A barrier between the mode's store and the mark's load
		 * (note_calls_out). */
		__sync_fetch_and_add(&pi->calls_out, 0);
		if (pi->calls_out)
			return want.mode | WEFT_SET_MODE_CALLS_OUT;
		return want.mode;
	}
	return -1;
}

/* Keyed by thread, or by the ids an agent mounts on threads. */
static __always_inline bool by_thread(__u8 mode)
{
	return mode == WEFT_MODE_THREAD || mode == WEFT_MODE_AGENT;
}

#endif
