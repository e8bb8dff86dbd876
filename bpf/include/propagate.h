/* traceparent injection: sockops puts the TCP connections that traced
 * processes open into a sockhash; the sk_msg program attached to it writes
 * `traceparent` right after the request line of each HTTP/1.x request they
 * send. bpf_probe_write_user is locked down on these kernels, so the bytes
 * are inserted into the kernel's copy with bpf_msg_push_data.
 *
 * Only the first message of a send call can be a request start, never a
 * later chunk of a large write: the including file defines
 * claim_send_start(pid_tgid), true once per send call, from what its
 * send's entry hook noted; the socket path, which has no entry hook,
 * claims by thread instead (claim_by_thread).
 *
 * A connection whose first bytes are not HTTP/1.x leaves the sockhash,
 * except an h2c client's of a process whose HTTP/2 streams the kernel
 * decides (h2seed.h): its writes come here before they leave. */
#ifndef WEFT_PROPAGATE_H
#define WEFT_PROPAGATE_H

#include "common.h"
#include "msgcopy.h"

#define SK_PASS 1
#define REQUEST_LINE_MAX 1024 /* longest request line weft injects after */
#define INJECT_SCAN 2048      /* header bytes searched for an existing traceparent */
#define TP_HEADER_LEN 70 /* "traceparent: 00-<32>-<16>-<2>\r\n" */

/* socket cookie -> 1: a traced process is connecting this socket. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} connecting SEC(".maps");

/* Client connections of traced processes; sk_msg runs on their sends.
 * Entries leave when the socket closes. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 65535);
	__type(key, __u64);
	__type(value, __u64);
} client_socks SEC(".maps");

/* Why a client connection leaves the sockhash (only those that do get
 * socket storage: an HTTP/1.x connection costs none). */
enum conn_verdict {
	VERDICT_OTHER = 1,    /* its first bytes are not HTTP/1.x (TLS, HTTP/2, Redis...) */
	VERDICT_UNTRACED = 2, /* an untraced process sent them (sockops_any lets those in) */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u8);
} conn_verdicts SEC(".maps");

#define O_NONBLOCK 04000

/* The socket is connecting in blocking mode. A socket in a sockhash
 * receives through the kernel's tcp_bpf_recvmsg, which answers a blocking
 * read that a signal interrupts with EAGAIN instead of restarting it: a
 * client that reads with blocking calls (Python without a timeout, most C
 * programs) would fail where it worked before, so such a connection never
 * joins. Judged when it connects, because some clients switch modes
 * between calls: the JDK writes in blocking mode after a connect with a
 * timeout, and reads in non-blocking mode when a read timeout is set (and
 * retries EAGAIN itself when it is not: user space lists such JVMs in
 * eagain_retry, which weft_sockops, knowing the process, lets in). */
static __always_inline bool connects_blocking(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	if (!sk)
		return false;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return false;
	struct socket *so = tp->inet_conn.icsk_inet.sk.sk_socket;
	if (!so)
		return false;
	struct file *f = so->file;
	if (!f || f->f_flags & O_NONBLOCK)
		return false;
	count(WEFT_STAT_CONNS_BLOCKING);
	return true;
}

/* A socket in the sockhash sends through the kernel's sockmap path (its
 * bytes copied into an sk_msg, weft_inject run) for as long as it lives.
 * Only sockops may remove it, and sockops sees no data: so a joining
 * socket asks for the RTT callback, which comes with the ACK of its first
 * bytes, by which time weft_inject has judged them. */
static __always_inline void join_sockhash(struct bpf_sock_ops *skops, __u64 *cookie)
{
	if (bpf_sock_hash_update(skops, &client_socks, cookie, BPF_ANY) != 0)
		return;
	count(WEFT_STAT_CONNS_JOINED);
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);
}

/* At an ACK of data (the SYN counts one byte): the first bytes have been
 * judged, so a connection weft_inject marked leaves the sockhash, and the
 * callback is turned off either way. */
