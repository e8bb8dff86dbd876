/* Maps and helpers shared by both attach paths (tracepoint and kprobe). */
#ifndef WEFT_COMMON_H
#define WEFT_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "weft.h"
#include "tracectx.h"

/* True when the loader resolved the __weak __ksym sym on this kernel
 * (libbpf's macro, missing from older libbpf headers). */
#ifndef bpf_ksym_exists
#define bpf_ksym_exists(sym) ({ _Static_assert(!__builtin_constant_p(!!sym), #sym " must be __weak"); !!sym; })
#endif

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define MSG_PEEK 2
#define TCP_CLOSE 7
#define MAX_IOVS 8

/* x86-64 system call numbers of the socket calls whose buffers weft
 * reads from their registers (the socket-only tracepoint path). */
#define NR_READ 0
#define NR_WRITE 1
#define NR_READV 19
#define NR_WRITEV 20
#define NR_SENDTO 44
#define NR_RECVFROM 45
#define NR_SENDMSG 46
#define NR_RECVMSG 47

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Referenced so that the enums reach BTF and bpf2go emits them for Go. */
const enum weft_event_kind *unused_event_kind __attribute__((unused));
const enum weft_direction *unused_direction __attribute__((unused));
const enum weft_stat *unused_stat __attribute__((unused));
const enum weft_ctx_kind *unused_ctx_kind __attribute__((unused));
const enum weft_proc_mode *unused_proc_mode __attribute__((unused));
const enum weft_capture *unused_capture __attribute__((unused));
const struct proc_info *unused_proc_info __attribute__((unused));

/* Set by user space before load. */
volatile const __u32 capture_max = 256;
volatile const __u32 self_pid = 0;   /* weft never traces itself */
volatile const __u8 trace_all = 0;   /* every process but weft */
volatile const __u8 notify_exec = 0; /* report every exec: user space selects by exe name */
/* Bit n: some selected cgroup sits at level n of the cgroup v2 tree. */
volatile const __u32 cgroup_levels = 0;

enum pid_filter_value {
	PID_TRACED = 1,
	PID_IGNORED = 2,
	PID_TRACED_BY_CGROUP = 3, /* found in a selected cgroup: checked again if it moves */
};

/* tgid -> enum pid_filter_value, kept by user space (and by fork/exit). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} pid_filter SEC(".maps");

/* cgroup v2 id -> 1: a selected cgroup; processes in it or below it are
 * traced. Kept by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u8);
} cgroup_filter SEC(".maps");

/* tgid -> 1: a traced JVM whose sockets retry a read that fails with
 * EAGAIN (JDK 13+), so its blocking sockets may join the injection
 * sockhash (see connects_blocking). Kept by user space; gone at exit and
 * exec. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} eagain_retry SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/* Sockets weft has reported data for, so that their close is reported;
 * the value notes a reset from the peer, for the close to say who ended
 * the connection. A plain hash, not an LRU: every TCP socket passes
 * TCP_CLOSE, where its entry goes, and a full table must say so
 * (WEFT_STAT_SOCK_TABLE_FULL) rather than drop another socket's entry,
 * and with it that socket's close, unseen. User space sets the size. */
#define SOCK_TRACKED 1
#define SOCK_RESET_BY_PEER 2
/* Data events of the socket (its bytes, or its TLS plaintext) that the
 * full ring buffer dropped since the last one user space got: the next
 * says so (event_header.gap). */
#define SOCK_GAP 4
#define SOCK_GAP_TLS 8
/* The socket carries a TLS connection's ciphertext (tls.h): its own bytes
 * are never copied, in a call of the library or outside one. */
#define SOCK_CIPHER 16
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} tracked_socks SEC(".maps");

int note_traced_server(__u64 sk); /* h2peer.h */

static __always_inline void track_new_sock(__u64 sk)
{
	__u8 one = SOCK_TRACKED;
	long err = bpf_map_update_elem(&tracked_socks, &sk, &one, BPF_NOEXIST);
	if (err == -7 /* E2BIG */)
		count(WEFT_STAT_SOCK_TABLE_FULL);
	else if (err == 0)
		note_traced_server(sk);
}

/* Tracks sk for its close. Looked up first: a lookup takes no lock, and
 * almost every call is on a socket tracked already. */
