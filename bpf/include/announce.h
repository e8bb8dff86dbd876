/* Runtime companions' announcements: Node.js and Python asyncio serve
 * many requests on one thread, so nothing the kernel sees names the
 * request an outgoing one works for; the runtime's own async context does.
 * weft's companion for each (pkg/nodeagent, pkg/pyagent) knows it: before
 * each outgoing request leaves, it asks for a path that cannot exist,
 *
 *     /dev/null/weft/IIIIIIIIOOOOOOOO
 *
 * IIIIIIII the incoming request's socket fd (ffffffff: no incoming request,
 * fffffffe: its incoming request is answered already), OOOOOOOO the
 * outgoing socket's fd, in hex: Node.js through fs.accessSync (libuv's
 * uv_fs_access(loop, req, path, mode, cb)), Python through os.access
 * (libc's access(path, mode)). A uprobe on that function, attached to the
 * process alone, turns it into the outgoing connection's conn_parent entry.
 * The call fails at once (ENOTDIR) and needs no syscall tracepoint.
 *
 * An HTTP/2 client stream shares its connection with other requests'
 * streams, so it is announced by its stream id instead, once it has one
 * and before its HEADERS leave (Node.js: ClientHttp2Session.request();
 * Python: httpcore's _send_request_headers):
 *
 *     /dev/null/weft/h2/IIIIIIIISSSSSSSS
 *
 * SSSSSSSS the stream id; it becomes a claim of that stream by the
 * announcing thread, which writes it (h2claim.h). Included by common.h. */
#ifndef WEFT_ANNOUNCE_H
#define WEFT_ANNOUNCE_H

#include "common.h"
#include "sockfd.h"

#define ANNOUNCE_PREFIX "/dev/null/weft/"
#define ANNOUNCE_PREFIX_LEN 15
#define ANNOUNCE_PATH_LEN (ANNOUNCE_PREFIX_LEN + 16)
#define ANNOUNCE_STREAM_PATH_LEN (ANNOUNCE_PREFIX_LEN + 3 + 16)
#define ANNOUNCE_NO_REQUEST 0xffffffffu
#define ANNOUNCE_ANSWERED 0xfffffffeu

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

/* The live request the incoming socket of fd `in` serves, in parent
 * (left zero when it has none, or when it cannot be told: counted). */
static __always_inline void announced_parent(__u32 in, struct span_ctx *parent)
{
	if (in == ANNOUNCE_ANSWERED) {
		count(WEFT_STAT_PARENT_STALE);
		return;
	}
	if (in == ANNOUNCE_NO_REQUEST)
		return;
	__u64 down = (__u64)fd_sock((__s32)in);
	struct serving *sv = down ? bpf_map_lookup_elem(&serving_sock, &down) : 0;
	if (!sv || !sv->pending) {
		count(WEFT_STAT_PARENT_STALE);
	} else if (sv->pending > 1) {
		/* Pipelined: the kernel holds only the newest one's ids. */
		count(WEFT_STAT_PARENT_AMBIGUOUS);
	} else {
		__builtin_memcpy(parent->trace_id, sv->trace_id, 16);
		__builtin_memcpy(parent->span_id, sv->span_id, 8);
		parent->trace_flags = sv->trace_flags;
	}
}

/* The announcement at user address path, if it is one. */
static __always_inline void announce(const void *upath)
{
	char path[ANNOUNCE_STREAM_PATH_LEN + 1] = {};
	/* A string read: the shorter form may end at the end of a page. */
	long len = bpf_probe_read_user_str(path, sizeof(path), upath);
	if (len != ANNOUNCE_PATH_LEN + 1 && len != ANNOUNCE_STREAM_PATH_LEN + 1)
		return;
	const char prefix[] = ANNOUNCE_PREFIX;
#pragma unroll
	for (int i = 0; i < ANNOUNCE_PREFIX_LEN; i++)
		if (path[i] != prefix[i])
			return;
	/* All zeros: decided, no parent (a root, or refused and counted). */
	struct span_ctx parent = {};
	__u32 in, out;
	if (len == ANNOUNCE_STREAM_PATH_LEN + 1) {
		const char *p = path + ANNOUNCE_PREFIX_LEN;
		__u32 stream;
		if (p[0] != 'h' || p[1] != '2' || p[2] != '/' || !hex32(p + 3, &in) || !hex32(p + 11, &stream))
			return;
		announced_parent(in, &parent);
		__u64 pid_tgid = bpf_get_current_pid_tgid();
		/* This thread writes the stream's HEADERS later in its loop. */
		h2_claim_thread(pid_tgid, stream, &parent);
		emit_h2_claim(pid_tgid >> 32, (__u32)pid_tgid, stream, &parent, NULL);
		return;
	}
	if (!hex32(path + ANNOUNCE_PREFIX_LEN, &in) || !hex32(path + ANNOUNCE_PREFIX_LEN + 8, &out))
		return;
	struct sock *up = fd_sock((__s32)out);
	if (!up)
		return;
	struct conn_key k = {};
	conn_key_of_sock(up, &k);
	announced_parent(in, &parent);
	bpf_map_update_elem(&conn_parent, &k, &parent, BPF_ANY);
}

/* Node.js: fs.accessSync -> uv_fs_access(loop, req, path, mode, cb). */
SEC("uprobe/uv_fs_access")
int weft_node_announce(struct pt_regs *ctx)
{
	if (mode_of(bpf_get_current_pid_tgid() >> 32) != WEFT_MODE_NODE)
		return 0;
	announce((const void *)ctx->dx);
	return 0;
}

/* Python: os.access -> access(path, mode). The process keeps its thread
 * mode: an announced connection's route wins over the thread rule. */
SEC("uprobe/access")
int weft_libc_announce(struct pt_regs *ctx)
{
	if (mode_of(bpf_get_current_pid_tgid() >> 32) != WEFT_MODE_THREAD)
		return 0;
	announce((const void *)ctx->di);
	return 0;
}

#endif
