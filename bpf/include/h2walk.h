/* HTTP/2 connections: what the kernel copies of them.
 *
 * A prefix of each call is not enough for HTTP/2: servers batch many
 * frames into one write (gRPC-Go up to 32 KiB), and a header block that is
 * not copied whole spoils the HPACK table for every later stream. So on a
 * connection that opened with the client preface the kernel walks the
 * frames of each call, copies every frame header and the payloads user
 * space decodes (header blocks, RST_STREAM, GOAWAY), and leaves DATA and
 * the other payloads out: the copy is the stream with those payloads cut
 * (WEFT_CAP_H2). Frames and header blocks may span calls; the walk's
 * position is kept per connection and direction. */
#ifndef WEFT_H2WALK_H
#define WEFT_H2WALK_H

#define H2_PREFACE_LEN 24
/* In a call's event header from h2_detect to h2_stream_parent, which
 * clears it: the call began the connection. */
#define H2_PREFACE_CALL 0xffffffff
#define H2_FRAME_HDR 9
/* Steps of the walk per call: about two per frame (its header, its
 * payload) plus one per iovec. A 64 KiB write of empty DATA frames would
 * take 7282, real traffic far fewer; past it the connection's copy is cut. */
#define H2_MAX_STEPS 8192

enum h2_frame_type {
	H2_DATA = 0,
	H2_HEADERS = 1,
	H2_RST_STREAM = 3,
	H2_PUSH_PROMISE = 5,
	H2_GOAWAY = 7,
	H2_CONTINUATION = 9,
};

struct h2_key {
	__u64 sock;
	__u8 dir;
	__u8 _pad[7];
};

/* Where the walk of one direction stands between two calls. */
struct h2_walk {
	__u32 left;   /* payload bytes of the current frame still to come */
	__u32 opened; /* the highest stream whose HEADERS went this way (h2seed.h) */
	__u8 copy;    /* the current frame's payload is copied */
	__u8 have;    /* bytes of a frame header cut by the last call's end */
	__u8 cut;     /* the copy lost the framing: nothing more is copied */
	__u8 preface; /* bytes of the client preface still to come (the client's direction) */
	__u8 client;  /* the direction of the client's frames, at the client's end */
	__u8 _pad[3];
	__u8 hdr[16]; /* the frame header, as far as seen (9 bytes; 16 for the verifier's bounds) */
};

/* Connections (both directions) that opened with the client preface.
 * A plain hash: an entry is deleted at the connection's TCP_CLOSE, and a
 * full table leaves a new connection uncopied-as-HTTP/2 (user space stops
 * following it), never another connection's entry dropped unseen. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct h2_key);
	__type(value, struct h2_walk);
} h2_conns SEC(".maps");

static __always_inline bool h2_payload_copied(__u8 type)
{
	return type == H2_HEADERS || type == H2_CONTINUATION || type == H2_PUSH_PROMISE || type == H2_RST_STREAM ||
	       type == H2_GOAWAY;
}

struct h2_walk_ctx {
	struct event_buf *e;
	const struct user_buf *ub;
	struct h2_walk *st;
	__u64 base;  /* where the call's data goes on in user memory */
	__u64 skip;  /* bytes of the first iovec before the data (a kprobe's iov_iter offset) */
	__u32 seg;   /* bytes left at base in the current buffer or iovec */
	__u32 iov;   /* iovecs taken so far */
	__u32 pos;   /* bytes of the call walked */
	__u32 out;   /* bytes copied so far */
	__u32 bytes; /* the call's length */
	__u8 cut;
	__u8 _pad[3];
};

/* Takes the next iovec of the call: the data goes on there. */
static __always_inline bool h2_next_iov(struct h2_walk_ctx *w)
{
	const struct user_buf *ub = w->ub;
	if (ub->iovcnt == 0 || w->iov >= ub->iovcnt)
		return false;
	struct iovec iov;
	void *at = (void *)(ub->ptr + (__u64)w->iov * sizeof(iov));
	long err = ub->iov_kernel ? bpf_probe_read_kernel(&iov, sizeof(iov), at) : bpf_probe_read_user(&iov, sizeof(iov), at);
	if (err < 0)
		return false;
	w->iov++;
	__u64 base = (__u64)iov.iov_base, len = iov.iov_len;
	if (w->skip >= len) {
		w->skip -= len;
		len = 0;
	} else {
		base += w->skip;
		len -= w->skip;
		w->skip = 0;
	}
	w->base = base;
	w->seg = len > 0xffffffff ? 0xffffffff : len;
	return true;
}