static __always_inline void track_sock(__u64 sk)
{
	if (bpf_map_lookup_elem(&tracked_socks, &sk))
		return;
	track_new_sock(sk);
}

/* Sockets user space found to carry another protocol than HTTP/1.x:
 * their data is not copied any more. The value is the connection's local
 * port << 16 | remote port: user space decides after the fact, when the
 * socket may have closed (and its entry gone with it) and another socket
 * taken its address, which must not be skipped. An LRU: an entry lost
 * costs only copies user space will ignore. Deleted at TCP_CLOSE. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
} not_http_socks SEC(".maps");

/* Scratch space for building one event: too big for the BPF stack. The data
 * area is larger than the capture limit so that a masked offset plus a
 * masked length always stays inside it (the verifier needs both bounded). */
/* A user buffer: one iovec, or the array of iovecs. */
struct user_buf {
	__u64 ptr;    /* buffer address, or iovec array address */
	__u64 offset; /* bytes to skip in the first buffer (kprobe iov_iter) */
	__u32 iovcnt; /* 0: ptr is a plain buffer; else number of iovecs */
	__u32 iov_kernel; /* the iovec array is kernel memory: the copy the
	                   * kernel made of the caller's (a kprobe's iov_iter) */
};

/* What a data event is made from, left by the program that saw the call
 * for the one that emits it (emit_data). */
struct emit_args {
	struct user_buf ub;
	__u64 sk;
	__u32 bytes;
	__u8 dir;
	__u8 tls;   /* plaintext of a TLS call, not the socket's own bytes */
	__u8 addrs; /* the caller filled the event's addresses */
	__u8 _pad;
};

struct event_buf {
	struct event_header hdr;
	__u8 data[3 * WEFT_MAX_CAPTURE];
	/* The TLS link of the request this event starts (tlslink.h). */
	struct span_ctx tls_link;
	__u32 tls_linked;
	__u32 _pad;
	struct emit_args args;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event_buf);
} scratch SEC(".maps");

/* User space drains the ring buffer on a short timer, so producers do not
 * wake it for every event (a wakeup per event costs more than the event);
 * only a filling buffer forces a wakeup, before it can overflow. */
#define WAKEUP_BYTES (1 << 20)

static __always_inline __u64 wakeup_flags(void)
{
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline bool traced_value(const __u32 *v)
{
	return *v == PID_TRACED || *v == PID_TRACED_BY_CGROUP;
}

/* The current task is in a selected cgroup or below one. */
static __always_inline bool in_selected_cgroup(void)
{
	for (int level = 0; level < 32; level++) {
		if (!(cgroup_levels & (1u << level)))
			continue;
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);
		if (id && bpf_map_lookup_elem(&cgroup_filter, &id))
			return true;
	}
	return false;
}

/* Whether process tgid is traced, from what user space and fork/exit
 * wrote down only: for programs that may run outside the process. */
static __always_inline bool pid_traced_known(__u32 tgid)
{
	if (tgid == self_pid)
		return false;
	__u32 *v = bpf_map_lookup_elem(&pid_filter, &tgid);
	if (v)
		return traced_value(v);
	return trace_all;
}

/* Whether process tgid is traced. Called in tgid's own context, it also
 * finds a process of a selected cgroup that nothing has noted yet (one
 * started or moved there) and notes it, so that it is traced from its
 * first call, before user space hears of it. (Selecting cgroups is
 * selecting: trace_all is off then.) */
static __always_inline bool pid_traced(__u32 tgid)
{
	if (pid_traced_known(tgid))
		return true;
	if (!cgroup_levels || tgid == self_pid || tgid != bpf_get_current_pid_tgid() >> 32)
		return false;
	if (bpf_map_lookup_elem(&pid_filter, &tgid) || !in_selected_cgroup())
		return false; /* noted as not traced, or outside */
	__u32 by_cgroup = PID_TRACED_BY_CGROUP;
	bpf_map_update_elem(&pid_filter, &tgid, &by_cgroup, BPF_NOEXIST);
	return true;
}

static __always_inline void emit_small(__u8 kind, __u64 sock_id, __u32 pid, __u32 tid, __u8 dir, __u32 bytes,
				       __u64 wake);

