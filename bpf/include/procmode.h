/* How the kernel side tells which request a traced process's threads work
 * for (enum weft_proc_mode), per process. */
#ifndef WEFT_PROCMODE_H
#define WEFT_PROCMODE_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "weft.h"

/* tgid -> struct proc_info, kept by user space; copied to children at
 * fork, dropped at exec (the new program is classified again). */
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

/* Keyed by thread, or by the ids an agent mounts on threads. */
static __always_inline bool by_thread(__u8 mode)
{
	return mode == WEFT_MODE_THREAD || mode == WEFT_MODE_AGENT;
}

#endif
