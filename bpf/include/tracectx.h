/* Trace context decided in the kernel: the server span of each request a
 * traced process receives, the client span of each request it sends, and
 * the active server span per correlation key that parents client spans. */
#ifndef WEFT_TRACECTX_H
#define WEFT_TRACECTX_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "weft.h"
#include "stats.h"
#include "mount.h"
#include "maputil.h"
#include "procmode.h"
#include "goroutine.h"

/* A client span chosen by sk_msg, waiting for its send's data event. */
struct client_span {
	struct span_ctx ctx;
	__u8 parent_id[8];
	__u8 more_span_ids[3][8]; /* pipelined requests after the first */
	__u8 n_more;
	__u8 _pad[7];
};

/* (tgid << 32 | correlation key) -> the server span being served. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct span_ctx);
} active_ctx SEC(".maps");

/* A connection's requests being served: the key (or goroutine) that read
 * them, and the span of the last. The response may leave from another
 * thread than the one that read the request, and the reader must not go
 * on serving a finished request: its later samples, client calls and
 * traces_ctx_v1 entry would claim it. */
struct serving {
	__u64 key;      /* ctx_key of the reader */
	__u64 g;        /* the reading goroutine's id (WEFT_MODE_GO), else 0 */
	__u8 trace_id[16];
	__u8 span_id[8];
	__u32 pending;  /* requests read and not answered yet */
	__u8 trace_flags;
	__u8 _pad[3];
};

/* ctx_key -> requests that key read and that are not answered yet. A key
 * that reads a request while another is live serves two at once (an
 * event loop): its client calls cannot be told apart, so they get no
 * parent until it serves none. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
} key_load SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* sock_id */
	__type(value, struct serving);
} serving_sock SEC(".maps");

/* pid_tgid -> client span chosen (and injected) by sk_msg during the send
 * in flight, so the send's data event reports the same ids. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct client_span);
} sent_ctx SEC(".maps");

/* Who a thread works for: the thread that created it (recorded at fork,
 * since_ns = creation time) or, from a JVM agent's op 3, the thread that
 * handed it work (since_ns = 0). */
struct thread_link {
	__u32 tid;
	__u32 _pad;
	__u64 since_ns;
};

/* thread id -> struct thread_link, for threads of traced processes: a
 * request handed to a helper thread keeps its parent. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct thread_link);
} thread_parent SEC(".maps");

#define THREAD_PARENT_DEPTH 3

static __always_inline __u64 ctx_key(__u32 tgid, __u32 key)
{
	return ((__u64)tgid << 32) | key;
}

/* The span a key works for: its own active server span or, for a thread
 * serving nothing itself, that of a thread that created it (or, op 3,
 * handed it work), a few generations at most, by their own keys. A
 * logical id (high bit) is not a thread and has no creator. Client spans
 * take their parent from here, and stack samples their span. */
static __always_inline struct span_ctx *lookup_active(__u32 tgid, __u32 key)
{
	__u64 k = ctx_key(tgid, key);
	struct span_ctx *srv = bpf_map_lookup_elem(&active_ctx, &k);
	__u32 tid = key;
	for (int i = 0; i < THREAD_PARENT_DEPTH && !srv && !(tid & WEFT_LOGICAL_BIT); i++) {
		struct thread_link *link = bpf_map_lookup_elem(&thread_parent, &tid);
		if (!link)
			break;
		tid = link->tid;
		__u64 since = link->since_ns;
		k = ctx_key(tgid, correlation_key(tid));
		srv = bpf_map_lookup_elem(&active_ctx, &k);
		/* A request its creator began after creating it is not one the
		 * thread was made for: a pool thread, reused, not a helper. */
		if (srv && since && srv->start_ns > since)
			srv = 0;
	}
	return srv;
}

/* The OpenTelemetry profiler interop map (OTEP 4855; OBI keeps the same
 * map, bpf/shared/obi_ctx.h): thread (pid_tgid) -> the span it works
 * for, so that a profiler other than weft can label its samples. Type,
 * key, value layout and size are that spec's, byte for byte, so one map
 * pinned by either side can serve both. */
struct traces_ctx {
	__u8 trace_id[16];
	__u8 span_id[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 14);
	__type(key, __u64);
	__type(value, struct traces_ctx);
} traces_ctx_v1 SEC(".maps");