/* A JVM agent's packet (mount.h), op and argument, from the current
 * thread of a traced process. */
static __always_inline void agent_packet(__u64 pid_tgid, __u8 op, __u64 val)
{
	__u32 tid = (__u32)pid_tgid;
	switch (op) {
	case WEFT_OP_UNMOUNT:
		bpf_map_delete_elem(&thread_key, &tid);
		traces_ctx_sync(pid_tgid, tid);
		break;
	case WEFT_OP_MOUNT: {
		if (!(val & 0x7fffffff)) { /* no usable id: a malformed mount */
			count(WEFT_STAT_BAD_PACKETS);
			return;
		}
		__u32 k = logical_key(val);
		mount_key(tid, k);
		traces_ctx_sync(pid_tgid, k);
		break;
	}
	case WEFT_OP_PARENT: {
		struct thread_link link = { .tid = (__u32)val };
		if (!link.tid || link.tid == tid) {
			count(WEFT_STAT_BAD_PACKETS);
			return;
		}
		bpf_map_update_elem(&thread_parent, &tid, &link, BPF_ANY);
		traces_ctx_sync(pid_tgid, correlation_key(tid));
		break;
	}
	case WEFT_OP_SLOT:
		if (val) {
			slots_in_use = 1;
			bpf_map_update_elem(&thread_slot, &tid, &val, BPF_ANY);
			refresh_slot(tid);
		} else {
			forget_thread(tid);
			traces_ctx_sync(pid_tgid, tid);
		}
		break;
	default:
		count(WEFT_STAT_BAD_PACKETS);
		return;
	}
	count(WEFT_STAT_AGENT_PACKETS);
	/* A process that speaks the protocol says itself what its threads
	 * work for: its mounted ids rule, whatever its runtime. */
	__u32 tgid = pid_tgid >> 32;
	struct proc_info *cur = proc_of(tgid);
	if (!cur || cur->mode != WEFT_MODE_AGENT) {
		/* What the kernel side noted so far stays noted. */
		struct proc_info agent = {.mode = WEFT_MODE_AGENT};
		if (cur) {
			agent.clients = cur->clients;
			agent.tls = cur->tls;
			agent.h2 = cur->h2;
			agent.calls_out = cur->calls_out;
		}
		bpf_map_update_elem(&proc_mode, &tgid, &agent, BPF_ANY);
		/* Its agent's library is mapped now: user space probes it
		 * (jvmtls.h). */
		emit_small(WEFT_EV_AGENT, 0, tgid, tid, 0, 0, BPF_RB_FORCE_WAKEUP);
	}
}

/* OBI's packet: ioctl(0, WEFT_IOCTL_CMD, packet) from a traced process.
 * Anything else, or a packet that cannot be read, is left alone. */
static __always_inline void handle_agent_ioctl(__u32 fd, __u32 cmd, __u64 arg)
{
	if (fd != 0 || cmd != WEFT_IOCTL_CMD || !arg)
		return;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return;
	__u8 op = 0;
	if (bpf_probe_read_user(&op, sizeof(op), (void *)arg) < 0) {
		count(WEFT_STAT_BAD_PACKETS);
		return;
	}
	__u64 val = 0;
	if (op != WEFT_OP_UNMOUNT && bpf_probe_read_user(&val, sizeof(val), (void *)(arg + 1)) < 0) {
		count(WEFT_STAT_BAD_PACKETS);
		return;
	}
	agent_packet(pid_tgid, op, val);
}

/* The same for a socket the program got as a BTF pointer (a tp_btf
 * argument): loads the JIT makes fault-safe, not a helper call each. */
static __always_inline void fill_addrs_btf(struct event_header *h, struct sock *sk)
{
	struct sock_common *c = &sk->__sk_common;
	h->family = c->skc_family;
	h->sport = c->skc_num;
	h->dport = bpf_ntohs(c->skc_dport);
	if (h->family == AF_INET6) {
		__builtin_memcpy(h->saddr, c->skc_v6_rcv_saddr.in6_u.u6_addr8, 16);
		__builtin_memcpy(h->daddr, c->skc_v6_daddr.in6_u.u6_addr8, 16);
	} else {
		__u32 saddr = c->skc_rcv_saddr, daddr = c->skc_daddr;
		__builtin_memcpy(h->saddr, &saddr, 4);
		__builtin_memcpy(h->daddr, &daddr, 4);
	}
}