/* Copies n bytes at base to the copy's end. */
static __always_inline bool h2_copy(struct h2_walk_ctx *w, __u32 n)
{
	if (w->out + n > WEFT_MAX_CAPTURE)
		return false;
	__u64 o = w->out, l = n;
	BOUND(o, 0xfff);
	BOUND(l, 0x1fff);
	if (l && bpf_probe_read_user(&w->e->data[o], l, (void *)w->base) < 0)
		return false;
	w->out += n;
	return true;
}

/* The stream of the frame header at hdr. */
static __always_inline __u32 h2_frame_stream(const __u8 *hdr)
{
	return ((__u32)hdr[5] << 24 | (__u32)hdr[6] << 16 | (__u32)hdr[7] << 8 | hdr[8]) & 0x7fffffff;
}

/* A frame header is complete in st->hdr: its payload starts. */
static __always_inline void h2_begin(struct h2_walk *st)
{
	st->left = (__u32)st->hdr[0] << 16 | (__u32)st->hdr[1] << 8 | st->hdr[2];
	st->copy = h2_payload_copied(st->hdr[3]);
	st->have = 0;
	if (st->hdr[3] == H2_HEADERS) {
		__u32 stream = h2_frame_stream(st->hdr);
		if (stream > st->opened)
			st->opened = stream;
	}
}

/* Of the n bytes at hand, how many the frame header being read takes;
 * *have, how many it has already. */
static __always_inline __u32 h2_header_take(const struct h2_walk *st, __u32 n, __u32 *have)
{
	__u32 h = st->have;
	if (h >= H2_FRAME_HDR)
		h = 0;
	*have = h;
	return n > H2_FRAME_HDR - h ? H2_FRAME_HDR - h : n;
}

/* One step of the walk: the next piece of the preface, of a frame header
 * or of a payload that lies in the current buffer (or iovec), copied or
 * passed over; or the move to the next iovec. */
static long h2_step(__u64 i, void *arg)
{
	struct h2_walk_ctx *w = arg;
	struct h2_walk *st = w->st;
	if (!st || !w->e || !w->ub)
		return 1;
	if (w->pos >= w->bytes)
		return 1;
	if (w->seg == 0) {
		if (!h2_next_iov(w)) {
			w->cut = 1;
			return 1;
		}
		return 0;
	}
	__u32 n = w->bytes - w->pos;
	if (n > w->seg)
		n = w->seg;
	if (st->preface) { /* copied whole, like a payload */
		if (n > st->preface)
			n = st->preface;
		if (!h2_copy(w, n)) {
			w->cut = 1;
			return 1;
		}
		st->preface -= n;
	} else if (st->left) {
		if (n > st->left)
			n = st->left;
		if (st->copy && !h2_copy(w, n)) {
			w->cut = 1;
			return 1;
		}
		st->left -= n;
	} else {
		__u32 have;
		n = h2_header_take(st, n, &have);
		__u32 at = w->out;
		if (!h2_copy(w, n)) {
			w->cut = 1;
			return 1;
		}
		/* Keep the header's bytes for when it completes. */
		for (__u32 k = 0; k < H2_FRAME_HDR; k++) {
			if (k >= n || have + k >= H2_FRAME_HDR)
				break;
			__u64 idx = have + k, src = at + k;
			BOUND(idx, 15);
			BOUND(src, 0xfff);
			st->hdr[idx] = w->e->data[src];
		}
		st->have = have + n;
		if (st->have == H2_FRAME_HDR)
			h2_begin(st);
	}
	w->pos += n;
	w->base += n;
	w->seg -= n;
	return 0;
}

/* Replaces the copy of an HTTP/2 connection's call with its frames.
 * Returns the bytes copied; st->cut says when the framing is lost. A
 * global function: the verifier checks it once, not once per caller. */