/* Set by user space when traces_ctx_v1 is pinned for another profiler:
 * unpinned, nothing reads it (weft's own samples ask lookup_active), and
 * keeping it would cost an LRU insert and a delete per request. */
volatile const __u8 publish_traces_ctx = 0;

static __always_inline void traces_ctx_clear(__u64 pid_tgid)
{
	if (publish_traces_ctx)
		bpf_map_delete_elem(&traces_ctx_v1, &pid_tgid);
}

static __always_inline void traces_ctx_set(__u64 pid_tgid, const __u8 *trace_id, const __u8 *span_id)
{
	if (!publish_traces_ctx)
		return;
	struct traces_ctx v;
	__builtin_memcpy(v.trace_id, trace_id, 16);
	__builtin_memcpy(v.span_id, span_id, 8);
	bpf_map_update_elem(&traces_ctx_v1, &pid_tgid, &v, BPF_ANY);
}

/* The current thread now works under key: publish what samples of it
 * would say (lookup_active), or that it serves nothing. */
static __always_inline void traces_ctx_sync(__u64 pid_tgid, __u32 key)
{
	if (!publish_traces_ctx)
		return;
	struct span_ctx *a = lookup_active(pid_tgid >> 32, key);
	if (a && !a->ambiguous)
		traces_ctx_set(pid_tgid, a->trace_id, a->span_id);
	else
		traces_ctx_clear(pid_tgid);
}

/* The trace sampler (OTEL_TRACES_SAMPLER, pkg/sampling), decided once
 * where a trace begins or enters a traced process, so the traceparent
 * weft injects carries the decision on to every downstream service. */
#define SAMPLE_NEVER 0
#define SAMPLE_ALWAYS 1
#define SAMPLE_RATIO 2
volatile const __u8 sample_root = SAMPLE_ALWAYS;
volatile const __u8 sample_parent_based = 1; /* keep an incoming decision */
volatile const __u64 sample_bound = 0;       /* traceidratio * 2^63 */

#define TRACE_FLAG_SAMPLED 0x01

/* The flags of a trace that starts here: the root sampler on its id (the
 * OpenTelemetry SDKs' traceidratio rule, so they agree with weft). */
static __always_inline __u8 root_flags(const __u8 *trace_id)
{
	if (sample_root != SAMPLE_RATIO)
		return sample_root == SAMPLE_ALWAYS ? TRACE_FLAG_SAMPLED : 0;
	__u64 low;
	__builtin_memcpy(&low, trace_id + 8, 8);
	return __builtin_bswap64(low) >> 1 < sample_bound ? TRACE_FLAG_SAMPLED : 0;
}

/* The flags of a trace continued from an incoming traceparent. */
static __always_inline __u8 continued_flags(const struct span_ctx *in)
{
	if (sample_parent_based)
		return in->trace_flags;
	return (in->trace_flags & ~TRACE_FLAG_SAMPLED) | root_flags(in->trace_id);
}

static __always_inline void random_ids(__u8 *trace_id, __u8 *span_id)
{
	if (trace_id) {
		__u32 *t = (__u32 *)trace_id;
		t[0] = bpf_get_prandom_u32();
		t[1] = bpf_get_prandom_u32();
		t[2] = bpf_get_prandom_u32();
		t[3] = bpf_get_prandom_u32() | 1; /* never all zero */
	}
	__u32 *s = (__u32 *)span_id;
	s[0] = bpf_get_prandom_u32();
	s[1] = bpf_get_prandom_u32() | 1;
}

/* A request line starts with one of the methods weft parses, then a space. */
static __always_inline bool is_request_start(const __u8 *d, __u32 n)
{
	if (n < 8)
		return false;
	__u32 w = d[0] | d[1] << 8 | d[2] << 16 | d[3] << 24;
	switch (w) {
	case 0x20544547: /* "GET " */
	case 0x20545550: /* "PUT " */
		return true;
	case 0x54534f50: /* "POST" */
	case 0x44414548: /* "HEAD" */
		return d[4] == ' ';
	case 0x454c4544: /* "DELE" TE */
		return d[4] == 'T' && d[5] == 'E' && d[6] == ' ';
	case 0x43544150: /* "PATC" H */
		return d[4] == 'H' && d[5] == ' ';
	case 0x4954504f: /* "OPTI" ONS */
		return d[4] == 'O' && d[5] == 'N' && d[6] == 'S' && d[7] == ' ';
	case 0x43415254: /* "TRAC" E */
		return d[4] == 'E' && d[5] == ' ';
	}
	return false;
}

