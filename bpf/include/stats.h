/* Per-CPU counters of what the kernel side did or lost (enum weft_stat). */
#ifndef WEFT_STATS_H
#define WEFT_STATS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "weft.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WEFT_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &stat);
	if (v)
		*v += 1;
}

#endif