extern void *bpf_rdonly_cast(const void *obj__ign, __u32 btf_id__k) __weak __ksym;

static __always_inline void fill_addrs(struct event_header *h, struct sock *sk)
{
	/* A socket cast to its kernel type (6.2+) is read with plain loads,
	 * as in the BTF programs: five helper calls fewer per event. */
	if (bpf_ksym_exists(bpf_rdonly_cast)) {
		fill_addrs_btf(h, bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct sock)));
		return;
	}
	struct sock_common *c = &sk->__sk_common;
	h->family = BPF_CORE_READ(c, skc_family);
	h->sport = BPF_CORE_READ(c, skc_num);
	h->dport = bpf_ntohs(BPF_CORE_READ(c, skc_dport));
	if (h->family == AF_INET6) {
		BPF_CORE_READ_INTO(&h->saddr, c, skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&h->daddr, c, skc_v6_daddr.in6_u.u6_addr8);
	} else {
		BPF_CORE_READ_INTO(&h->saddr, c, skc_rcv_saddr);
		BPF_CORE_READ_INTO(&h->daddr, c, skc_daddr);
	}
}

/* Masks v with an instruction clang cannot move or drop, so the verifier
 * sees the bound on the very register that is used afterwards. */
#define BOUND(v, mask) asm volatile("%[x] &= " #mask : [x] "+r"(v))

/* Copies up to want bytes from one user buffer to data[off..]. */
static __always_inline __u32 copy_chunk(struct event_buf *e, __u64 off, __u64 src, __u64 len, __u64 want)
{
	if (len > want)
		len = want;
	if (len == 0)
		return 0;
	BOUND(off, 0xfff);  /* < WEFT_MAX_CAPTURE */
	BOUND(len, 0x1fff); /* < 2 * WEFT_MAX_CAPTURE */
	if (bpf_probe_read_user(&e->data[off], len, (void *)src) < 0)
		return 0;
	return len;
}

__noinline __u32 copy_payload(struct event_buf *e, const struct user_buf *ub, __u32 total)
{
	if (!e || !ub)
		return 0;
	__u64 want = total < capture_max ? total : capture_max;
	if (want > WEFT_MAX_CAPTURE)
		want = WEFT_MAX_CAPTURE;
	if (ub->iovcnt == 0)
		return copy_chunk(e, 0, ub->ptr + ub->offset, want, want);

	__u32 got = 0;
	__u64 skip = ub->offset;
	for (int i = 0; i < MAX_IOVS; i++) {
		if (i >= ub->iovcnt || got >= want)
			break;
		struct iovec iov;
		void *at = (void *)(ub->ptr + i * sizeof(iov));
		long err = ub->iov_kernel ? bpf_probe_read_kernel(&iov, sizeof(iov), at)
					  : bpf_probe_read_user(&iov, sizeof(iov), at);
		if (err < 0)
			break;
		__u64 base = (__u64)iov.iov_base, len = iov.iov_len;
		if (skip) {
			if (skip >= len) {
				skip -= len;
				continue;
			}
			base += skip;
			len -= skip;
			skip = 0;
		}
		__u32 n = copy_chunk(e, got, base, len, want - got);
		if (n == 0)
			break;
		got += n;
	}
	return got;
}

/* A global function: the verifier checks it once, on its own, rather than
 * once per path through copy_payload's loop (which multiplied the states of
 * the two: half a million instructions per program, seconds of start-up). */
__noinline int trace_context(struct event_buf *e, __u32 n, __u64 pid_tgid, struct proc_info *pi)
{
	if (!e)
		return 0;
	BOUND(n, 0x1fff);
	assign_trace_context(&e->hdr, e->data, n, pid_tgid, pi, &e->tls_link, e->tls_linked);
	return 0;
}

#include "tls.h"
#include "h2walk.h"
#include "h2peer.h"
#include "h2link.h"
#include "h2claim.h"

/* Emits one data event into scratch buffer e: header plus the first
 * capture_max bytes (or an HTTP/2 connection's frames, h2walk.h). addrs:
 * the caller filled the header's addresses already. Inlined once per
 * program type, in the program emit_data tail-calls. */