__noinline __u32 h2_compact(struct event_buf *e, const struct user_buf *ub, struct h2_walk *st, __u32 bytes)
{
	if (!e || !ub || !st)
		return 0;
	if (st->cut)
		return 0;
	struct h2_walk_ctx w = {.e = e, .ub = ub, .st = st, .bytes = bytes};
	if (ub->iovcnt == 0) {
		w.base = ub->ptr + ub->offset;
		w.seg = bytes;
	} else {
		w.skip = ub->offset;
	}
	long steps = bpf_loop(H2_MAX_STEPS, h2_step, &w, 0);
	if (steps == H2_MAX_STEPS && w.pos < w.bytes)
		w.cut = 1; /* more to walk than steps: where the next call starts is unknown */
	if (w.cut) {
		st->cut = 1;
		count(WEFT_STAT_H2_CUT);
		return 0;
	}
	return w.out;
}

/* Whether the n bytes of a call (all it moved, when fewer than 24) open
 * with the 24 bytes every HTTP/2 connection opens with, client to server.
 * Servers may read them in pieces (Go's reads 14, then 10); four are
 * enough to tell: no HTTP/1 method starts "PRI ". */
static __always_inline bool h2_preface(const __u8 *d, __u32 n, __u32 bytes)
{
	const char p[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	if (n < 4 || (n < H2_PREFACE_LEN && n != bytes))
		return false;
	for (int k = 0; k < H2_PREFACE_LEN; k++)
		if (k < n && d[k] != (__u8)p[k])
			return false;
	return true;
}

/* The proc_mode entry h2_detect gives a process not classified yet. */
static const struct proc_info h2_noted = {.mode = WEFT_MODE_UNKNOWN, .h2 = 1};

/* The walk state of a direction of sk, if its connection is HTTP/2. */
static __always_inline struct h2_walk *h2_lookup(__u64 sk, __u8 dir)
{
	struct h2_key k = {.sock = sk, .dir = dir};
	return bpf_map_lookup_elem(&h2_conns, &k);
}

/* A call that opens with the preface (in the n bytes copied to e) starts
 * both directions' walks; returns this direction's. */
static __always_inline struct h2_walk *h2_detect(struct event_buf *e, struct proc_info *pi, __u64 sk, __u8 dir, __u32 n,
						 __u32 bytes)
{
	if (!h2_preface(e->data, n, bytes))
		return NULL;
	/* Before the walk exists: the other direction's next call, on
	 * another CPU, must look for it. A process user space has not
	 * classified yet has no entry to mark: it gets one, of unknown mode
	 * as without, which user space keeps the mark of when it classifies
	 * the process (else its entry would skip the walk from then on). */
	if (!pi) {
		bpf_map_update_elem(&proc_mode, &e->hdr.pid, &h2_noted, BPF_NOEXIST);
		pi = proc_of(e->hdr.pid);
	}
	if (pi && !pi->h2)
		pi->h2 = 1;
	struct h2_key k = {.sock = sk, .dir = dir};
	struct h2_key other = {.sock = sk, .dir = !dir};
	struct h2_walk fresh = {};
	if (bpf_map_update_elem(&h2_conns, &k, &fresh, BPF_ANY) < 0 ||
	    bpf_map_update_elem(&h2_conns, &other, &fresh, BPF_ANY) < 0) {
		count(WEFT_STAT_H2_TABLE_FULL);
		bpf_map_delete_elem(&h2_conns, &k);
		return NULL;
	}
	struct h2_walk *st = bpf_map_lookup_elem(&h2_conns, &k);
	if (st) {
		st->preface = H2_PREFACE_LEN; /* the walk copies it again, then the frames */
		st->client = dir == WEFT_DIR_EGRESS;
		/* For h2_stream_parent, which the event goes to next (the
		 * header, not the stack, which is short in emit_data). */
		e->hdr.h2_stream = H2_PREFACE_CALL;
	}
	return st;
}

static __always_inline void h2_forget(__u64 sk)
{
	struct h2_key k = {.sock = sk, .dir = 0};
	delete_present(&h2_conns, &k);
	k.dir = 1;
	delete_present(&h2_conns, &k);
}

#endif