static __always_inline void settle_sockhash(struct bpf_sock_ops *skops)
{
	if (skops->bytes_acked <= 1)
		return;
	struct bpf_sock *sk = skops->sk;
	if (!sk)
		return;
	__u8 *v = bpf_sk_storage_get(&conn_verdicts, sk, 0, 0);
	if (v) {
		__u64 cookie = bpf_get_socket_cookie(skops);
		if (bpf_map_delete_elem(&client_socks, &cookie) == 0)
			count(*v == VERDICT_OTHER ? WEFT_STAT_CONNS_RELEASED : WEFT_STAT_CONNS_UNTRACED);
	}
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags & ~BPF_SOCK_OPS_RTT_CB_FLAG);
}

SEC("sockops")
int weft_sockops(struct bpf_sock_ops *skops)
{
	/* Every TCP socket of the cgroup comes through here, for each of
	 * its callbacks: leave the ones weft does not use at once. */
	__u32 op = skops->op;
	if (op == BPF_SOCK_OPS_RTT_CB) {
		settle_sockhash(skops);
		return 1;
	}
	if (op != BPF_SOCK_OPS_TCP_CONNECT_CB && op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB)
		return 1;
	if (skops->family != AF_INET && skops->family != AF_INET6)
		return 1;
	__u64 cookie = bpf_get_socket_cookie(skops);
	if (op == BPF_SOCK_OPS_TCP_CONNECT_CB) {
		/* connect() runs in the caller's context: is it traced? */
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (pid_traced_known(tgid) && (bpf_map_lookup_elem(&eagain_retry, &tgid) || !connects_blocking(skops))) {
			__u8 one = 1;
			bpf_map_update_elem(&connecting, &cookie, &one, BPF_ANY);
			struct proc_info *pi = proc_of(tgid);
			if (pi && !pi->clients)
				pi->clients = 1; /* its sends now need their goroutine noted */
		}
		return 1;
	}
	if (bpf_map_lookup_elem(&connecting, &cookie)) {
		bpf_map_delete_elem(&connecting, &cookie);
		join_sockhash(skops, &cookie);
	}
	return 1;
}

/* For kernels whose sockops programs cannot call
 * bpf_get_current_pid_tgid (before 6.x): every client connection in the
 * cgroup enters the sockhash, and sk_msg alone picks the traced senders.
 * User space loads exactly one of the two sockops programs. */
SEC("sockops")
int weft_sockops_any(struct bpf_sock_ops *skops)
{
	if (skops->op == BPF_SOCK_OPS_RTT_CB) {
		settle_sockhash(skops);
		return 1;
	}
	if (skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB)
		return 1;
	if ((skops->family == AF_INET || skops->family == AF_INET6) && !connects_blocking(skops)) {
		__u64 cookie = bpf_get_socket_cookie(skops);
		join_sockhash(skops, &cookie);
	}
	return 1;
}

static __always_inline char hexdigit(__u8 v)
{
	return v < 10 ? '0' + v : 'a' + v - 10;
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hex8 and LE8 lay out bytes little-endian"
#endif

/* Eight bytes as one little-endian word, for one store. */
#define LE8(a, b, c, d, e, f, g, h)                                                              \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 | \
	 (__u64)(f) << 40 | (__u64)(g) << 48 | (__u64)(h) << 56)

/* The eight hex digits of the four bytes at p, first byte first, in one
 * word: the nibbles spread to a byte each, then all eight turned into
 * '0'..'9' or 'a'..'f' at once. A branch per digit mispredicts half the
 * time on random ids. */
static __always_inline __u64 hex8(const __u8 *p)
{
	__u64 x = *(const __u32 *)p; /* ids sit 4-aligned in their structs */
	x = (x | x << 16) & 0x0000ffff0000ffffULL;
	x = (x | x << 8) & 0x00ff00ff00ff00ffULL;
	x = ((x >> 4) & 0x000f000f000f000fULL) | ((x & 0x000f000f000f000fULL) << 8);
	/* a nibble of 10 or more carries into bit 4 when 6 is added */
	__u64 letters = ((x + 0x0606060606060606ULL) >> 4) & 0x0101010101010101ULL;
	return x + 0x3030303030303030ULL + letters * ('a' - '0' - 10);
}

