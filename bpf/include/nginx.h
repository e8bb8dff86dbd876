/* nginx: tie each upstream request to the downstream request it proxies.
 * A worker serves many requests on one thread, so the thread names none;
 * nginx itself knows, at the moment it picks the upstream connection.
 *
 * - ngx_http_upstream_init(r) starts the upstream part of downstream
 *   request r (its connection: r->connection->fd).
 * - Within it, ngx_event_connect_peer(pc) returns with pc->connection set:
 *   a fresh connection (NGX_OK, NGX_AGAIN) or one from a keepalive pool
 *   (NGX_DONE). That connection's next request works for r: conn_parent.
 *
 * Offsets read (stable since nginx 0.x, as its module ABI needs them):
 * ngx_http_request_t.connection at 8, ngx_connection_t.fd at 24,
 * ngx_peer_connection_t.connection at 0. Each read is checked: the
 * downstream socket must be one with a live request, the upstream fd a
 * socket. Retries outside ngx_http_upstream_init find no request and fall
 * back to the thread rule (ambiguous, so no parent). Included by common.h. */
#ifndef WEFT_NGINX_H
#define WEFT_NGINX_H

#include "common.h"
#include "sockfd.h"

#define NGX_REQUEST_CONNECTION 8
#define NGX_CONNECTION_FD 24
#define NGX_PEER_CONNECTION 0
#define NGX_OK 0
#define NGX_AGAIN -2
#define NGX_DONE -4

/* pid_tgid -> the downstream socket whose upstream is being set up. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} ngx_upstream_for SEC(".maps");

/* pid_tgid -> the ngx_peer_connection_t being connected. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} ngx_connecting SEC(".maps");

/* The fd of the ngx_connection_t at user address c. */
static __always_inline __s32 ngx_conn_fd(__u64 c)
{
	__s32 fd = -1;
	if (!c || bpf_probe_read_user(&fd, sizeof(fd), (void *)(c + NGX_CONNECTION_FD)) < 0)
		return -1;
	return fd;
}

SEC("uprobe/ngx_http_upstream_init")
int weft_ngx_upstream_init(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return 0;
	__u64 c = 0;
	if (bpf_probe_read_user(&c, sizeof(c), (void *)(ctx->di + NGX_REQUEST_CONNECTION)) < 0)
		return 0;
	struct sock *sk = fd_sock(ngx_conn_fd(c));
	__u64 down = (__u64)sk;
	struct serving *sv = bpf_map_lookup_elem(&serving_sock, &down);
	if (!sv || !sv->pending)
		return 0; /* no live request read on it: not a downstream we know */
	bpf_map_update_elem(&ngx_upstream_for, &pid_tgid, &down, BPF_ANY);
	return 0;
}

SEC("uretprobe/ngx_http_upstream_init")
int weft_ngx_upstream_init_ret(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&ngx_upstream_for, &pid_tgid);
	bpf_map_delete_elem(&ngx_connecting, &pid_tgid);
	return 0;
}

SEC("uprobe/ngx_event_connect_peer")
int weft_ngx_connect_peer(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&ngx_upstream_for, &pid_tgid))
		return 0;
	__u64 pc = ctx->di;
	bpf_map_update_elem(&ngx_connecting, &pid_tgid, &pc, BPF_ANY);
	return 0;
}

SEC("uretprobe/ngx_event_connect_peer")
int weft_ngx_connect_peer_ret(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 *pc = bpf_map_lookup_elem(&ngx_connecting, &pid_tgid);
	if (!pc)
		return 0;
	__u64 peer = *pc;
	bpf_map_delete_elem(&ngx_connecting, &pid_tgid);
	int rc = (int)ctx->ax;
	if (rc != NGX_OK && rc != NGX_AGAIN && rc != NGX_DONE)
		return 0;
	__u64 *down = bpf_map_lookup_elem(&ngx_upstream_for, &pid_tgid);
	if (!down)
		return 0;
	struct serving *sv = bpf_map_lookup_elem(&serving_sock, down);
	if (!sv || !sv->pending)
		return 0;
	__u64 c = 0;
	if (bpf_probe_read_user(&c, sizeof(c), (void *)(peer + NGX_PEER_CONNECTION)) < 0)
		return 0;
	struct sock *up = fd_sock(ngx_conn_fd(c));
	if (!up)
		return 0;
	struct conn_key k = {};
	conn_key_of_sock(up, &k);
	struct span_ctx parent = {.trace_flags = sv->trace_flags};
	__builtin_memcpy(parent.trace_id, sv->trace_id, 16);
	__builtin_memcpy(parent.span_id, sv->span_id, 8);
	bpf_map_update_elem(&conn_parent, &k, &parent, BPF_ANY);
	return 0;
}

#endif
