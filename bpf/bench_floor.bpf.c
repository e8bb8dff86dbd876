/* The least any sk_msg-based injection can cost: a sockops program that
 * puts every client connection of its cgroup into a sockhash and an
 * sk_msg program that passes every message untouched. The benchmark
 * (test/bench -modes floor) runs a sender under it to measure the kernel's
 * own sockmap path, which weft_inject cannot avoid. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define AF_INET 2
#define AF_INET6 10
#define SK_PASS 1

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 65535);
	__type(key, __u64);
	__type(value, __u64);
} floor_socks SEC(".maps");

SEC("sockops")
int floor_sockops(struct bpf_sock_ops *skops)
{
	if (skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB)
		return 1;
	if (skops->family != AF_INET && skops->family != AF_INET6)
		return 1;
	__u64 cookie = bpf_get_socket_cookie(skops);
	bpf_sock_hash_update(skops, &floor_socks, &cookie, BPF_ANY);
	return 1;
}

SEC("sk_msg")
int floor_pass(struct sk_msg_md *msg)
{
	return SK_PASS;
}