static __always_inline void emit_body(struct event_buf *e, struct sock *sk, __u8 dir, __u32 bytes,
				      const struct user_buf *ub, bool tls, bool addrs)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct proc_info *pi = proc_of(pid_tgid >> 32);
	if (!tls) {
		if (tls_nested(pi, pid_tgid, (__u64)sk)) {
			/* Ciphertext: the TLS call reports its plaintext. The
			 * socket is tracked all the same, for its close. */
			track_sock((__u64)sk);
			return;
		}
		tls_bio_socket_call(pi, pid_tgid, (__u64)sk, dir, ub, bytes);
	}
	/* The plaintext of a TLS socket is another stream than its bytes on
	 * the wire (a handshake outside the calls, say): keyed apart. */
	__u64 sid = tls ? TLS_SOCK_KEY(sk) : (__u64)sk;
	struct event_header *h = &e->hdr;
	h->ts_ns = bpf_ktime_get_ns();
	h->sock_id = (__u64)sk;
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->key = correlation_key(h->tid);
	h->bytes = bytes;
	h->kind = WEFT_EV_DATA;
	h->dir = dir;
	h->tls = tls;
	if (!addrs) {
		__builtin_memset(h->saddr, 0, sizeof(h->saddr));
		__builtin_memset(h->daddr, 0, sizeof(h->daddr));
		fill_addrs(h, sk);
	}
	/* Checked once the ports are in the event (no stack: emit_data's
	 * frame is in every socket program, near older verifiers' limit). */
	__u32 *marked = bpf_map_lookup_elem(&not_http_socks, &sid);
	if (marked) {
		if (*marked == ((__u32)h->sport << 16 | h->dport)) {
			count(WEFT_STAT_NOT_HTTP_SKIPPED);
			return;
		}
		/* Marked for a socket that closed first: another is at its address. */
		bpf_map_delete_elem(&not_http_socks, &sid);
	}

	h->capture = WEFT_CAP_PREFIX;
	/* A process weft has not classified yet always asks. */
	struct h2_walk *h2 = !pi || pi->h2 ? h2_lookup(sid, dir) : NULL;
	__u64 n = 0;
	if (!h2) {
		n = copy_payload(e, ub, bytes);
		if (n == 0 && bytes > 0)
			count(WEFT_STAT_LOST_READ);
		h2 = h2_detect(e, pi, sid, dir, n, bytes);
	}
	if (h2) {
		n = h2_compact(e, ub, h2, bytes);
		h->capture = h2->cut ? WEFT_CAP_H2_CUT : WEFT_CAP_H2;
	}
	BOUND(n, 0x1fff);
	h->captured = n;
	h->ctx_kind = WEFT_CTX_NONE;
	h->trace_flags = 0;
	__builtin_memset(h->trace_id, 0, sizeof(h->trace_id));
	__builtin_memset(h->span_id, 0, sizeof(h->span_id));
	__builtin_memset(h->parent_id, 0, sizeof(h->parent_id));
	__builtin_memset(h->more_span_ids, 0, sizeof(h->more_span_ids));
	h->n_more = 0;
	e->tls_linked = 0;
	if (!h2) { /* HTTP/2 streams get their spans in user space */
		/* A read may also end a method begun by a short read before it
		 * (start_prefixes): Go's server reads one byte ahead. */
		if (tls && (is_request_start(e->data, n) ||
			    (dir == WEFT_DIR_INGRESS && bpf_map_lookup_elem(&start_prefixes, &h->sock_id))))
			e->tls_linked = dir == WEFT_DIR_INGRESS ? tls_link_server(h, &e->tls_link) : tls_link_client(h);
		trace_context(e, n, pid_tgid, pi);
	} else {
		h2_stream_parent(h);
	}
	/* The lookup track_sock would make, made before the output: the
	 * event says whether the socket's stream lost events before it. */
	__u64 skey = (__u64)sk;
	__u8 gap_bit = tls ? SOCK_GAP_TLS : SOCK_GAP;
	__u8 *tracked = bpf_map_lookup_elem(&tracked_socks, &skey);
	h->gap = tracked && (*tracked & gap_bit);
	if (bpf_ringbuf_output(&events, e, sizeof(*h) + n, wakeup_flags()) < 0) {
		count_drop(WEFT_STAT_LOST_RINGBUF);
		/* User space would pair what follows with what it saw before
		 * (a response with another request). Not atomic (the value is
		 * a byte): a reset, or another thread's gap, noted on the same
		 * socket at the same instant on another CPU can be lost. */
		if (tracked)
			*tracked |= gap_bit;
		/* The walk went past frames user space will never see: its
		 * framing and HPACK table would go on from the wrong place.
		 * The connection's next event says it is cut. */
		if (h2 && !h2->cut) {
			h2->cut = 1;
			count(WEFT_STAT_H2_CUT);
		}
		return;
	}
	count(WEFT_STAT_EVENTS);
	if (!tracked)
		track_new_sock(skey);
	else if (h->gap)
		*tracked &= ~gap_bit;
}