/* Writes "traceparent: 00-<trace>-<span>-<flags>\r\n" (TP_HEADER_LEN
 * bytes) at out, a word at a time. */
static __always_inline void format_traceparent(__u8 *out, const struct client_span *cs, const __u8 *span_id)
{
	*(__u64 *)out = LE8('t', 'r', 'a', 'c', 'e', 'p', 'a', 'r');
	*(__u64 *)(out + 8) = LE8('e', 'n', 't', ':', ' ', '0', '0', '-');
	*(__u64 *)(out + 16) = hex8(&cs->ctx.trace_id[0]);
	*(__u64 *)(out + 24) = hex8(&cs->ctx.trace_id[4]);
	*(__u64 *)(out + 32) = hex8(&cs->ctx.trace_id[8]);
	*(__u64 *)(out + 40) = hex8(&cs->ctx.trace_id[12]);
	out[48] = '-';
	*(__u64 *)(out + 49) = hex8(&span_id[0]);
	*(__u64 *)(out + 57) = hex8(&span_id[4]);
	out[65] = '-';
	out[66] = hexdigit(cs->ctx.trace_flags >> 4);
	out[67] = hexdigit(cs->ctx.trace_flags & 0xf);
	out[68] = '\r';
	out[69] = '\n';
}


/* A request whose request line was not whole in its send: the traceparent
 * goes after the line's CRLF in a later send on the same connection, with
 * the ids decided (and reported) at the first send. */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct conn_key);
	__type(value, struct client_span);
} split_requests SEC(".maps");

#define MAX_PIPELINED 4

struct scan {
	struct inject_buf *b;
	__u32 len;
	__u32 from;  /* where the scan starts */
	__u32 pos;   /* eol_step: offset just past the CRLF; head_step: the blank line's CRLF */
	bool tp;     /* head_step: a traceparent header line exists */
	bool body;   /* head_step: Content-Length or Transfer-Encoding present */
};

/* A CRLF starts at offset at (the caller checked at + 2 <= s->len). */
static __always_inline bool crlf_at(struct scan *s, __u64 at)
{
	__u8 *p = &s->b->data[at & (INJECT_PULL - 1)];
	return p[0] == '\r' && p[1] == '\n';
}

static long eol_step(__u64 i, void *arg)
{
	struct scan *s = arg;
	__u64 at = s->from + i;
	if (at + 2 > s->len)
		return 1;
	if (crlf_at(s, at)) {
		s->pos = at + 2;
		return 1;
	}
	return 0;
}

static __always_inline bool lower_eq(__u8 c, char want)
{
	return (c | 0x20) == want;
}

/* Looks at the header line after the CRLF at offset at: notes a
 * traceparent or a body, and returns 1 at the blank line ending the head
 * (s->pos = at) or at the end of the bytes, else 0. */
static __always_inline long header_line(struct scan *s, __u64 at)
{
	if (at + 4 > s->len)
		return 1;
	__u8 *p = &s->b->data[at & (INJECT_PULL - 1)];
	if (p[2] == '\r' && p[3] == '\n') {
		s->pos = at;
		return 1;
	}
	if (at + 20 > s->len)
		return 0;
	if (lower_eq(p[2], 't') && lower_eq(p[3], 'r') && lower_eq(p[4], 'a') && lower_eq(p[5], 'c') &&
	    lower_eq(p[6], 'e') && lower_eq(p[7], 'p') && lower_eq(p[8], 'a') && lower_eq(p[9], 'r') &&
	    lower_eq(p[10], 'e') && lower_eq(p[11], 'n') && lower_eq(p[12], 't') && p[13] == ':')
		s->tp = true;
	if (lower_eq(p[2], 'c') && lower_eq(p[3], 'o') && lower_eq(p[4], 'n') && lower_eq(p[5], 't') &&
	    lower_eq(p[6], 'e') && lower_eq(p[7], 'n') && lower_eq(p[8], 't') && p[9] == '-' &&
	    lower_eq(p[10], 'l') && lower_eq(p[11], 'e'))
		s->body = true;
	if (lower_eq(p[2], 't') && lower_eq(p[3], 'r') && lower_eq(p[4], 'a') && lower_eq(p[5], 'n') &&
	    lower_eq(p[6], 's') && lower_eq(p[7], 'f') && lower_eq(p[8], 'e') && lower_eq(p[9], 'r') &&
	    p[10] == '-')
		s->body = true;
	return 0;
}

