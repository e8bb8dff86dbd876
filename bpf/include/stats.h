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

/* When the kernel last dropped an event (bpf_ktime_get_ns): a request
 * begun before it and never answered may have had its answer, or its
 * connection's close, among the drops. User space counts such a request
 * as lost rather than end it as an error. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last_drop SEC(".maps");

/* Counts an event dropped (stat) and notes when. */
static __always_inline void count_drop(__u32 stat)
{
	count(stat);
	__u32 zero = 0;
	__u64 *t = bpf_map_lookup_elem(&last_drop, &zero);
	if (t)
		*t = bpf_ktime_get_ns();
}

#endif
