/* Tracepoint attach paths, for kernels without kprobes. User space loads
 * one of two sets of programs:
 *
 * - the socket path (PathTracepoint): tp_btf sock_{send,recv}_length
 *   alone. They fire only for socket calls, inside the call once the
 *   bytes have moved, and the call's registers (bpf_task_pt_regs) name
 *   the user buffer: no syscall tracepoint, which would put every task
 *   on the host on the slow system-call path;
 * - the syscall path (PathSyscalls), for kernels whose sk_msg programs
 *   cannot read registers: syscall entry saves the user buffer,
 *   sock:sock_{send,recv}_length name the socket, syscall exit emits. */
#include "include/common.h"
#include "include/sockfd.h"

/* The programs that emit this object's data events (emit_data), besides
 * common.h's: one per program type of their callers. A tp_btf program is
 * loaded for one tracepoint; sock_recv_length's program may enter this
 * one too, the kernel finding the two tracepoints' prototypes the same. */
EMIT_PROG_ARRAY(emit_sock_progs);
EMIT_PROG_ARRAY(emit_exit_progs);

SEC("tp_btf/sock_send_length")
int BPF_PROG(weft_emit_sock)
{
	return emit_stashed();
}

SEC("tracepoint")
int weft_emit_exit(void *ctx)
{
	return emit_stashed();
}

/* ---- The syscall path. */

enum call_kind {
	CALL_SEND = 1,
	CALL_RECV = 2,
};

struct inflight {
	struct user_buf buf;
	__u64 sk;    /* set by the sock tracepoint; 0 means not a TCP socket */
	__u8 kind;   /* enum call_kind */
	__u8 peek;   /* MSG_PEEK: the bytes will be read again */
	__u8 msg_claimed; /* sk_msg saw this send's first message */
	__u8 _pad[5];
};

/* pid_tgid -> the socket call in flight on that thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct inflight);
} inflight_calls SEC(".maps");

static __always_inline int enter(__u8 kind, __u64 ptr, __u32 iovcnt)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	refresh_slot((__u32)pid_tgid);
	if (kind == CALL_SEND)
		go_note_sender(pid_tgid);
	struct inflight f = {};
	f.buf.ptr = ptr;
	f.buf.iovcnt = iovcnt;
	f.kind = kind;
	if (bpf_map_update_elem(&inflight_calls, &pid_tgid, &f, BPF_ANY) < 0)
		count_drop(WEFT_STAT_LOST_STASH);
	return 0;
}

/* msghdr: the iovec array and its length are what we need. */
static __always_inline int enter_msg(__u8 kind, struct user_msghdr *umsg)
{
	struct user_msghdr m;
	if (bpf_probe_read_user(&m, sizeof(m), umsg) < 0)
		return 0;
	return enter(kind, (__u64)m.msg_iov, m.msg_iovlen ? (__u32)m.msg_iovlen : 0);
}

static __always_inline int leave(struct trace_event_raw_sys_exit *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct inflight *f = bpf_map_lookup_elem(&inflight_calls, &pid_tgid);
	if (!f)
		return 0;
	long ret = ctx->ret;
	bool emit = f->sk && ret > 0 && !f->peek && (f->buf.iovcnt || f->buf.ptr);
	struct user_buf ub = f->buf;
	struct sock *sk = (struct sock *)f->sk;
	__u8 dir = f->kind == CALL_SEND ? WEFT_DIR_EGRESS : WEFT_DIR_INGRESS;
	bpf_map_delete_elem(&inflight_calls, &pid_tgid);
	if (emit)
		emit_data(ctx, &emit_exit_progs, sk, dir, (__u32)ret, &ub, false, false);
	return 0;
}

static __always_inline int on_sock(struct trace_event_raw_sock_msg_length *ctx, __u8 kind)
{
	if (ctx->protocol != IPPROTO_TCP)
		return 0;
	if (ctx->family != AF_INET && ctx->family != AF_INET6)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct inflight *f = bpf_map_lookup_elem(&inflight_calls, &pid_tgid);
	if (!f || f->kind != kind)
		return 0;
	f->sk = (__u64)ctx->sk;
	f->peek = (ctx->flags & MSG_PEEK) != 0;
	return 0;
}

static __always_inline bool claim_send_start(__u64 pid_tgid)
{
	struct inflight *f = bpf_map_lookup_elem(&inflight_calls, &pid_tgid);
	if (!f || f->kind != CALL_SEND || f->msg_claimed)
		return false;
	f->msg_claimed = 1;
	return true;
}

#include "include/propagate.h"

SEC("sk_msg")
int weft_inject(struct sk_msg_md *msg) { return inject(msg, false); }