/* Walks the bytes from s->from one by one, looking at the header line
 * after each CRLF, up to the blank line ending the head (s->pos, 0 if not
 * within the bytes). */
static long head_step(__u64 i, void *arg)
{
	struct scan *s = arg;
	__u64 at = s->from + i;
	if (at + 4 > s->len)
		return 1;
	return crlf_at(s, at) ? header_line(s, at) : 0;
}

/* The kernel's string functions (6.17+) find a CRLF at a few cycles a
 * byte; a bpf_loop callback per byte costs ten times that. Where they
 * are missing, the loader leaves these null and the byte-wise scans run. */
extern int bpf_strnstr(const char *s1__ign, const char *s2__ign, size_t len) __weak __ksym;

/* The offset of the first CRLF at or after from within the first limit
 * bytes, or -1. */
static __always_inline int find_crlf(struct inject_buf *b, __u32 from, __u32 len, __u32 limit)
{
	if (from >= len)
		return -1;
	__u32 room = len - from;
	if (room > limit)
		room = limit;
	int i = bpf_strnstr((const char *)&b->data[from & (INJECT_PULL - 1)], "\r\n", room);
	return i < 0 ? -1 : (int)(from + i);
}

/* Looks at each header line from the CRLF at s->from, jumping from line
 * to line with bpf_strnstr. */
static long line_step(__u64 i, void *arg)
{
	struct scan *s = arg;
	__u64 at = s->from;
	if (header_line(s, at))
		return 1;
	int next = find_crlf(s->b, at + 2, s->len, INJECT_SCAN);
	if (next < 0)
		return 1;
	s->from = next;
	return 0;
}

/* Sets s->pos just past the first CRLF from s->from (0 if none within
 * the request-line limit). */
static __always_inline void scan_request_line(struct scan *s)
{
	if (bpf_ksym_exists(bpf_strnstr)) {
		int eol = find_crlf(s->b, s->from, s->len, REQUEST_LINE_MAX);
		if (eol >= 0)
			s->pos = eol + 2;
		return;
	}
	bpf_loop(REQUEST_LINE_MAX, eol_step, s, 0);
}

/* Walks the header block from the CRLF at s->from: s->tp, s->body, and
 * s->pos at the blank line (0 if the head does not end within the bytes). */
static __always_inline void scan_head(struct scan *s)
{
	if (bpf_ksym_exists(bpf_strnstr)) {
		bpf_loop(INJECT_SCAN / 4, line_step, s, 0); /* a header line is 4 bytes or more */
		return;
	}
	bpf_loop(INJECT_SCAN, head_step, s, 0);
}

/* The request line that ends at eol says HTTP/1.x. */
static __always_inline bool http1_line(struct inject_buf *b, __u32 eol)
{
	if (eol < 19) /* "GET / HTTP/1.1\r\n" is the shortest, plus a start offset */
		return false;
	__u8 *v = &b->data[(eol - 11) & (INJECT_PULL - 1)];
	return v[0] == ' ' && v[1] == 'H' && v[2] == 'T' && v[3] == 'T' && v[4] == 'P' && v[5] == '/' &&
	       v[6] == '1' && v[7] == '.';
}

