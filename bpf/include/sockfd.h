/* The socket behind a file descriptor of the current process, and the
 * connection it is: for runtime hooks that know a request's sockets by
 * their fds (nginx, the Node.js companion). Included by common.h's hooks. */
#ifndef WEFT_SOCKFD_H
#define WEFT_SOCKFD_H

#include "common.h"

#define S_IFMT 00170000
#define S_IFSOCK 0140000

/* The socket behind file descriptor fd of the current process, or 0. */
static __always_inline struct sock *fd_sock(__s32 fd)
{
	if (fd < 0)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	if (!fdt || (__u32)fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = 0;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) < 0 || !f)
		return 0;
	if ((BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket *so = BPF_CORE_READ(f, private_data);
	return so ? BPF_CORE_READ(so, sk) : 0;
}

static __always_inline void conn_key_of_sock(struct sock *sk, struct conn_key *k)
{
	struct sock_common *c = &sk->__sk_common;
	k->family = BPF_CORE_READ(c, skc_family);
	k->local_port = BPF_CORE_READ(c, skc_num);
	k->remote_port = bpf_ntohs(BPF_CORE_READ(c, skc_dport));
	if (k->family == AF_INET6) {
		BPF_CORE_READ_INTO(&k->local_ip, c, skc_v6_rcv_saddr.in6_u.u6_addr32);
		BPF_CORE_READ_INTO(&k->remote_ip, c, skc_v6_daddr.in6_u.u6_addr32);
	} else {
		k->local_ip[0] = BPF_CORE_READ(c, skc_rcv_saddr);
		k->remote_ip[0] = BPF_CORE_READ(c, skc_daddr);
	}
}

#endif
