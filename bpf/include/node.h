/* Node.js: one thread serves every request, so neither the thread nor
 * anything else the kernel sees names the request an outgoing one works
 * for. weft's companion script (pkg/nodeagent) knows, through
 * AsyncLocalStorage: before each outgoing request leaves, it calls
 * fs.accessSync on a path that cannot exist,
 *
 *     /dev/null/weft-node/IIIIIIIIOOOOOOOO
 *
 * IIIIIIII the incoming request's socket fd (ffffffff: no incoming request,
 * fffffffe: its incoming request is answered already), OOOOOOOO the
 * outgoing socket's fd, in hex. libuv's uv_fs_access(loop, req, path,
 * mode, cb) carries the path; this uprobe turns it into the outgoing
 * connection's conn_parent entry. The call fails at once (ENOTDIR) and
 * needs no syscall tracepoint. Included by common.h. */
#ifndef WEFT_NODE_H
#define WEFT_NODE_H

#include "common.h"
#include "sockfd.h"

#define NODE_PREFIX "/dev/null/weft-node/"
#define NODE_PREFIX_LEN 20
#define NODE_PATH_LEN (NODE_PREFIX_LEN + 16)
#define NODE_NO_REQUEST 0xffffffffu
#define NODE_ANSWERED 0xfffffffeu

/* Eight hex digits at p, or false. */
static __always_inline bool hex32(const char *p, __u32 *out)
{
	__u32 v = 0;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		char c = p[i];
		__u32 d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}

SEC("uprobe/uv_fs_access")
int weft_node_announce(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (mode_of(tgid) != WEFT_MODE_NODE)
		return 0;
	char path[NODE_PATH_LEN + 1] = {};
	if (bpf_probe_read_user(path, sizeof(path), (void *)ctx->dx) < 0 || path[NODE_PATH_LEN] != 0)
		return 0;
	const char prefix[] = NODE_PREFIX;
#pragma unroll
	for (int i = 0; i < NODE_PREFIX_LEN; i++)
		if (path[i] != prefix[i])
			return 0;
	__u32 in, out;
	if (!hex32(path + NODE_PREFIX_LEN, &in) || !hex32(path + NODE_PREFIX_LEN + 8, &out))
		return 0;
	struct sock *up = fd_sock((__s32)out);
	if (!up)
		return 0;
	struct conn_key k = {};
	conn_key_of_sock(up, &k);
	/* All zeros: decided, no parent (a root, or refused and counted). */
	struct span_ctx parent = {};
	if (in == NODE_ANSWERED) {
		count(WEFT_STAT_PARENT_STALE);
	} else if (in != NODE_NO_REQUEST) {
		__u64 down = (__u64)fd_sock((__s32)in);
		struct serving *sv = down ? bpf_map_lookup_elem(&serving_sock, &down) : 0;
		if (!sv || !sv->pending) {
			count(WEFT_STAT_PARENT_STALE);
		} else if (sv->pending > 1) {
			/* Pipelined: the kernel holds only the newest one's ids. */
			count(WEFT_STAT_PARENT_AMBIGUOUS);
		} else {
			__builtin_memcpy(parent.trace_id, sv->trace_id, 16);
			__builtin_memcpy(parent.span_id, sv->span_id, 8);
			parent.trace_flags = sv->trace_flags;
		}
	}
	bpf_map_update_elem(&conn_parent, &k, &parent, BPF_ANY);
	return 0;
}

#endif