/* The data path's programs hand their events to one program per program
 * type (a tail call may only enter a program of its caller's type), which
 * inlines emit_body: the verifier walks its ~170,000 instructions once
 * per type instead of once per program that sees a call. Each array holds
 * that program at index 0; user space fills it after the load. */
#define EMIT_PROG_ARRAY(name)                             \
	struct {                                          \
		__uint(type, BPF_MAP_TYPE_PROG_ARRAY);    \
		__uint(max_entries, 1);                   \
		__type(key, __u32);                       \
		__type(value, __u32);                     \
	} name SEC(".maps")

/* kprobes, kretprobes and uprobes; uprobe_multi programs, whose attach
 * type differs (the kernel requires a tail call's to match) */
EMIT_PROG_ARRAY(emit_probe_progs);
EMIT_PROG_ARRAY(emit_multi_progs);

/* Emits one data event (emit_body) through the emitting program in
 * progs, of the caller's type: the arguments wait in the scratch buffer,
 * which only this CPU uses until the event is out. sk_btf: sk is a BTF
 * pointer (the socket tracepoints' argument), whose addresses are loaded
 * here, directly. Must be the caller's last act: a tail call does not
 * return. */
static __always_inline void emit_data(void *ctx, void *progs, struct sock *sk, __u8 dir, __u32 bytes,
				      const struct user_buf *ub, bool tls, bool sk_btf)
{
	__u32 zero = 0;
	struct event_buf *e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return;
	e->args.ub = *ub;
	e->args.sk = (__u64)sk;
	e->args.bytes = bytes;
	e->args.dir = dir;
	e->args.tls = tls;
	e->args.addrs = sk_btf;
	if (sk_btf) {
		__builtin_memset(e->hdr.saddr, 0, sizeof(e->hdr.saddr));
		__builtin_memset(e->hdr.daddr, 0, sizeof(e->hdr.daddr));
		fill_addrs_btf(&e->hdr, sk);
	}
	bpf_tail_call(ctx, progs, 0);
	count_drop(WEFT_STAT_LOST_EMIT);
}

/* The body of an emitting program: the event emit_data left. The
 * buffer's description stays in the map: 6.1's verifier allows the
 * program and its calls 512 bytes of stack together, and emit_body takes
 * nearly all. */
static __always_inline int emit_stashed(void)
{
	__u32 zero = 0;
	struct event_buf *e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return 0;
	emit_body(e, (struct sock *)e->args.sk, e->args.dir, e->args.bytes, &e->args.ub, e->args.tls, e->args.addrs);
	return 0;
}

SEC("kprobe")
int weft_emit_probe(struct pt_regs *ctx)
{
	return emit_stashed();
}

SEC("uprobe.multi")
int weft_emit_multi(struct pt_regs *ctx)
{
	return emit_stashed();
}

/* wake: BPF_RB_FORCE_WAKEUP for what user space must act on at once
 * (an exec it may select), else wakeup_flags(). */