static __always_inline void conn_key_of(struct sk_msg_md *msg, struct conn_key *k)
{
	k->family = msg->family;
	k->local_port = msg->local_port;
	k->remote_port = bpf_ntohl(msg->remote_port); /* the network-order port, shifted up 16 bits */
	if (msg->family == AF_INET6) {
		k->remote_ip[0] = msg->remote_ip6[0];
		k->remote_ip[1] = msg->remote_ip6[1];
		k->remote_ip[2] = msg->remote_ip6[2];
		k->remote_ip[3] = msg->remote_ip6[3];
		k->local_ip[0] = msg->local_ip6[0];
		k->local_ip[1] = msg->local_ip6[1];
		k->local_ip[2] = msg->local_ip6[2];
		k->local_ip[3] = msg->local_ip6[3];
	} else {
		k->remote_ip[0] = msg->remote_ip4;
		k->local_ip[0] = msg->local_ip4;
	}
}

/* Inserts the traceparent of span k of b->cs (0: the first request's,
 * then the pipelined ones') at off. */
static __noinline bool insert_tp(struct sk_msg_md *msg, __u32 off, struct inject_buf *b, __u32 k)
{
	if (!msg || !b)
		return false;
	const __u8 *sid = k == 0 ? b->cs.ctx.span_id : b->cs.more_span_ids[(k - 1) & 3];
	if (bpf_msg_push_data(msg, off, TP_HEADER_LEN, 0) < 0)
		return false;
	if (bpf_msg_pull_data(msg, off, off + TP_HEADER_LEN, 0) < 0) {
		bpf_msg_pop_data(msg, off, TP_HEADER_LEN, 0); /* never send the hole */
		return false;
	}
	__u8 *d = msg->data, *end = msg->data_end;
	if ((void *)(d + TP_HEADER_LEN) > (void *)end) {
		bpf_msg_pop_data(msg, off, TP_HEADER_LEN, 0);
		return false;
	}
	format_traceparent(d, &b->cs, sid);
	return true;
}

/* Each insertion splits the message's buffer in three, and the kernel's
 * sockmap send path hands every piece to TCP on its own, which sends it
 * as its own segment (Nagle is off on most clients): three segments, three
 * wake-ups of the receiver, for one request. Copying the head up to just
 * past the last insertion into one buffer again makes it one segment. */
static __always_inline void rejoin(struct sk_msg_md *msg, __u32 end)
{
	__u32 size = msg->size;
	if (end > size)
		end = size;
	bpf_msg_pull_data(msg, 0, end, 0); /* on failure the pieces stay valid */
}

/* Marks the connection for leaving the sockhash (see settle_sockhash). */
static __always_inline void release_conn(struct bpf_sock *sk, __u8 verdict)
{
	__u8 *v = bpf_sk_storage_get(&conn_verdicts, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (v)
		*v = verdict;
}

/* The message is the first data of its connection: nothing sent, nothing
 * queued (a corked first send would still be unsent). */
static __always_inline bool first_data(struct bpf_sock *sk)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	return tp && tp->bytes_sent == 0 && tp->write_seq == tp->snd_una;
}

/* The first bytes of a connection cannot begin an HTTP/1.x request: at
 * least a method and a space that are not one, or, when fewer came, a
 * byte no request line has (a request line may arrive in pieces). */
static __always_inline bool not_http(const __u8 *d, __u32 n)
{
	if (n >= 8)
		return !is_request_start(d, n);
	for (__u32 i = 0; i < 7; i++)
		if (i < n && (d[i] < 0x20 || d[i] >= 0x7f))
			return true;
	return false;
}

/* Set by user space: the sk_msg program is attached. */
volatile const __u8 propagation_on = 0;

/* pid_tgid -> 1: sk_msg saw the first message of the send in flight on
 * that thread; the send's sock_send_length clears it (the socket path).
 * A send that ends unseen (sendfile before Linux 6.5 runs sk_msg without
 * sock_send_length) leaves it set: the thread's next request then goes
 * without a traceparent, a split trace rather than a header in a body. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} send_claims SEC(".maps");

/* True for the first message of the thread's send in flight; false for
 * a later one, and when the table is full (no injection then). */