SEC("tracepoint/sock/sock_send_length")
int weft_sock_send(struct trace_event_raw_sock_msg_length *ctx) { return on_sock(ctx, CALL_SEND); }

SEC("tracepoint/sock/sock_recv_length")
int weft_sock_recv(struct trace_event_raw_sock_msg_length *ctx) { return on_sock(ctx, CALL_RECV); }

/* write(fd, buf, count), read(fd, buf, count) */
SEC("tracepoint/syscalls/sys_enter_write")
int weft_enter_write(struct trace_event_raw_sys_enter *ctx) { return enter(CALL_SEND, ctx->args[1], 0); }
SEC("tracepoint/syscalls/sys_enter_read")
int weft_enter_read(struct trace_event_raw_sys_enter *ctx) { return enter(CALL_RECV, ctx->args[1], 0); }

/* sendto(fd, buf, len, flags, addr, alen), recvfrom(...) */
SEC("tracepoint/syscalls/sys_enter_sendto")
int weft_enter_sendto(struct trace_event_raw_sys_enter *ctx) { return enter(CALL_SEND, ctx->args[1], 0); }
SEC("tracepoint/syscalls/sys_enter_recvfrom")
int weft_enter_recvfrom(struct trace_event_raw_sys_enter *ctx) { return enter(CALL_RECV, ctx->args[1], 0); }

/* writev(fd, iov, iovcnt), readv(...) */
SEC("tracepoint/syscalls/sys_enter_writev")
int weft_enter_writev(struct trace_event_raw_sys_enter *ctx) { return enter(CALL_SEND, ctx->args[1], (__u32)ctx->args[2]); }
SEC("tracepoint/syscalls/sys_enter_readv")
int weft_enter_readv(struct trace_event_raw_sys_enter *ctx) { return enter(CALL_RECV, ctx->args[1], (__u32)ctx->args[2]); }

/* sendmsg(fd, msg, flags), recvmsg(...) */
SEC("tracepoint/syscalls/sys_enter_sendmsg")
int weft_enter_sendmsg(struct trace_event_raw_sys_enter *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	return enter_msg(CALL_SEND, (struct user_msghdr *)ctx->args[1]);
}
SEC("tracepoint/syscalls/sys_enter_recvmsg")
int weft_enter_recvmsg(struct trace_event_raw_sys_enter *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	return enter_msg(CALL_RECV, (struct user_msghdr *)ctx->args[1]);
}

SEC("tracepoint/syscalls/sys_exit_write")
int weft_exit_write(struct trace_event_raw_sys_exit *ctx) { return leave(ctx); }
SEC("tracepoint/syscalls/sys_exit_read")
int weft_exit_read(struct trace_event_raw_sys_exit *ctx) { return leave(ctx); }
SEC("tracepoint/syscalls/sys_exit_sendto")
int weft_exit_sendto(struct trace_event_raw_sys_exit *ctx) { return leave(ctx); }
SEC("tracepoint/syscalls/sys_exit_recvfrom")
int weft_exit_recvfrom(struct trace_event_raw_sys_exit *ctx) { return leave(ctx); }
SEC("tracepoint/syscalls/sys_exit_writev")
int weft_exit_writev(struct trace_event_raw_sys_exit *ctx) { return leave(ctx); }
SEC("tracepoint/syscalls/sys_exit_readv")
int weft_exit_readv(struct trace_event_raw_sys_exit *ctx) { return leave(ctx); }
SEC("tracepoint/syscalls/sys_exit_sendmsg")
int weft_exit_sendmsg(struct trace_event_raw_sys_exit *ctx) { return leave(ctx); }
SEC("tracepoint/syscalls/sys_exit_recvmsg")
int weft_exit_recvmsg(struct trace_event_raw_sys_exit *ctx) { return leave(ctx); }

/* ioctl(fd, cmd, arg): the JVM agent's mount protocol (mount.h). */
SEC("tracepoint/syscalls/sys_enter_ioctl")
int weft_enter_ioctl(struct trace_event_raw_sys_enter *ctx)
{
	handle_agent_ioctl((__u32)ctx->args[0], (__u32)ctx->args[1], ctx->args[2]);
	return 0;
}

/* ---- The socket path. */

SEC("sk_msg")
int weft_inject_sock(struct sk_msg_md *msg) { return inject(msg, true); }

#define PF_IO_WORKER 0x00000010
#define PF_KTHREAD 0x00200000
#define ENOTCONN 107

/* The user buffer of the socket call in progress, from its registers;
 * false for a call that names none weft reads (sendmmsg, io_uring,
 * sendfile and splice, a kernel thread's). */
