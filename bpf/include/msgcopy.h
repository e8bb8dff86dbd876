/* The copy of a message's first bytes that the sk_msg program takes
 * (propagate.h), and that the HTTP/2 seed scans (h2seed.h). */
#ifndef WEFT_MSGCOPY_H
#define WEFT_MSGCOPY_H

#define INJECT_PULL 2048 /* message bytes examined */

/* The first bytes of a message, copied out of the packet so that bpf_loop
 * callbacks can scan them (packet pointers cannot be passed to callbacks,
 * and open-coded scans over packet data make the verifier explore every
 * possible request-line length). */
struct inject_buf {
	__u8 data[2 * INJECT_PULL];
	struct client_span cs; /* the spans this send's requests get */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct inject_buf);
} inject_scratch SEC(".maps");

#endif