static __always_inline void emit_small_gap(__u8 kind, __u64 sock_id, __u32 pid, __u32 tid, __u8 dir, __u32 bytes,
					   __u64 wake, __u8 gap)
{
	struct event_header *h = bpf_ringbuf_reserve(&events, sizeof(*h), 0);
	if (!h) {
		count_drop(WEFT_STAT_LOST_RINGBUF);
		return;
	}
	__builtin_memset(h, 0, sizeof(*h));
	h->ts_ns = bpf_ktime_get_ns();
	h->sock_id = sock_id;
	h->pid = pid;
	h->tid = tid;
	h->key = tid;
	h->kind = kind;
	h->dir = dir;
	h->bytes = bytes;
	h->gap = gap;
	bpf_ringbuf_submit(h, wake);
	count(WEFT_STAT_EVENTS);
}

static __always_inline void emit_small(__u8 kind, __u64 sock_id, __u32 pid, __u32 tid, __u8 dir, __u32 bytes,
				       __u64 wake)
{
	emit_small_gap(kind, sock_id, pid, tid, dir, bytes, wake, 0);
}

/* ---- Process life cycle: shared by both paths (tracepoints exist everywhere). */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(weft_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	if (ptgid == ctgid) { /* a new thread, not a new process */
		if (pid_traced(ptgid)) {
			__u32 ctid = BPF_CORE_READ(child, pid);
			struct thread_link link = {
				.tid = BPF_CORE_READ(parent, pid),
				.since_ns = bpf_ktime_get_ns(),
			};
			bpf_map_update_elem(&thread_parent, &ctid, &link, BPF_ANY);
		}
		return 0;
	}
	__u32 *v = bpf_map_lookup_elem(&pid_filter, &ptgid);
	if (v && traced_value(v)) {
		__u32 traced = *v; /* a child starts in its parent's cgroup */
		bpf_map_update_elem(&pid_filter, &ctgid, &traced, BPF_ANY);
		/* The same program, but a Go child has none of the parent's
		 * per-process uprobes: it is followed only by thread. */
		struct proc_info *pi = proc_of(ptgid);
		if (pi) {
			struct proc_info info = *pi;
			if (info.mode == WEFT_MODE_GO)
				info.mode = WEFT_MODE_REFUSE;
			bpf_map_update_elem(&proc_mode, &ctgid, &info, BPF_ANY);
			/* A child that goes on running its parent's program (nginx's
			 * workers, pre-fork servers) needs its own hooks: told now,
			 * before it runs. A vfork child only execs (or exits), and
			 * its exec is reported. */
			if (!BPF_CORE_READ(child, vfork_done))
				emit_small(WEFT_EV_FORK, 0, ctgid, ptgid, 0, 0, BPF_RB_FORCE_WAKEUP);
		}
	}
	return 0;
}

/* Reported for every process when user space selects by executable, and
 * for traced processes always: their identity (service name) changes. */
