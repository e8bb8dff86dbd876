/* traceparent injection: sockops puts the TCP connections that traced
 * processes open into a sockhash; the sk_msg program attached to it writes
 * `traceparent` right after the request line of each HTTP/1.x request they
 * send. bpf_probe_write_user is locked down on these kernels, so the bytes
 * are inserted into the kernel's copy with bpf_msg_push_data.
 *
 * The including file defines claim_send_start(pid_tgid): true once per
 * send call, so only the first message of a send can be a request start,
 * never a later chunk of a large write. */
#ifndef WEFT_PROPAGATE_H
#define WEFT_PROPAGATE_H

#include "common.h"

#define SK_PASS 1
#define INJECT_PULL 2048      /* message bytes examined */
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

SEC("sockops")
int weft_sockops(struct bpf_sock_ops *skops)
{
	if (skops->family != AF_INET && skops->family != AF_INET6)
		return 1;
	__u64 cookie = bpf_get_socket_cookie(skops);
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB: {
		/* connect() runs in the caller's context: is it traced? */
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (pid_traced(tgid)) {
			__u8 one = 1;
			bpf_map_update_elem(&connecting, &cookie, &one, BPF_ANY);
		}
		break;
	}
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		if (bpf_map_lookup_elem(&connecting, &cookie)) {
			bpf_map_delete_elem(&connecting, &cookie);
			bpf_sock_hash_update(skops, &client_socks, &cookie, BPF_ANY);
		}
		break;
	}
	return 1;
}

static __always_inline char hexdigit(__u8 v)
{
	return v < 10 ? '0' + v : 'a' + v - 10;
}

static __always_inline void format_traceparent(char *out, const struct client_span *cs)
{
	__builtin_memcpy(out, "traceparent: 00-", 16);
	for (int i = 0; i < 16; i++) {
		out[16 + 2 * i] = hexdigit(cs->ctx.trace_id[i] >> 4);
		out[17 + 2 * i] = hexdigit(cs->ctx.trace_id[i] & 0xf);
	}
	out[48] = '-';
	for (int i = 0; i < 8; i++) {
		out[49 + 2 * i] = hexdigit(cs->ctx.span_id[i] >> 4);
		out[50 + 2 * i] = hexdigit(cs->ctx.span_id[i] & 0xf);
	}
	out[65] = '-';
	out[66] = hexdigit(cs->ctx.trace_flags >> 4);
	out[67] = hexdigit(cs->ctx.trace_flags & 0xf);
	out[68] = '\r';
	out[69] = '\n';
}

/* The first bytes of a message, copied out of the packet so that bpf_loop
 * callbacks can scan them (packet pointers cannot be passed to callbacks,
 * and open-coded scans over packet data make the verifier explore every
 * possible request-line length). */
struct inject_buf {
	__u8 data[2 * INJECT_PULL];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct inject_buf);
} inject_scratch SEC(".maps");

struct line_scan {
	struct inject_buf *b;
	__u32 len;
	__u32 pos; /* result: offset just past the CRLF, 0 when not found */
	bool tp;   /* result: a traceparent header line exists */
};

static long eol_step(__u64 i, void *arg)
{
	struct line_scan *s = arg;
	if (i + 2 > s->len)
		return 1;
	__u8 *p = &s->b->data[i & (INJECT_PULL - 1)];
	if (p[0] == '\r' && p[1] == '\n') {
		s->pos = i + 2;
		return 1;
	}
	return 0;
}

static __always_inline bool lower_eq(__u8 c, char want)
{
	return (c | 0x20) == want;
}

/* Header lines start after each CRLF from s->pos on; stops at the blank
 * line that ends the head. */
static long tp_header_step(__u64 i, void *arg)
{
	struct line_scan *s = arg;
	__u64 at = s->pos + i;
	if (at + 14 > s->len)
		return 1;
	__u8 *p = &s->b->data[at & (INJECT_PULL - 1)];
	if (p[0] != '\r' || p[1] != '\n')
		return 0;
	if (p[2] == '\r' && p[3] == '\n')
		return 1;
	if (lower_eq(p[2], 't') && lower_eq(p[3], 'r') && lower_eq(p[4], 'a') && lower_eq(p[5], 'c') &&
	    lower_eq(p[6], 'e') && lower_eq(p[7], 'p') && lower_eq(p[8], 'a') && lower_eq(p[9], 'r') &&
	    lower_eq(p[10], 'e') && lower_eq(p[11], 'n') && lower_eq(p[12], 't') && p[13] == ':') {
		s->tp = true;
		return 1;
	}
	return 0;
}

SEC("sk_msg")
int weft_inject(struct sk_msg_md *msg)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!pid_traced(pid_tgid >> 32))
		return SK_PASS;
	if (!claim_send_start(pid_tgid))
		return SK_PASS; /* a later chunk of one large send */
	__u32 size = msg->size;
	if (size < 16)
		return SK_PASS;
	__u32 look = size < INJECT_PULL ? size : INJECT_PULL;
	if (bpf_msg_pull_data(msg, 0, look, 0) < 0)
		return SK_PASS;
	__u8 *d = msg->data, *end = msg->data_end;
	if ((void *)(d + 8) > (void *)end || !is_request_start(d, 8))
		return SK_PASS;

	__u32 zero = 0;
	struct inject_buf *b = bpf_map_lookup_elem(&inject_scratch, &zero);
	if (!b)
		return SK_PASS;
	__u32 n = 0;
	for (__u32 i = 0; i < INJECT_PULL; i++) {
		if ((void *)(d + i + 1) > (void *)end)
			break;
		b->data[i] = d[i];
		n = i + 1;
	}

	/* The request line must be whole in this message and say HTTP/1.x. */
	struct line_scan s = {.b = b, .len = n};
	bpf_loop(REQUEST_LINE_MAX, eol_step, &s, 0);
	__u32 eol = s.pos;
	if (eol < 19) /* "GET / HTTP/1.1\r\n" is the shortest */
		return SK_PASS;
	__u8 *v = &b->data[(eol - 11) & (INJECT_PULL - 1)]; /* " HTTP/1.x\r\n" */
	if (v[0] != ' ' || v[1] != 'H' || v[2] != 'T' || v[3] != 'T' || v[4] != 'P' || v[5] != '/' ||
	    v[6] != '1' || v[7] != '.')
		return SK_PASS;
	/* A traceparent the application set itself stays the only one. */
	s.pos = eol - 2;
	bpf_loop(INJECT_SCAN, tp_header_step, &s, 0);
	if (s.tp)
		return SK_PASS;

	struct client_span cs = {};
	new_client_ctx(pid_tgid >> 32, correlation_key((__u32)pid_tgid), &cs.ctx, cs.parent_id);
	char hdr[TP_HEADER_LEN];
	format_traceparent(hdr, &cs);

	if (bpf_msg_push_data(msg, eol, TP_HEADER_LEN, 0) < 0)
		return SK_PASS;
	if (bpf_msg_pull_data(msg, eol, eol + TP_HEADER_LEN, 0) < 0) {
		bpf_msg_pop_data(msg, eol, TP_HEADER_LEN, 0); /* never send the hole */
		return SK_PASS;
	}
	d = msg->data;
	end = msg->data_end;
	if ((void *)(d + TP_HEADER_LEN) > (void *)end) {
		bpf_msg_pop_data(msg, eol, TP_HEADER_LEN, 0);
		return SK_PASS;
	}
	__builtin_memcpy(d, hdr, TP_HEADER_LEN);
	bpf_map_update_elem(&sent_ctx, &pid_tgid, &cs, BPF_ANY);
	return SK_PASS;
}

#endif