static __always_inline bool claim_by_thread(__u64 pid_tgid)
{
	__u8 one = 1;
	return bpf_map_update_elem(&send_claims, &pid_tgid, &one, BPF_NOEXIST) == 0;
}

/* The send in progress is one of the system calls whose bytes the
 * socket path captures (so that the request it injects into is also
 * reported): write, writev, sendto, sendmsg. */
static __always_inline bool send_call(void)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!r)
		return false;
	long nr = r->orig_ax;
	return nr == NR_WRITE || nr == NR_WRITEV || nr == NR_SENDTO || nr == NR_SENDMSG;
}

/* The sending goroutine of a Go program, read from the user registers
 * where sk_msg may read them (the socket path), into buf; 0 otherwise,
 * and the ids noted at the send's entry are used. */
static __always_inline const struct go_id *inject_sender(__u64 pid_tgid, bool regs, struct go_id *buf)
{
	if (!regs)
		return 0;
	struct proc_info *pi = proc_of(pid_tgid >> 32);
	if (!pi || pi->mode != WEFT_MODE_GO)
		return 0;
	if (!go_id_of(pi, user_g(), buf))
		buf->goid = buf->parent = 0;
	return buf;
}

/* The sk_msg program's body. regs: this kernel lets sk_msg read the
 * sender's registers and memory (the socket path, which has no entry
 * hook to note the sender's goroutine and slot). */
static __always_inline int inject(struct sk_msg_md *msg, bool regs)
{
	struct bpf_sock *sk = msg->sk;
	if (!sk)
		return SK_PASS;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced_known(pid_tgid >> 32)) {
		release_conn(sk, VERDICT_UNTRACED);
		return SK_PASS;
	}
	if (regs && !send_call())
		return SK_PASS; /* sendfile, splice: bytes weft neither reads nor writes into */
	if (!(regs ? claim_by_thread(pid_tgid) : claim_send_start(pid_tgid)))
		return SK_PASS; /* a later chunk of one large send */
	__u32 size = msg->size;
	if (size == 0)
		return SK_PASS;
	if (bpf_sk_storage_get(&conn_verdicts, sk, 0, 0))
		return SK_PASS; /* leaving the sockhash at the next ACK */
	__u32 look = size < INJECT_PULL ? size : INJECT_PULL;
	if (bpf_msg_pull_data(msg, 0, look, 0) < 0)
		return SK_PASS;
	__u8 *d = msg->data, *end = msg->data_end;

	__u32 zero = 0;
	struct inject_buf *b = bpf_map_lookup_elem(&inject_scratch, &zero);
	if (!b)
		return SK_PASS;
	/* Eight bytes a step keeps the verifier's walk of this loop short
	 * (older verifiers give up on a byte-wise copy), then the tail. */
	__u32 n = 0;
	for (__u32 i = 0; i < INJECT_PULL / 8; i++) {
		if ((void *)(d + i * 8 + 8) > (void *)end)
			break;
		*(__u64 *)&b->data[i * 8] = *(__u64 *)(d + i * 8);
		n += 8;
	}
	/* The tail: the message's last eight bytes, overlapping the copy. */
	__u64 len = (void *)end - (void *)d;
	if (n < len && len >= 8 && len <= INJECT_PULL) {
		__u32 off = (len - 8) & (INJECT_PULL - 1);
		if ((void *)(d + off + 8) <= (void *)end) {
			*(__u64 *)&b->data[off] = *(__u64 *)(d + off);
			n = off + 8;
		}
	}

	if (not_http(b->data, n) && first_data(sk)) {
		if (n >= 8 && h2_preface_start(b->data) && h2_seeds(proc_of(pid_tgid >> 32))) {
			/* h2c: the connection stays, for the kernel to decide
			 * the spans of the streams its writes open (h2seed.h). */
			struct conn_key ck = {};
			conn_key_of(msg, &ck);
			h2c_seed_streams(msg, &ck, n, true);
			return SK_PASS;
		}
		release_conn(sk, VERDICT_OTHER);
		return SK_PASS;
	}

	if (regs)
		refresh_slot((__u32)pid_tgid);
	struct go_id gid_buf;
	const struct go_id *gid = inject_sender(pid_tgid, regs, &gid_buf);
	struct conn_key ck = {};
	conn_key_of(msg, &ck);
	struct scan s = {.b = b, .len = n};
	__u32 at[MAX_PIPELINED] = {};
	__u32 count = 0;
	struct client_span *cs = &b->cs;
	__builtin_memset(cs, 0, sizeof(*cs));

	struct client_span *split = bpf_map_lookup_elem(&split_requests, &ck);
	if (split) {
		/* This send continues a request line begun earlier. */
		*cs = *split;
		scan_request_line(&s);
		if (!s.pos)
			return SK_PASS; /* still no end of line: wait for more */
		bpf_map_delete_elem(&split_requests, &ck);
		__u32 eol = s.pos;
		s.from = eol - 2;
		s.pos = 0;
		scan_head(&s);
		if (!s.tp && insert_tp(msg, eol, b, 0))
			rejoin(msg, eol + TP_HEADER_LEN + 1);
		return SK_PASS;
	}

	/* Each request that starts here, pipelined ones included as long as
	 * the previous one has no body to skip. */
	__u32 pos = 0;
