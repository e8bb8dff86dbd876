/* Logical request ids that a JVM agent mounts on OS threads, so that the
 * correlation key follows a request across coroutine and executor hops.
 *
 * Wire format (OBI's, byte-compatible): ioctl(0, 0x0b10b1, packet), the
 * packet is 9 bytes: op, then a u64 little-endian argument.
 *   op 3     the calling thread works for thread <arg> (executor hand-off)
 *   op 4     mount logical id <arg> on the calling thread
 *   op 5     unmount
 *   op 0x57  weft's extension: <arg> is the address of a u64 slot in the
 *            calling thread's memory (0 unregisters). The kernel reads the
 *            slot at each socket event of the thread, so that mounting is a
 *            memory write instead of a syscall. Nonzero = mounted id.
 * The syscall itself fails (ENOTTY/EBADF): the kernel side only observes.
 *
 * Where weft hooks socket calls only (no syscall tracepoint, no kprobe),
 * an ioctl is not seen; weft's agent then also sends the same op and
 * argument as a note (struct agent_note) with sendto(2) on an unconnected
 * AF_UNIX datagram socket: the call fails at once (ENOTCONN) after the
 * kernel's sock_send_length tracepoint has seen it. */
#ifndef WEFT_MOUNT_H
#define WEFT_MOUNT_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define WEFT_IOCTL_CMD 0x0b10b1
#define WEFT_OP_PARENT 3
#define WEFT_OP_MOUNT 4
#define WEFT_OP_UNMOUNT 5
#define WEFT_OP_SLOT 0x57
#define WEFT_LOGICAL_BIT 0x80000000u
#define WEFT_NOTE_MAGIC 0x74666577u /* "weft", little-endian */

struct agent_note {
	__u32 magic; /* WEFT_NOTE_MAGIC */
	__u8 op;
	__u8 _pad[3];
	__u64 arg;
};

/* tid -> the correlation key of the logical id mounted on that thread. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} thread_key SEC(".maps");

/* tid -> user address of the thread's mount slot. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} thread_slot SEC(".maps");

/* Set, and never cleared, by the first slot a thread registers: until
 * then thread_slot is empty, and the socket path skips its lookup (and
 * leaves calls that moved nothing at once). Only BPF writes it, so it
 * cannot be stale the way a flag user space rewrites could. */
volatile __u32 slots_in_use = 0;

/* Likewise for thread_key: set before the first logical id is mounted on
 * a thread, so that the key of every event of a program without the
 * Java agent costs no lookup. */
volatile __u32 keys_mounted = 0;

/* A logical id is mounted on tid (k): the thread's key. */
static __always_inline void mount_key(__u32 tid, __u32 k)
{
	keys_mounted = 1;
	bpf_map_update_elem(&thread_key, &tid, &k, BPF_ANY);
}

static __always_inline __u32 logical_key(__u64 id)
{
	return WEFT_LOGICAL_BIT | (__u32)(id & 0x7fffffff);
}

/* The correlation key of a thread: its mounted logical id, else itself.
 * Any program type can call this (sk_msg included). */
static __always_inline __u32 correlation_key(__u32 tid)
{
	if (!keys_mounted)
		return tid;
	__u32 *k = bpf_map_lookup_elem(&thread_key, &tid);
	return k ? *k : tid;
}

/* tracectx.h: points the current thread's traces_ctx_v1 entry at the
 * active span of its (new) key. Declared here because refresh_slot, below,
 * changes keys; defined after the span maps it reads. */
static __always_inline void traces_ctx_sync(__u64 pid_tgid, __u32 key);

/* Tracing programs only (they may read user memory): bring the current
 * thread's key up to date with its slot. Called where a socket call
 * starts, before sk_msg runs for it, and at each stack sample. An
 * unreadable slot keeps the previous key. Maps are written only when the
 * key changes: this runs far more often than the key does. */
static __always_inline void refresh_slot(__u32 tid)
{
	if (!slots_in_use)
		return;
	__u64 *addr = bpf_map_lookup_elem(&thread_slot, &tid);
	if (!addr)
		return;
	__u64 id = 0;
	if (bpf_probe_read_user(&id, sizeof(id), (void *)*addr) < 0)
		return;
	__u32 *old = bpf_map_lookup_elem(&thread_key, &tid);
	__u32 was = old ? *old : tid;
	__u32 k = (id & 0x7fffffff) ? logical_key(id) : tid;
	if (k == was)
		return;
	if (k != tid)
		mount_key(tid, k);
	else
		bpf_map_delete_elem(&thread_key, &tid);
	traces_ctx_sync(bpf_get_current_pid_tgid(), k);
}

/* A thread of a traced process ended: its tid may be reused. */
static __always_inline void forget_thread(__u32 tid)
{
	if (keys_mounted)
		bpf_map_delete_elem(&thread_key, &tid);
	if (slots_in_use)
		bpf_map_delete_elem(&thread_slot, &tid);
}

#endif