SEC("tracepoint/sched/sched_process_exec")
int weft_exec(void *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (tgid == self_pid)
		return 0;
	if (!notify_exec && !pid_traced(tgid))
		return 0;
	bpf_map_delete_elem(&eagain_retry, &tgid); /* another program now */
	bpf_map_delete_elem(&proc_mode, &tgid);
	/* Selection by executable decides on this event; classifying the
	 * process before its first request needs it read now, not at the
	 * next drain. */
	emit_small(WEFT_EV_EXEC, 0, tgid, (__u32)pid_tgid, 0, 0, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int weft_exit(void *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!pid_traced(tgid))
		return 0;
	__u32 tid = (__u32)pid_tgid;
	forget_thread(tid);
	bpf_map_delete_elem(&thread_parent, &tid);
	traces_ctx_clear(pid_tgid);
	if (tgid != tid) /* a thread, not the process */
		return 0;
	bpf_map_delete_elem(&pid_filter, &tgid);
	bpf_map_delete_elem(&eagain_retry, &tgid);
	bpf_map_delete_elem(&proc_mode, &tgid);
	emit_small(WEFT_EV_EXIT, 0, tgid, tgid, 0, 0, wakeup_flags());
	return 0;
}

/* A process moved to another cgroup: one found in a selected cgroup is
 * judged again at its next call in its own context. */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(weft_cgroup_move, struct cgroup *dst, const char *path, struct task_struct *task, bool threadgroup)
{
	if (!cgroup_levels)
		return 0;
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *v = bpf_map_lookup_elem(&pid_filter, &tgid);
	if (v && *v == PID_TRACED_BY_CGROUP)
		bpf_map_delete_elem(&pid_filter, &tgid);
	return 0;
}

/* The close of a socket weft reported data for. This fires in softirq
 * context too, so the current task says nothing: the socket map decides.
 * The event's dir says who ended the connection: INGRESS the peer (its FIN
 * came first, or its reset), EGRESS this side; its bytes, how much the
 * peer had sent that this side never read. A response cut short by the
 * peer is an error; one the local client stopped reading is its choice. */
SEC("tracepoint/sock/inet_sock_set_state")
int weft_sock_state(struct trace_event_raw_inet_sock_set_state *ctx)
{
	if (ctx->protocol != IPPROTO_TCP)
		return 0;
	/* Each field read once, here: clang otherwise shares an offset
	 * pointer into ctx between branches, which the verifier refuses. */
	int to = ctx->newstate, from = ctx->oldstate;
	if (to == TCP_SYN_SENT || (to == TCP_ESTABLISHED && from == TCP_SYN_SENT)) {
		note_traced_client(ctx, to);
		return 0;
	}
	if (to != TCP_CLOSE && !(from == TCP_ESTABLISHED && (to == TCP_FIN_WAIT1 || to == TCP_CLOSE_WAIT)))
		return 0;
	__u64 id = (__u64)ctx->skaddr;
	__u8 *v = bpf_map_lookup_elem(&tracked_socks, &id);
	if (!v)
		return 0;
	if (to != TCP_CLOSE) {
		/* Who closed first, known before the process may exit: a close
		 * here can wait for the peer (FIN_WAIT2) past the process's end. */
		emit_small(WEFT_EV_FIRST_FIN, id, 0, 0, to == TCP_CLOSE_WAIT ? WEFT_DIR_INGRESS : WEFT_DIR_EGRESS, 0,
			   wakeup_flags());
		return 0;
	}
	/* The kernel also "receives a reset" (tcp_reset) to abort a socket
	 * closed here that gets data (FIN_WAIT*): only an established one was
	 * reset by the peer. */
	bool by_peer = ((*v & SOCK_RESET_BY_PEER) && from == TCP_ESTABLISHED) || from == TCP_CLOSE_WAIT ||
		       from == TCP_LAST_ACK;
	/* Received but never read: copied_seq stops short of rcv_nxt, whose
	 * last step is the peer's FIN once one came (and was not read). */
	struct tcp_sock *tp = (struct tcp_sock *)ctx->skaddr;
	__u32 unread = BPF_CORE_READ(tp, rcv_nxt) - BPF_CORE_READ(tp, copied_seq);
	/* Events lost before the close: what was in flight cannot be ended. */
	__u8 gap = (*v & SOCK_GAP ? 1 : 0) | (*v & SOCK_GAP_TLS ? 2 : 0);
	if (unread && (from == TCP_CLOSE_WAIT || from == TCP_LAST_ACK))
		unread--;
	bpf_map_delete_elem(&tracked_socks, &id);
	forget_traced_client(ctx);
	/* Most sockets are in none of these: a lookup locks nothing. */
	h2_client_closed(id);
	delete_present(&not_http_socks, &id);
	h2_forget(id);
	__u64 plain = TLS_SOCK_KEY(id);
	delete_present(&not_http_socks, &plain);
	delete_present(&tls_bio_socks, &id);
	h2_forget(plain);
	serving_closed(id);
	emit_small_gap(WEFT_EV_CLOSE, id, 0, 0, by_peer ? WEFT_DIR_INGRESS : WEFT_DIR_EGRESS, unread, wakeup_flags(), gap);
	return 0;
}

/* The peer reset a tracked connection (before its TCP_CLOSE). */
SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(weft_sock_reset, struct sock *sk)
{
	__u64 id = (__u64)sk;
	__u8 *v = bpf_map_lookup_elem(&tracked_socks, &id);
	if (v)
		*v |= SOCK_RESET_BY_PEER;
	return 0;
}

/* The on-CPU stack sampler: in both objects, on the maps above. */
#include "profile.h"

/* Runtimes' uprobes, attached per process by user space. */
#include "gohooks.h"
#include "nginx.h"
#include "announce.h"
#include "openssl.h"
#include "gotls.h"
#include "jvmtls.h"

#endif