static __always_inline bool call_buffer(struct pt_regs *r, bool send, struct user_buf *ub)
{
	long nr = r->orig_ax;
	ub->offset = 0;
	ub->iov_kernel = 0;
	if (nr == (send ? NR_WRITE : NR_READ) || nr == (send ? NR_SENDTO : NR_RECVFROM)) {
		ub->ptr = r->si;
		ub->iovcnt = 0;
		return true;
	}
	if (nr == (send ? NR_WRITEV : NR_READV)) {
		ub->ptr = r->si;
		ub->iovcnt = (__u32)r->dx;
		return ub->iovcnt != 0;
	}
	if (nr == (send ? NR_SENDMSG : NR_RECVMSG)) {
		struct user_msghdr m;
		if (bpf_probe_read_user(&m, sizeof(m), (void *)r->si) < 0 || !m.msg_iovlen)
			return false;
		ub->ptr = (__u64)m.msg_iov;
		ub->iovcnt = (__u32)m.msg_iovlen;
		return true;
	}
	return false;
}

/* File descriptor fd of the current task is socket sk: the call is the
 * process's own on that socket, not one the kernel makes on another while
 * serving it (a network file system's, say). */
static __always_inline bool fd_is_sock(struct task_struct *t, long fd, struct sock *sk)
{
	if (fd < 0)
		return false;
	/* t and sk are BTF pointers: direct loads, which the JIT makes
	 * fault-safe, rather than a helper call each. The array slot is at
	 * a variable offset, which only a helper may read. */
	struct files_struct *files = t->files;
	if (!files)
		return false;
	struct fdtable *fdt = files->fdt;
	if (!fdt || (__u64)fd >= fdt->max_fds)
		return false;
	struct file **fds = fdt->fd;
	struct file *f = 0;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) < 0 || !f)
		return false;
	struct socket *so = sk->sk_socket;
	return so && f == so->file;
}

/* The agent's note (mount.h): sendto(fd, note, sizeof note, ...) on an
 * unconnected AF_UNIX datagram socket, which failed with ENOTCONN. */
static __always_inline void agent_note(struct pt_regs *r, __u64 pid_tgid)
{
	if (r->orig_ax != NR_SENDTO || r->dx != sizeof(struct agent_note))
		return;
	struct agent_note n;
	if (bpf_probe_read_user(&n, sizeof(n), (void *)r->si) < 0 || n.magic != WEFT_NOTE_MAGIC)
		return;
	agent_packet(pid_tgid, n.op, n.arg);
}

static __always_inline int socket_call(void *ctx, struct sock *sk, int ret, int flags, bool send)
{
	/* A read that moved nothing (Go's reads until EAGAIN, any process's)
	 * has nothing to copy: only a slot refresh, below, needs it, and
	 * not even the process's lookup is made for it. */
	if (!send && ret <= 0 && !slots_in_use)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	/* Most sends (a server's) went through no sk_msg claim. */
	if (send && propagation_on)
		delete_present(&send_claims, &pid_tgid);
	/* Nor a send that moved nothing, once its claim is cleared, but for
	 * the Java agent's notes (AF_UNIX sends failing with ENOTCONN). */
	if (ret <= 0 && !slots_in_use && !(send && ret == -ENOTCONN))
		return 0;
	__u16 family = sk->__sk_common.skc_family;
	struct task_struct *t = bpf_get_current_task_btf();
	if (t->flags & (PF_KTHREAD | PF_IO_WORKER))
		return 0;
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!r)
		return 0;
	/* Any socket call brings the thread's key up to date with its slot,
	 * so that traces_ctx_v1 follows the thread's mounts closely. */
	refresh_slot((__u32)pid_tgid);
	if (family == AF_UNIX) {
		if (send && ret == -ENOTCONN)
			agent_note(r, pid_tgid);
		return 0;
	}
	if (ret <= 0 || (family != AF_INET && family != AF_INET6) || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	if (!send && (flags & MSG_PEEK))
		return 0;
	struct user_buf ub;
	if (!call_buffer(r, send, &ub) || !fd_is_sock(t, r->di, sk)) {
		count(WEFT_STAT_CALL_UNREADABLE);
		return 0;
	}
	emit_data(ctx, &emit_sock_progs, sk, send ? WEFT_DIR_EGRESS : WEFT_DIR_INGRESS, (__u32)ret, &ub, false, true);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(weft_sock_sent, struct sock *sk, int ret, int flags)
{
	return socket_call(ctx, sk, ret, flags, true);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(weft_sock_received, struct sock *sk, int ret, int flags)
{
	return socket_call(ctx, sk, ret, flags, false);
}
