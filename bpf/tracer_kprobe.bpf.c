/* kprobe attach path: tcp_sendmsg / tcp_recvmsg see every TCP payload
 * whatever syscall carried it. Entry saves the socket and the user buffer
 * of the msghdr's iov_iter; return emits once the byte count is known. */
#include "include/common.h"

struct inflight {
	struct user_buf buf;
	__u64 sk;
	__u8 msg_claimed; /* sk_msg saw this send's first message */
	__u8 _pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct inflight);
} inflight_send SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct inflight);
} inflight_recv SEC(".maps");

/* Sends through tcp_bpf_sendmsg: the sockets in weft's sockhash. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct inflight);
} inflight_bpf_send SEC(".maps");

/* Before 6.4 the iovec pointer of iov_iter was called iov. */
struct iov_iter___v61 {
	const struct iovec *iov;
} __attribute__((preserve_access_index));

/* Reads the user memory an iov_iter describes; false for kernel-backed
 * iterators (splice, sendfile), whose bytes weft does not capture. */
static __always_inline bool read_iter(struct msghdr *msg, struct user_buf *ub)
{
	struct iov_iter *it = &msg->msg_iter;
	__u8 type = BPF_CORE_READ(it, iter_type);
	ub->offset = BPF_CORE_READ(it, iov_offset);
	if (bpf_core_enum_value_exists(enum iter_type, ITER_UBUF) &&
	    type == bpf_core_enum_value(enum iter_type, ITER_UBUF)) {
		ub->ptr = (__u64)BPF_CORE_READ(it, ubuf);
		ub->iovcnt = 0;
		return true;
	}
	if (type != bpf_core_enum_value(enum iter_type, ITER_IOVEC))
		return false;
	if (bpf_core_field_exists(it->__iov)) {
		ub->ptr = (__u64)BPF_CORE_READ(it, __iov);
	} else {
		struct iov_iter___v61 *old = (void *)it;
		ub->ptr = (__u64)BPF_CORE_READ(old, iov);
	}
	ub->iovcnt = (__u32)BPF_CORE_READ(it, nr_segs);
	/* recv(2)/send(2) before 6.4 and every readv/writev/recvmsg/sendmsg:
	 * the iovecs are the kernel's copy (or its stack), the buffers the
	 * caller's. */
	ub->iov_kernel = 1;
	return true;
}

static __always_inline int enter(void *map, struct sock *sk, struct msghdr *msg, bool send)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	refresh_slot((__u32)pid_tgid);
	if (send)
		go_note_sender(pid_tgid);
	struct inflight f = {};
	if (!read_iter(msg, &f.buf))
		return 0;
	f.sk = (__u64)sk;
	if (bpf_map_update_elem(map, &pid_tgid, &f, BPF_ANY) < 0)
		count_drop(WEFT_STAT_LOST_STASH);
	return 0;
}

static __always_inline int leave(void *ctx, void *map, long ret, __u8 dir)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct inflight *f = bpf_map_lookup_elem(map, &pid_tgid);
	if (!f)
		return 0;
	struct user_buf ub = f->buf;
	struct sock *sk = (struct sock *)f->sk;
	bpf_map_delete_elem(map, &pid_tgid);
	if (ret > 0)
		emit_data(ctx, &emit_probe_progs, sk, dir, (__u32)ret, &ub, false, false);
	return 0;
}

static __always_inline bool claim_send_start(__u64 pid_tgid)
{
	struct inflight *f = bpf_map_lookup_elem(&inflight_bpf_send, &pid_tgid);
	if (!f || f->msg_claimed)
		return false;
	f->msg_claimed = 1;
	return true;
}

#include "include/propagate.h"

SEC("sk_msg")
int weft_inject(struct sk_msg_md *msg) { return inject(msg, false); }

SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(weft_tcp_sendmsg, struct sock *sk, struct msghdr *msg, size_t size)
{
	/* tcp_bpf_sendmsg falls back to tcp_sendmsg when the socket has no
	 * psock: that send is already being captured. */
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct inflight *outer = bpf_map_lookup_elem(&inflight_bpf_send, &pid_tgid);
	if (outer && outer->sk == (__u64)sk)
		return 0;
	return enter(&inflight_send, sk, msg, true);
}

SEC("kretprobe/tcp_sendmsg")
int BPF_KRETPROBE(weft_tcp_sendmsg_ret, int ret)
{
	return leave(ctx, &inflight_send, ret, WEFT_DIR_EGRESS);
}

/* Sockets in weft's sockhash (traceparent injection) send through
 * tcp_bpf_sendmsg instead of tcp_sendmsg. */
SEC("kprobe/tcp_bpf_sendmsg")
int BPF_KPROBE(weft_tcp_bpf_sendmsg, struct sock *sk, struct msghdr *msg, size_t size)
{
	return enter(&inflight_bpf_send, sk, msg, true);
}

SEC("kretprobe/tcp_bpf_sendmsg")
int BPF_KRETPROBE(weft_tcp_bpf_sendmsg_ret, int ret)
{
	return leave(ctx, &inflight_bpf_send, ret, WEFT_DIR_EGRESS);
}

SEC("kprobe/tcp_recvmsg")
int BPF_KPROBE(weft_tcp_recvmsg, struct sock *sk, struct msghdr *msg, size_t len, int flags)
{
	if (flags & MSG_PEEK)
		return 0;
	return enter(&inflight_recv, sk, msg, false);
}

SEC("kretprobe/tcp_recvmsg")
int BPF_KRETPROBE(weft_tcp_recvmsg_ret, int ret)
{
	return leave(ctx, &inflight_recv, ret, WEFT_DIR_INGRESS);
}

/* ioctl(fd, cmd, arg): the JVM agent's mount protocol (mount.h). The
 * syscall wrapper (__x64_sys_ioctl, found by the loader) takes the user
 * registers as its one argument. */
SEC("kprobe/sys_ioctl")
int BPF_KPROBE(weft_sys_ioctl, struct pt_regs *regs)
{
	__u32 fd = (__u32)PT_REGS_PARM1_CORE(regs);
	__u32 cmd = (__u32)PT_REGS_PARM2_CORE(regs);
	__u64 arg = (__u64)PT_REGS_PARM3_CORE(regs);
	handle_agent_ioctl(fd, cmd, arg);
	return 0;
}