#pragma clang loop unroll(disable)
	for (int k = 0; k < MAX_PIPELINED; k++) {
		if (pos + 8 > n || !is_request_start(&b->data[pos & (INJECT_PULL - 1)], 8))
			break;
		s.from = pos + 8;
		s.pos = 0;
		scan_request_line(&s);
		__u32 eol = s.pos;
		if (!eol) {
			if (k == 0 && n == size) {
				/* The request line continues in a later send. */
				new_client_ctx(pid_tgid, correlation_key((__u32)pid_tgid), &ck, gid, &cs->ctx, cs->parent_id);
				bpf_map_update_elem(&split_requests, &ck, cs, BPF_ANY);
				bpf_map_update_elem(&sent_ctx, &pid_tgid, cs, BPF_ANY);
			}
			break;
		}
		if (!http1_line(b, eol))
			break;
		s.from = eol - 2;
		s.pos = 0;
		s.tp = false;
		s.body = false;
		scan_head(&s);
		if (!s.tp) /* an application's own traceparent stays the only one */
			at[count++ & (MAX_PIPELINED - 1)] = eol;
		if (!s.pos || s.body)
			break;
		pos = s.pos + 4;
	}
	if (count == 0) {
		struct proc_info *pi = proc_of(pid_tgid >> 32);
		if (pi && pi->h2 && h2_seeds(pi) && (n < 8 || !is_request_start(b->data, n)))
			h2c_seed_streams(msg, &ck, n, false); /* a later write of an h2c connection that stayed */
		return SK_PASS;
	}

	new_client_ctx(pid_tgid, correlation_key((__u32)pid_tgid), &ck, gid, &cs->ctx, cs->parent_id);
#pragma clang loop unroll(disable)
	for (int k = 1; k < MAX_PIPELINED; k++) {
		if (k >= count)
			break;
		random_ids(0, cs->more_span_ids[(k - 1) & 3]);
		cs->n_more = k;
	}
	/* Last first, so that earlier offsets stay valid. */
#pragma clang loop unroll(disable)
	for (int k = MAX_PIPELINED - 1; k >= 0; k--) {
		if (k >= count)
			continue;
		if (!insert_tp(msg, at[k & (MAX_PIPELINED - 1)], b, k))
			return SK_PASS;
	}
	rejoin(msg, at[(count - 1) & (MAX_PIPELINED - 1)] + count * TP_HEADER_LEN + 1);
	bpf_map_update_elem(&sent_ctx, &pid_tgid, cs, BPF_ANY);
	return SK_PASS;
}

#endif
