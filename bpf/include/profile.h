/* On-CPU stack sampling, linked to spans. User space opens a CPU-clock
 * perf event per online CPU and attaches weft_sample to each (only while
 * sampling is on: the generic attach skips perf_event sections). Each tick
 * that lands on a traced thread records its user and kernel stacks and
 * the span its correlation key is serving, found exactly as a client span
 * finds its parent (lookup_active), so samples, spans and injected
 * traceparents agree. Included from common.h: the tracer's maps (pid
 * filter, keys, active spans) are this program's maps. */
#ifndef WEFT_PROFILE_H
#define WEFT_PROFILE_H

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h: a kernel thread */

/* Referenced so that the struct reaches BTF and bpf2go emits it for Go. */
const struct stack_sample *unused_stack_sample __attribute__((unused));

/* Its own ring buffer: a burst of samples must not crowd out the socket
 * events, nor they the samples. 2 MiB holds ~990 samples. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 2 << 20);
} samples SEC(".maps");

/* Samples reserved so far. User space counts the samples it has handled;
 * while the two are equal no sample can still name a span that just
 * ended, so the span is exported at once instead of held (see
 * pkg/agent/spanlinks.go). Memory-mapped: user space reads it for every
 * span, without a system call. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} samples_begun SEC(".maps");

/* The span a sample of a thread of tgid (key) falls in: found as a client
 * span finds its parent, so that samples, spans and traceparents agree;
 * in a Go program by the goroutine the thread was running; copied to
 * out, false for none. A key serving two requests at once names neither. */
static __always_inline bool sample_span(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 key, struct span_ctx *out)
{
	struct proc_info *pi = proc_of(tgid);
	__u8 mode = pi ? pi->mode : WEFT_MODE_UNKNOWN;
	if (pi && mode == WEFT_MODE_GO) {
		/* Interrupted in user mode: its R14; in the kernel: that of
		 * the system call the goroutine made. */
		__u64 cs = *(__u64 *)&ctx->regs.cs; /* the context is read in words */
		__u64 g = ctx->regs.r14;
		/* kept a load of its own: clang would merge it with user_g's
		 * into a load through a chosen pointer, which the verifier
		 * refuses for the context */
		asm volatile("" : "+r"(g));
		if (!(cs & 3))
			g = user_g();
		struct go_id id;
		bool stale = false;
		struct go_ctx c;
		if (!go_id_of(pi, g, &id) || !go_lookup(tgid, &id, &stale, &c))
			return false;
		*out = c.ctx;
		return true;
	}
	if (!by_thread(mode))
		return false;
	struct span_ctx *a = lookup_active(tgid, key);
	if (!a || a->ambiguous)
		return false;
	*out = *a;
	return true;
}

SEC("perf_event")
int weft_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	/* tgid 0 is the idle task: the CPU had nothing to run. */
	if (!tgid || !pid_traced(tgid))
		return 0;
	if (trace_all) { /* "every process": kernel threads are not ones */
		struct task_struct *task = (void *)bpf_get_current_task();
		if (BPF_CORE_READ(task, flags) & PF_KTHREAD)
			return 0;
	}

	/* A mount done by a memory write (op 0x57) counts from now on. */
	refresh_slot(tid);
	__u32 key = correlation_key(tid);

	struct stack_sample *s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		count(WEFT_STAT_LOST_SAMPLES);
		return 0;
	}
	/* Counted before the time is taken and the span looked up: a sample
	 * stamped before user space reads the count is in it. */
	__u32 zero = 0;
	__u64 *begun = bpf_map_lookup_elem(&samples_begun, &zero);
	if (begun)
		__sync_fetch_and_add(begun, 1);
	s->ts_ns = bpf_ktime_get_ns();
	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->key = key;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	struct span_ctx a;
	if (sample_span(ctx, tgid, key, &a)) {
		__builtin_memcpy(s->trace_id, a.trace_id, 16);
		__builtin_memcpy(s->span_id, a.span_id, 8);
		s->trace_flags = a.trace_flags;
	} else {
		__builtin_memset(s->trace_id, 0, 16);
		__builtin_memset(s->span_id, 0, 8);
		s->trace_flags = 0;
	}
	__builtin_memset(s->_pad, 0, sizeof(s->_pad));

	/* bpf_get_stack zeroes what it does not fill, and all of the buffer
	 * on failure; a failed walk is an empty stack, not a lost sample. */
	long n = bpf_get_stack(ctx, s->user_stack, sizeof(s->user_stack), BPF_F_USER_STACK);
	s->user_len = n > 0 ? (__u64)n >> 3 : 0; /* bytes to frames */
	n = bpf_get_stack(ctx, s->kernel_stack, sizeof(s->kernel_stack), 0);
	s->kernel_len = n > 0 ? (__u64)n >> 3 : 0;

	/* Default wake-up: the reader, when it has caught up, wakes for each
	 * sample (at most a few hundred a second) and handles it at once, so
	 * spans are rarely held. */
	bpf_ringbuf_submit(s, 0);
	count(WEFT_STAT_SAMPLES);
	return 0;
}

#endif
