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
#define H2_FRAME_HDR 9
/* Frames walked per call: a 64 KiB write of empty DATA frames has 7282,
 * real traffic far fewer; past it the connection's copy is cut. */
#define H2_MAX_FRAMES 2048

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
	__u8 copy;    /* the current frame's payload is copied */
	__u8 have;    /* bytes of a frame header cut by the last call's end */
	__u8 hdr[4];  /* its length and type bytes, as far as seen */
	__u8 cut;     /* the copy lost the framing: nothing more is copied */
	__u8 preface; /* bytes of the client preface still to come (the client's direction) */
	__u8 _pad[4];
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

/* Copies n bytes at offset pos of the call's data (a buffer or iovecs)
 * to e->data[out]. */
static __always_inline bool ub_read(struct event_buf *e, __u64 out, const struct user_buf *ub, __u64 pos, __u64 n)
{
	if (n == 0)
		return true;
	if (ub->iovcnt == 0) {
		BOUND(out, 0xfff);
		BOUND(n, 0x1fff);
		return bpf_probe_read_user(&e->data[out], n, (void *)(ub->ptr + ub->offset + pos)) == 0;
	}
	__u64 skip = ub->offset + pos;
	for (int i = 0; i < MAX_IOVS; i++) {
		if (i >= ub->iovcnt || n == 0)
			break;
		struct iovec iov;
		void *at = (void *)(ub->ptr + i * sizeof(iov));
		long err = ub->iov_kernel ? bpf_probe_read_kernel(&iov, sizeof(iov), at)
					  : bpf_probe_read_user(&iov, sizeof(iov), at);
		if (err < 0)
			return false;
		__u64 base = (__u64)iov.iov_base, len = iov.iov_len;
		if (skip >= len) {
			skip -= len;
			continue;
		}
		base += skip;
		len -= skip;
		skip = 0;
		if (len > n)
			len = n;
		__u64 o = out, l = len;
		BOUND(o, 0xfff);
		BOUND(l, 0x1fff);
		if (bpf_probe_read_user(&e->data[o], l, (void *)base) < 0)
			return false;
		out += len;
		n -= len;
	}
	return n == 0;
}

struct h2_walk_ctx {
	struct event_buf *e;
	const struct user_buf *ub;
	struct h2_walk *st;
	__u32 pos;   /* offset in the call's data */
	__u32 out;   /* bytes copied so far */
	__u32 bytes; /* the call's length */
	__u8 cut;
	__u8 _pad[3];
};

/* Copies the rest of the current frame's payload in this call (or skips
 * it). False when the copy cannot go on. */
static __always_inline bool h2_payload(struct h2_walk_ctx *w)
{
	struct h2_walk *st = w->st;
	__u32 n = w->bytes - w->pos;
	if (n > st->left)
		n = st->left;
	if (st->copy) {
		if (w->out + n > WEFT_MAX_CAPTURE || !ub_read(w->e, w->out, w->ub, w->pos, n))
			return false;
		w->out += n;
	}
	w->pos += n;
	st->left -= n;
	return true;
}

/* A frame header is complete in st->hdr (length, type): its payload starts. */
static __always_inline void h2_begin(struct h2_walk *st)
{
	st->left = (__u32)st->hdr[0] << 16 | (__u32)st->hdr[1] << 8 | st->hdr[2];
	st->copy = h2_payload_copied(st->hdr[3]);
	st->have = 0;
}

/* One step of the walk: the rest of a frame header, then its payload. */
static long h2_step(__u64 i, void *arg)
{
	struct h2_walk_ctx *w = arg;
	struct h2_walk *st = w->st;
	if (!st || !w->e || !w->ub)
		return 1;
	if (st->preface) { /* copied whole, like a payload */
		__u32 n = w->bytes - w->pos;
		if (n > st->preface)
			n = st->preface;
		if (w->out + n > WEFT_MAX_CAPTURE || !ub_read(w->e, w->out, w->ub, w->pos, n)) {
			w->cut = 1;
			return 1;
		}
		w->out += n;
		w->pos += n;
		st->preface -= n;
		return st->preface ? 1 : 0;
	}
	if (st->left) {
		if (!h2_payload(w)) {
			w->cut = 1;
			return 1;
		}
		if (st->left)
			return 1; /* the frame goes on in the next call */
	}
	if (w->pos >= w->bytes)
		return 1;
	__u32 have = st->have;
	if (have >= H2_FRAME_HDR)
		have = 0;
	__u32 want = H2_FRAME_HDR - have;
	__u32 n = w->bytes - w->pos;
	if (n > want)
		n = want;
	if (w->out + n > WEFT_MAX_CAPTURE || !ub_read(w->e, w->out, w->ub, w->pos, n)) {
		w->cut = 1;
		return 1;
	}
	/* Keep the length and type bytes for when the header completes. */
	for (__u32 k = 0; k < 4; k++) {
		__u32 at = have + k; /* header byte k of this piece */
		if (k >= n || at >= 4)
			break;
		__u32 o = (w->out + k) & (WEFT_MAX_CAPTURE - 1);
		st->hdr[at & 3] = w->e->data[o];
	}
	w->out += n;
	w->pos += n;
	st->have = have + n;
	if (st->have < H2_FRAME_HDR)
		return 1; /* cut by the call's end */
	h2_begin(st);
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
	long loops = bpf_loop(H2_MAX_FRAMES, h2_step, &w, 0);
	if (loops == H2_MAX_FRAMES && w.pos < w.bytes)
		w.cut = 1; /* more frames than walked: where the next call starts is unknown */
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

/* The walk state of a direction of sk; a call that opens with the preface
 * (in the n bytes copied to e) starts both directions' walks. */
static __always_inline struct h2_walk *h2_conn(struct event_buf *e, __u64 sk, __u8 dir, __u32 n, __u32 bytes)
{
	struct h2_key k = {.sock = sk, .dir = dir};
	struct h2_walk *st = bpf_map_lookup_elem(&h2_conns, &k);
	if (st || !h2_preface(e->data, n, bytes))
		return st;
	struct h2_walk fresh = {};
	struct h2_key other = {.sock = sk, .dir = !dir};
	if (bpf_map_update_elem(&h2_conns, &k, &fresh, BPF_ANY) < 0 ||
	    bpf_map_update_elem(&h2_conns, &other, &fresh, BPF_ANY) < 0) {
		count(WEFT_STAT_H2_TABLE_FULL);
		bpf_map_delete_elem(&h2_conns, &k);
		return NULL;
	}
	st = bpf_map_lookup_elem(&h2_conns, &k);
	if (st)
		st->preface = H2_PREFACE_LEN; /* the walk copies it again, then the frames */
	return st;
}

static __always_inline void h2_forget(__u64 sk)
{
	struct h2_key k = {.sock = sk, .dir = 0};
	bpf_map_delete_elem(&h2_conns, &k);
	k.dir = 1;
	bpf_map_delete_elem(&h2_conns, &k);
}

#endif