static __always_inline bool is_response_start(const __u8 *d, __u32 n)
{
	return n >= 8 && d[0] == 'H' && d[1] == 'T' && d[2] == 'T' && d[3] == 'P' &&
	       d[4] == '/' && d[5] == '1' && d[6] == '.';
}

static __always_inline int unhex(__u8 c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1; /* W3C: lowercase only */
}

#define TP_VALUE_LEN 55 /* 00-<32 hex>-<16 hex>-<2 hex> */
#define TP_SCAN_MAX 1024

struct tp_scan {
	const __u8 *data; /* points at event_buf.data, 3 * WEFT_MAX_CAPTURE long */
	__u32 len;
	__u32 found;      /* offset of the value, 0 when not found */
	__u32 pos;        /* where the search for the next line feed goes on */
	__u8 head_end;    /* the blank line ending the header block was seen */
	__u8 _pad[3];
};

/* Is there "traceparent:" (any case) at p? */
static __always_inline bool tp_name_at(const __u8 *p)
{
	const char name[] = "traceparent:";
	for (int k = 0; k < 12; k++)
		if ((p[k] | 0x20) != (name[k] | 0x20) && !(name[k] == ':' && p[k] == ':'))
			return false;
	return true;
}

/* Whether the line that begins at name is a traceparent header with room
 * for its value; if so, s->found is where the value begins. */
