/* Tracepoint attach path, for kernels without kprobes: syscall entry saves
 * the user buffer, sock:sock_{send,recv}_length (which fire only for
 * sockets, inside the syscall) name the socket, syscall exit emits. */
#include "include/common.h"

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
		count(WEFT_STAT_LOST_STASH);
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
	if (f->sk && ret > 0 && !f->peek && (f->buf.iovcnt || f->buf.ptr)) {
		struct user_buf ub = f->buf;
		__u8 dir = f->kind == CALL_SEND ? WEFT_DIR_EGRESS : WEFT_DIR_INGRESS;
		emit_data(ctx, (struct sock *)f->sk, dir, (__u32)ret, &ub);
	}
	bpf_map_delete_elem(&inflight_calls, &pid_tgid);
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