static __always_inline bool tp_line(struct tp_scan *s, __u32 name)
{
	if (name + 13 + TP_VALUE_LEN > s->len)
		return false;
	name &= WEFT_MAX_CAPTURE - 1;
	const __u8 *q = s->data + name;
	if ((q[0] | 0x20) != 't' || !tp_name_at(q))
		return false;
	s->found = name + 12 + (q[12] == ' ' || q[12] == '\t');
	return true;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* bpf_loop callback: finds the next line feed from s->pos, eight bytes at
 * a time (the lowest byte flagged by the zero-byte test is a line feed;
 * past data's end the bytes are stale but inside the buffer), and looks
 * at the line it begins: the blank line ending the header block, or a
 * "traceparent:" header. Stops at either, or at the data's end. */
static long tp_scan_step(__u64 _, void *arg)
{
	struct tp_scan *s = arg;
	if (s->pos + 3 > s->len) /* len <= WEFT_MAX_CAPTURE: the mask keeps i */
		return 1;
	__u32 i = s->pos & (WEFT_MAX_CAPTURE - 1);
	__u64 x = *(const __u64 *)(s->data + i) ^ (ONES * '\n');
	__u64 t = (x - ONES) & ~x & HIGHS;
	if (!t) {
		s->pos = i + 8;
		return 0;
	}
	/* The lowest flag, 0x80 << 8j, to j: the multiplier's byte 7 - j. */
	i += ((t & -t) >> 7) * 0x0001020304050607ULL >> 56;
	if (i + 3 > s->len)
		return 1;
	const __u8 *p = s->data + (i & (WEFT_MAX_CAPTURE - 1));
	if (p[1] == '\r' && p[2] == '\n') {
		s->head_end = 1;
		return 1;
	}
	s->pos = i + 1;
	return tp_line(s, i + 1);
}

enum tp_result {
	TP_FOUND = 1,   /* a valid traceparent */
	TP_ABSENT = 2,  /* none (or an invalid one) in the header block */
	TP_NOT_YET = 3, /* none in these bytes, and the header block goes on */
};

/* parse_traceparent's prev for a request start: its first line is the
 * request line. A continued head's prev is HEAD_CONT | the last three
 * bytes before data (head_tail). */
#define HEAD_START 0
#define HEAD_CONT (1U << 31)

/* The last three bytes of a head seen so far, when d[0..n) follows those
 * of prev. */
static __always_inline __u32 head_tail(__u32 prev, const __u8 *d, __u32 n)
{
	if (n >= 3)
		return d[(n - 3) & 0x1fff] << 16 | d[(n - 2) & 0x1fff] << 8 | d[(n - 1) & 0x1fff];
	if (n == 2)
		return (prev << 16 | d[0] << 8 | d[1]) & 0xffffff;
	if (n == 1)
		return (prev << 8 | d[0]) & 0xffffff;
	return prev & 0xffffff;
}

/* Parses a traceparent value of version 00 (55 characters at v) into ctx
 * (trace id, parent span id in span_id, flags); false when invalid. */
static __always_inline bool parse_tp_value(const __u8 *v, struct span_ctx *ctx)
{
	if (v[0] != '0' || v[1] != '0' || v[2] != '-' || v[35] != '-' || v[52] != '-')
		return false;
	__u8 any = 0;
	for (int k = 0; k < 16; k++) {
		int hi = unhex(v[3 + 2 * k]), lo = unhex(v[4 + 2 * k]);
		if (hi < 0 || lo < 0)
			return false;
		ctx->trace_id[k] = hi << 4 | lo;
		any |= ctx->trace_id[k];
	}
	if (!any)
		return false;
	any = 0;
	for (int k = 0; k < 8; k++) {
		int hi = unhex(v[36 + 2 * k]), lo = unhex(v[37 + 2 * k]);
		if (hi < 0 || lo < 0)
			return false;
		ctx->span_id[k] = hi << 4 | lo;
		any |= ctx->span_id[k];
	}
	if (!any)
		return false;
	int fh = unhex(v[53]), fl = unhex(v[54]);
	if (fh < 0 || fl < 0)
		return false;
	ctx->trace_flags = fh << 4 | fl;
	return true;
}

/* Parses a W3C traceparent (version 00) header from captured request
 * bytes into ctx (trace id, parent span id in span_id, flags). prev:
 * HEAD_START, or what came before data in the same head (HEAD_CONT). */
static __always_inline enum tp_result parse_traceparent(const __u8 *data, __u32 len, __u32 prev,
							 struct span_ctx *ctx)
{
	struct tp_scan s = {.data = data, .len = len};
	if (prev & HEAD_CONT) {
		/* The blank line that ends the head, across the cut. */
		if (((prev & 0xffff) == ('\n' << 8 | '\r') && len >= 1 && data[0] == '\n') ||
		    ((prev & 0xff) == '\n' && len >= 2 && data[0] == '\r' && data[1] == '\n'))
			return TP_ABSENT;
		/* A line that begins at the cut. */
		if ((prev & 0xff) == '\n' && tp_line(&s, 0))
			goto value;
	}
	bpf_loop(TP_SCAN_MAX, tp_scan_step, &s, 0);
value:
	if (!s.found)
		return s.head_end ? TP_ABSENT : TP_NOT_YET;
	return parse_tp_value(data + (s.found & (WEFT_MAX_CAPTURE - 1)), ctx) ? TP_FOUND : TP_ABSENT;
}

/* A server span whose request head was cut before its end with no
 * traceparent yet: the next segments may carry it (injection by sk_msg
 * can split the head where it inserts). */
struct pending_head {
	__u64 key;  /* ctx_key of the reader */
	__u64 g;    /* the reading goroutine's id, or 0 */
	__u32 tail; /* the head's last three bytes so far (head_tail) */
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* socket */
	__type(value, struct pending_head);
} pending_head SEC(".maps");

/* One more request read by key k: counted, and marked ambiguous when k
 * already serves another. A key's entry stays when its load drops to 0
 * (key_ends_requests): a thread serves request after request, and an
 * update allocates an LRU node where a lookup takes no lock. */
static __always_inline bool key_takes_request(__u64 k)
{
	__u32 *load = bpf_map_lookup_elem(&key_load, &k);
	if (!load) {
		__u32 one = 1;
		if (bpf_map_update_elem(&key_load, &k, &one, BPF_NOEXIST) == 0)
			return false;
		load = bpf_map_lookup_elem(&key_load, &k); /* another CPU made it */
		if (!load)
			return bpf_map_update_elem(&key_load, &k, &one, BPF_ANY), false;
	}
	bool busy = *load > 0;
	__sync_fetch_and_add(load, 1);
	return busy;
}

/* n requests that k read were answered (or abandoned): when it serves no
 * other, it serves nothing. */
static __always_inline void key_ends_requests(__u64 k, __u32 n)
{
	__u32 *load = bpf_map_lookup_elem(&key_load, &k);
	if (load && *load > n) {
		__sync_fetch_and_add(load, -n);
		return;
	}
	if (load)
		*load = 0;
	bpf_map_delete_elem(&active_ctx, &k);
	/* A thread key is its pid_tgid; a logical id's threads are kept in
	 * step by unmount. */
	if (!((__u32)k & WEFT_LOGICAL_BIT))
		traces_ctx_clear(k);
}

/* n of the connection's pending requests end. */
static __always_inline void serving_ends(struct serving *sv, __u32 n)
{
	if (n > sv->pending)
		n = sv->pending;
	if (!n)
		return;
	sv->pending -= n;
	if (sv->g)
		go_end(sv->key >> 32, sv->g, sv->span_id);
	else
		key_ends_requests(sv->key, n);
}

/* The connection sock_id gets a new request read by k (or goroutine g). */
static __always_inline void serving_begins(__u64 sock_id, __u64 k, __u64 g, const struct span_ctx *span)
{
	struct serving *sv = bpf_map_lookup_elem(&serving_sock, &sock_id);
	if (sv && sv->pending && sv->key == k && sv->g == g) {
		sv->pending++; /* pipelined behind an unanswered one */
		__builtin_memcpy(sv->trace_id, span->trace_id, 16);
		__builtin_memcpy(sv->span_id, span->span_id, 8);
		sv->trace_flags = span->trace_flags;
		return;
	}
	struct serving nsv = {.key = k, .g = g, .pending = 1, .trace_flags = span->trace_flags};
	__builtin_memcpy(nsv.trace_id, span->trace_id, 16);
	__builtin_memcpy(nsv.span_id, span->span_id, 8);
	if (!sv) {
		bpf_map_update_elem(&serving_sock, &sock_id, &nsv, BPF_ANY);
		return;
	}
	/* Another reader's requests are over as far as it goes; answered
	 * ones are. The connection's entry is reused (kept-alive, it serves
	 * request after request). */
	serving_ends(sv, sv->pending);
	*sv = nsv;
}

/* A traced process received the start of a request: its server span
 * continues an incoming traceparent or starts a trace, and becomes what
 * the reader works for: its goroutine in a Go program, else its key. */
static __always_inline void server_request(struct event_header *h, const __u8 *data, __u32 n,
					   const struct proc_info *pi, const struct span_ctx *link, int linked)
{
	/* Map keys from the stack: h is trace_context's argument, and 6.1's
	 * helpers take no key in a global function's memory argument. */
	__u64 sock = h->sock_id;
	struct span_ctx in = {};
	struct span_ctx active = {};
	__u64 k = ctx_key(h->pid, h->key);
	bool go = pi && pi->mode == WEFT_MODE_GO;
	__u64 g = go ? go_goid(pi, user_g()) : 0;
	enum tp_result r = parse_traceparent(data, n, HEAD_START, &in);
	if (r != TP_FOUND && linked) { /* what the TLS client decided (tlslink.h) */
		in = *link;
		r = TP_FOUND;
	}
	if (r == TP_FOUND) {
		__builtin_memcpy(h->trace_id, in.trace_id, 16);
		__builtin_memcpy(h->parent_id, in.span_id, 8);
		h->trace_flags = continued_flags(&in);
		random_ids(0, h->span_id);
	} else {
		random_ids(h->trace_id, h->span_id);
		h->trace_flags = root_flags(h->trace_id);
	}
	/* Only a head cut by the segment, not by the capture limit, goes on
	 * in the next segments weft sees. */
	if (r == TP_NOT_YET && n == h->bytes) {
		struct pending_head ph = {.key = k, .g = g, .tail = head_tail(0, data, n)};
		bpf_map_update_elem(&pending_head, &sock, &ph, BPF_ANY);
	} else {
		if (r == TP_NOT_YET)
			count(WEFT_STAT_TRACEPARENT_UNSEEN);
		delete_present(&pending_head, &sock);
	}
	h->ctx_kind = WEFT_CTX_SERVER;
	__builtin_memcpy(active.trace_id, h->trace_id, 16);
	__builtin_memcpy(active.span_id, h->span_id, 8);
	active.trace_flags = h->trace_flags;
	active.start_ns = h->ts_ns;
	if (go) {
		if (g)
			go_serve(h->pid, g, &active);
	} else {
		active.ambiguous = key_takes_request(k);
		bpf_map_update_elem(&active_ctx, &k, &active, BPF_ANY);
	}
	if (!active.ambiguous)
		traces_ctx_set(ctx_key(h->pid, h->tid), h->trace_id, h->span_id);
	serving_begins(h->sock_id, k, g, &active);
}

/* More of a request head the server span was decided without: when it
 * holds the traceparent, the span joins that trace, and the event says so
 * (WEFT_CTX_SERVER_CONT, same span id). */
static __always_inline void server_head_more(struct event_header *h, const __u8 *data, __u32 n)
{
	__u64 sock = h->sock_id;
	struct pending_head *p = bpf_map_lookup_elem(&pending_head, &sock);
	if (!p)
		return;
	struct pending_head ph = *p;
	struct span_ctx in = {};
	enum tp_result r = parse_traceparent(data, n, HEAD_CONT | ph.tail, &in);
	if (r == TP_NOT_YET && n == h->bytes) {
		p->tail = head_tail(ph.tail, data, n);
		return;
	}
	if (r == TP_NOT_YET)
		count(WEFT_STAT_TRACEPARENT_UNSEEN);
	bpf_map_delete_elem(&pending_head, &sock);
	if (r != TP_FOUND)
		return;
	in.trace_flags = continued_flags(&in);
	struct span_ctx *active;
	if (ph.g) {
		struct go_key gk = {.tgid = h->pid, .id = ph.g};
		struct go_ctx *c = bpf_map_lookup_elem(&go_active, &gk);
		active = c && GO_SPAN(c) ? &c->ctx : 0; /* its request may be over */
	} else {
		active = bpf_map_lookup_elem(&active_ctx, &ph.key);
	}
	if (!active)
		return;
	__builtin_memcpy(active->trace_id, in.trace_id, 16);
	active->trace_flags = in.trace_flags;
	struct serving *sv = bpf_map_lookup_elem(&serving_sock, &sock);
	if (sv && *(__u64 *)sv->span_id == *(__u64 *)active->span_id) {
		__builtin_memcpy(sv->trace_id, in.trace_id, 16);
		sv->trace_flags = in.trace_flags;
	}
	h->ctx_kind = WEFT_CTX_SERVER_CONT;
	__builtin_memcpy(h->trace_id, in.trace_id, 16);
	__builtin_memcpy(h->parent_id, in.span_id, 8);
	__builtin_memcpy(h->span_id, active->span_id, 8);
	h->trace_flags = in.trace_flags;
	/* The span joined another trace: so does the thread reading its head. */
	if ((__u32)ph.key == h->key && !active->ambiguous)
		traces_ctx_set(ctx_key(h->pid, h->tid), h->trace_id, h->span_id);
}

/* A TCP connection: ports in host order, addresses in network order. */
struct conn_key {
	__u32 family;
	__u32 local_port;
	__u32 remote_port;
	__u32 remote_ip[4];
	__u32 local_ip[4];
};

/* Outgoing connection -> the request its next request works for, written
 * by the code that owns that request before the bytes leave (nginx's
 * upstream hooks, the Node.js companion), taken by the send that starts
 * it: whichever thread writes, the connection names the request. All-zero
 * ids: decided, no parent. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct conn_key);
	__type(value, struct span_ctx);
} conn_parent SEC(".maps");

/* The connection a data event's socket is. */
static __always_inline void conn_key_of_event(const struct event_header *h, struct conn_key *k)
{
	k->family = h->family;
	k->local_port = h->sport;
	k->remote_port = h->dport;
	__builtin_memcpy(k->local_ip, h->saddr, 16);
	__builtin_memcpy(k->remote_ip, h->daddr, 16);
	if (h->family != 10 /* AF_INET6 */) {
		k->local_ip[1] = k->local_ip[2] = k->local_ip[3] = 0;
		k->remote_ip[1] = k->remote_ip[2] = k->remote_ip[3] = 0;
	}
}

/* The server span a client request sent now by thread pid_tgid (key) on
 * connection ck is the child of, copied to out; false for a new trace.
 * When weft cannot know, it is a new trace and a counter says why: a
 * wrong parent is worse than none. */
static __always_inline bool client_parent(__u64 pid_tgid, __u32 key, const struct conn_key *ck, const struct go_id *gid,
					  struct span_ctx *out)
{
	struct span_ctx *route = bpf_map_lookup_elem(&conn_parent, ck);
	if (route) {
		struct span_ctx r = *route;
		bpf_map_delete_elem(&conn_parent, ck);
		__u64 *id = (__u64 *)r.trace_id;
		if (!(id[0] | id[1]))
			return false; /* decided: no parent (counted where decided) */
		*out = r;
		return true;
	}
	__u32 tgid = pid_tgid >> 32;
	__u8 mode = mode_of(tgid);
	struct span_ctx *srv;
	if (mode == WEFT_MODE_GO) {
		return go_parent(tgid, gid ? gid : bpf_map_lookup_elem(&go_sender, &pid_tgid), out);
	} else if (!by_thread(mode)) {
		count(WEFT_STAT_PARENT_UNKNOWN);
		return false;
	} else {
		srv = lookup_active(tgid, key);
		if (srv && srv->ambiguous) {
			count(WEFT_STAT_PARENT_AMBIGUOUS);
			return false;
		}
	}
	if (!srv)
		return false;
	*out = *srv;
	return true;
}

/* The client span of a request the current thread sends on connection
 * ck: a child of what it works for, or a new trace. gid: the sending
 * goroutine of a Go program, when the caller could read it; else the one
 * the send's entry noted. */
static __always_inline void new_client_ctx(__u64 pid_tgid, __u32 key, const struct conn_key *ck,
					   const struct go_id *gid, struct span_ctx *out, __u8 *parent)
{
	struct span_ctx srv;
	if (client_parent(pid_tgid, key, ck, gid, &srv)) {
		__builtin_memcpy(out->trace_id, srv.trace_id, 16);
		__builtin_memcpy(parent, srv.span_id, 8);
		out->trace_flags = srv.trace_flags;
		random_ids(0, out->span_id);
	} else {
		__builtin_memset(parent, 0, 8);
		random_ids(out->trace_id, out->span_id);
		out->trace_flags = root_flags(out->trace_id);
	}
}

#include "tlslink.h"

/* A traced process sent the start of a request. When sk_msg injected a
 * traceparent during this send, report those ids; when the request
 * carries its own traceparent, use it; else decide now. */
static __always_inline void client_request(struct event_header *h, const __u8 *data, __u32 n, __u64 pid_tgid,
					   const struct proc_info *pi)
{
	h->ctx_kind = WEFT_CTX_CLIENT;
	struct client_span *sent = bpf_map_lookup_elem(&sent_ctx, &pid_tgid);
	if (sent) {
		__builtin_memcpy(h->trace_id, sent->ctx.trace_id, 16);
		__builtin_memcpy(h->span_id, sent->ctx.span_id, 8);
		__builtin_memcpy(h->parent_id, sent->parent_id, 8);
		__builtin_memcpy(h->more_span_ids, sent->more_span_ids, sizeof(h->more_span_ids));
		h->n_more = sent->n_more;
		h->trace_flags = sent->ctx.trace_flags;
		bpf_map_delete_elem(&sent_ctx, &pid_tgid);
		return;
	}
	struct span_ctx own = {};
	if (parse_traceparent(data, n, HEAD_START, &own) == TP_FOUND) {
		/* An in-process instrumented client (or a proxy passing the
		 * header on): the span on the wire is its own, exported by it,
		 * so weft's span is a child with an id of its own; two spans
		 * with one id would break the trace. */
		__builtin_memcpy(h->trace_id, own.trace_id, 16);
		__builtin_memcpy(h->parent_id, own.span_id, 8);
		random_ids(0, h->span_id);
		h->trace_flags = own.trace_flags;
		return;
	}
	struct span_ctx c = {};
	struct conn_key ck = {};
	conn_key_of_event(h, &ck);
	struct go_id gid = {};
	if (pi && pi->mode == WEFT_MODE_GO)
		gid.goid = go_goid(pi, user_g());
	new_client_ctx(pid_tgid, h->key, &ck, pi && pi->mode == WEFT_MODE_GO ? &gid : 0, &c, h->parent_id);
	__builtin_memcpy(h->trace_id, c.trace_id, 16);
	__builtin_memcpy(h->span_id, c.span_id, 8);
	h->trace_flags = c.trace_flags;
}

/* The response leaves: the request its connection's reader served is
 * over (an interim 1xx response ends nothing). */
static __always_inline void server_response(struct event_header *h, const __u8 *data, __u32 n)
{
	__u64 sock = h->sock_id;
	traces_ctx_clear(ctx_key(h->pid, h->tid));
	if (n > 9 && data[9] == '1')
		return;
	struct serving *sv = bpf_map_lookup_elem(&serving_sock, &sock);
	if (sv)
		serving_ends(sv, 1);
}

/* The connection closed: the requests still pending on it are over. */
static __always_inline void serving_closed(__u64 sock_id)
{
	struct serving *sv = bpf_map_lookup_elem(&serving_sock, &sock_id);
	if (!sv)
		return;
	serving_ends(sv, sv->pending);
	if (sv->g)
		go_forget(sv->key >> 32, sv->g);
	bpf_map_delete_elem(&serving_sock, &sock_id);
}

/* The first bytes of a request read apart from the rest: Go's net/http
 * server, for one, has a goroutine wait on a kept-alive connection with a
 * one-byte read while the handler runs, and the next request's first
 * byte can land there. */
struct start_prefix {
	__u8 len;
	__u8 b[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* socket */
	__type(value, struct start_prefix);
} start_prefixes SEC(".maps");

/* Fewer than eight bytes, all capitals: what a method begins with. */
static __always_inline bool method_prefix(const __u8 *d, __u32 n)
{
	if (n == 0 || n > 7)
		return false;
	for (__u32 i = 0; i < 7; i++)
		if (i < n && (d[i] < 'A' || d[i] > 'Z'))
			return false;
	return true;
}

/* The stashed prefix and these bytes begin a request. */
static __always_inline bool prefixed_request_start(__u64 sock_id, const __u8 *d, __u32 n)
{
	struct start_prefix *p = bpf_map_lookup_elem(&start_prefixes, &sock_id);
	if (!p)
		return false;
	__u8 w[8];
	__u32 len = p->len & 7;
	for (__u32 i = 0; i < 8; i++)
		w[i] = i < len ? p->b[i & 7] : d[(i - len) & 7];
	bool start = n + len >= 8 && is_request_start(w, 8);
	bpf_map_delete_elem(&start_prefixes, &sock_id);
	return start;
}

/* A request start read; over TLS, link holds its client's span when
 * linked (taken by emit_data, tlslink.h). */
static __always_inline void server_request_start(struct event_header *h, const __u8 *data, __u32 n,
						 const struct proc_info *pi, const struct span_ctx *link, int linked)
{
	server_request(h, data, n, pi, link, linked);
}

/* link, linked: what a TLS connection's other end decided for the request
 * this event starts (tlslink.h): for a read, its client span; for a
 * write, the ids already in h. */
static __always_inline void assign_trace_context(struct event_header *h, const __u8 *data, __u32 n, __u64 pid_tgid,
						 const struct proc_info *pi, const struct span_ctx *link, int linked)
{
	__u64 sock = h->sock_id;
	if (h->dir == WEFT_DIR_INGRESS) {
		if (is_request_start(data, n)) {
			server_request_start(h, data, n, pi, link, linked);
		} else if (n == h->bytes && method_prefix(data, n)) {
			struct start_prefix p = {.len = n};
			__builtin_memcpy(p.b, data, 7);
			bpf_map_update_elem(&start_prefixes, &sock, &p, BPF_ANY);
		} else if (n > 0 && ((data[0] >= 'A' && data[0] <= 'Z') || data[0] == ' ') && !is_response_start(data, n) &&
			   prefixed_request_start(h->sock_id, data, n)) {
			server_request_start(h, data, n, pi, link, linked);
		} else {
			server_head_more(h, data, n);
		}
	} else if (is_request_start(data, n)) {
		if (linked)
			h->ctx_kind = WEFT_CTX_CLIENT; /* the ids the write decided, in h */
		else
			client_request(h, data, n, pid_tgid, pi);
	} else if (is_response_start(data, n)) {
		server_response(h, data, n);
	}
}

#endif
