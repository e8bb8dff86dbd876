/* Structures shared between the BPF programs and Go (generated with
 * bpf2go -type). Every field is explicitly sized and padded so the Go
 * layout is the C layout. */
#ifndef WEFT_H
#define WEFT_H

/* Largest payload prefix one event can carry; the runtime limit is the
 * capture_max constant, set by user space at load time. */
#define WEFT_MAX_CAPTURE 4096

enum weft_event_kind {
	WEFT_EV_DATA = 1,  /* bytes sent or received on a TCP socket */
	WEFT_EV_CLOSE = 2, /* a tracked socket reached TCP_CLOSE */
	WEFT_EV_EXEC = 3,  /* a process called execve (selection by exe) */
	WEFT_EV_EXIT = 4,  /* a traced process exited */
	WEFT_EV_FIRST_FIN = 5, /* one side of a tracked connection closed it first (dir) */
	WEFT_EV_AGENT = 6, /* a traced process began to speak the mount protocol (its agent loaded) */
	WEFT_EV_H2_CLAIM = 7, /* goroutine goid will write stream h2_stream's HEADERS
	                       * for the request parent_id of trace_id (h2claim.h) */
	WEFT_EV_H2_SERVE = 8, /* the HTTP/2 server stream h2_stream of the connection goroutine
	                       * goid reads (or sock_id, its creator, read first) is span
	                       * span_id of trace_id under parent_id (h2serve.h); ctx_kind
	                       * WEFT_CTX_H2_STREAM when parent_id is its client span,
	                       * of this host (h2link.h); with goid 0, the stream of
	                       * socket sock_id (tls: its plaintext), nginx.h */
	WEFT_EV_FORK = 9, /* traced process tid forked process pid, which does not
	                   * share its parent's per-process uprobes */
	WEFT_EV_CALLS_OUT = 10, /* Go process pid, followed by goroutine, connected
	                         * out for the first time (h2peer.h) */
	WEFT_EV_H2_OPEN = 11, /* the client stream h2_stream that thread tid of process
	                       * pid is about to open on socket sock_id (tls: its
	                       * plaintext) is span span_id of trace_id under parent_id
	                       * (zero: a root), which the kernel decided for its
	                       * server end on this host (h2seed.h) */
};

/* What the trace context fields of an event say. */
enum weft_ctx_kind {
	WEFT_CTX_NONE = 0,
	WEFT_CTX_SERVER = 1, /* this received segment starts a request: its server span */
	WEFT_CTX_CLIENT = 2, /* this sent segment starts a request: its client span */
	WEFT_CTX_SERVER_CONT = 3, /* this received segment continues a request head
	                           * and carried its traceparent: the server span
	                           * (span_id) joins trace_id under parent_id */
	WEFT_CTX_H2_STREAM = 4, /* this sent HTTP/2 segment is the write of the
	                         * goroutine that began stream h2_stream's HEADERS
	                         * for a request: span parent_id of trace_id
	                         * (h2claim.h); span_id, when set, is the stream's
	                         * span, decided for its server end (h2link.h) */
};

/* What an event's payload is. */
enum weft_capture {
	WEFT_CAP_PREFIX = 0, /* the call's first bytes */
	WEFT_CAP_H2 = 1,     /* an HTTP/2 connection's frames in the call, DATA and other
	                      * payloads user space does not decode left out (h2walk.h) */
	WEFT_CAP_H2_CUT = 2, /* an HTTP/2 connection whose framing the copy lost: no payload */
};

enum weft_direction {
	WEFT_DIR_EGRESS = 0,  /* the process sent the bytes */
	WEFT_DIR_INGRESS = 1, /* the process received the bytes */
};

/* Reasons an event was lost, indexes of the stats map. */
enum weft_stat {
	WEFT_STAT_EVENTS = 0,        /* events written to the ring buffer */
	WEFT_STAT_LOST_RINGBUF = 1,  /* ring buffer full */
	WEFT_STAT_LOST_STASH = 2,    /* in-flight syscall map full */
	WEFT_STAT_LOST_READ = 3,     /* payload could not be read from user memory */
	WEFT_STAT_SOCK_TABLE_FULL = 4, /* tracked-socket map full: close may be missed */
	WEFT_STAT_AGENT_PACKETS = 5, /* JVM agent ioctl packets acted on */
	WEFT_STAT_BAD_PACKETS = 6,   /* agent packets ignored: unreadable or unknown op */
	WEFT_STAT_SAMPLES = 7,       /* stack samples written to the samples ring buffer */
	WEFT_STAT_LOST_SAMPLES = 8,  /* samples ring buffer full */
	WEFT_STAT_CONNS_JOINED = 9,  /* client connections put in the injection sockhash */
	WEFT_STAT_CONNS_RELEASED = 10, /* taken out again: their first bytes were not HTTP/1.x */
	WEFT_STAT_CONNS_UNTRACED = 11, /* taken out again: an untraced process sent on them */
	WEFT_STAT_CONNS_BLOCKING = 12, /* not put in it: blocking mode when connecting */
	WEFT_STAT_PARENT_AMBIGUOUS = 13, /* client span made a root: its key held two live requests */
	WEFT_STAT_PARENT_UNKNOWN = 14,   /* client span made a root: the process's runtime is not followed */
	WEFT_STAT_PARENT_STALE = 15,     /* client span made a root: its goroutine's request had ended */
	WEFT_STAT_TRACEPARENT_UNSEEN = 16, /* request head went on past the capture: a traceparent there was not seen */
	WEFT_STAT_NOT_HTTP_SKIPPED = 17,   /* data on a socket user space found not to carry HTTP: not copied */
	WEFT_STAT_CALL_UNREADABLE = 18,    /* socket path: data moved by a call whose buffer it cannot name (sendmmsg, io_uring, splice) */
	WEFT_STAT_H2_TABLE_FULL = 19, /* an HTTP/2 connection found no room in h2_conns: not followed */
	WEFT_STAT_H2_CUT = 20,        /* an HTTP/2 connection's copy lost its framing (over 4 KiB of headers in a call, or an event the full ring buffer dropped) */
	WEFT_STAT_TLS_NO_SOCK = 21,   /* TLS plaintext whose socket no nested call showed: not reported */
	WEFT_STAT_TLS_LINK_AMBIGUOUS = 22, /* TLS request read while its client had sent another: no link to it */
	WEFT_STAT_TLS_BIO_LEARNED = 23, /* a memory-BIO TLS connection tied to its socket by its ciphertext (tlsbio.h) */
	WEFT_STAT_LOST_EMIT = 24,     /* a data event whose emitting program was not in its array (a loader bug) */
	WEFT_STAT_MAX = 25,
};

struct event_header {
	__u64 ts_ns;   /* bpf_ktime_get_ns, CLOCK_MONOTONIC */
	__u64 sock_id; /* kernel address of struct sock: the connection's identity */
	__u32 pid;     /* tgid */
	__u32 tid;
	__u32 key;     /* correlation key: tid, or a mounted logical id */
	__u32 bytes;   /* bytes the call transferred */
	__u32 captured; /* payload bytes that follow this header */
	__u16 sport;   /* local port, host order */
	__u16 dport;   /* remote port, host order */
	__u8 saddr[16]; /* local address: IPv4 in the first 4 bytes, or IPv6 */
	__u8 daddr[16]; /* remote address */
	__u16 family;  /* AF_INET or AF_INET6 */
	__u8 kind;     /* enum weft_event_kind */
	__u8 dir;      /* enum weft_direction */
	__u8 ctx_kind; /* enum weft_ctx_kind */
	__u8 trace_flags;
	__u8 capture;  /* enum weft_capture */
	__u8 tls;      /* 1: the plaintext of a TLS connection (tls.h), not its bytes on the wire */
	/* The span the kernel assigned to the request this segment starts
	 * (ctx_kind != NONE): the ids that went on the wire. */
	__u8 trace_id[16];
	__u8 span_id[8];
	__u8 parent_id[8]; /* zero for a root span */
	/* Pipelined requests in the same send: their client span ids, in
	 * order after span_id (same trace and parent). On an HTTP/2 read of
	 * a Go process, [0] is the reading goroutine's creator (h2claim.h). */
	__u8 more_span_ids[3][8];
	__u8 n_more;
	/* A data event: events of its stream were lost before it (the ring
	 * buffer was full). A close: bit 0 the socket's, bit 1 its TLS
	 * plaintext's. */
	__u8 gap;
	__u8 _pad2[2];
	__u32 h2_stream; /* WEFT_CTX_H2_STREAM, WEFT_EV_H2_CLAIM and _SERVE: the stream */
	/* The goroutine that wrote or read an HTTP/2 segment of a Go process,
	 * or that a WEFT_EV_H2_CLAIM or _SERVE names; 0 otherwise. */
	__u64 goid;
};

/* The active span of a correlation key, in the layout of the
 * OpenTelemetry eBPF profiler's traces_ctx_v1 value (trace id, span id),
 * followed by the flags. */
struct span_ctx {
	__u8 trace_id[16];
	__u8 span_id[8];
	__u8 trace_flags;
	__u8 ambiguous; /* the key read another request before this one was answered */
	__u8 _pad[6];
	__u64 start_ns; /* when the server span started (0 for client spans) */
};

/* How the kernel side tells which request a process's threads work for
 * (proc_mode map; user space decides it per process). */
enum weft_proc_mode {
	WEFT_MODE_UNKNOWN = 0, /* not classified yet: client spans start their own trace */
	WEFT_MODE_THREAD = 1,  /* by thread (or a JVM agent's mounted id) */
	WEFT_MODE_GO = 2,      /* by goroutine: Go runtime hooks are attached */
	WEFT_MODE_REFUSE = 3,  /* a runtime weft cannot follow: client spans start their own trace */
	WEFT_MODE_AGENT = 4,   /* by thread, with the ids an agent mounts (mount protocol): set by
	                        * the kernel side at the process's first packet, kept by user space */
	WEFT_MODE_NODE = 5,    /* Node.js: a client request's parent only as weft's companion
	                        * announces it for its connection (node.h), else its own trace */
};

/* A traced process's mode and, for Go, where runtime.g keeps the
 * goroutine's id and its creator's (0: not in this Go, before 1.21). */
struct proc_info {
	__u8 mode; /* enum weft_proc_mode */
	__u8 clients; /* it connected sockets that may join the injection
	               * sockhash: sk_msg needs its sending goroutines noted */
	__u16 goid_off;
	__u16 parent_goid_off;
	__u8 tls; /* enum weft_proc_tls: set by the kernel side at its first
	           * TLS call, kept by user space */
	__u8 h2;  /* set by the kernel side before the first HTTP/2 connection
	           * its socket calls open, kept by user space: until then
	           * they skip the HTTP/2 walk's lookup */
	__u64 calls_out; /* set by the kernel side at its first connect(), kept
	                  * by user space: its goroutines' creation matters.
	                  * A word, for the atomic adds on it (h2peer.h,
	                  * weft_set_mode) */
};

/* What a process's TLS library calls need of its socket calls (tls.h). */
enum weft_proc_tls {
	WEFT_PROC_TLS_CALLS = 1, /* TLS calls: a socket call may be nested in one */
	WEFT_PROC_TLS_BIO = 2,   /* a BIO_write probe fired: OpenSSL, which may move
	                          * the ciphertext itself through memory BIOs (tlsbio.h) */
};

/* Frames bpf_get_stack records per stack (user or kernel). */
#define WEFT_MAX_STACK 127

/* One on-CPU stack sample of a traced thread (profile.h), with the span
 * its correlation key was serving when the timer fired. */
struct stack_sample {
	__u64 ts_ns;    /* bpf_ktime_get_ns, CLOCK_MONOTONIC */
	__u32 pid;      /* tgid */
	__u32 tid;
	__u32 cpu;
	__u32 key;      /* correlation key: tid, or a mounted logical id */
	__u8 trace_id[16]; /* all zero outside any span */
	__u8 span_id[8];
	__u8 comm[16];  /* thread name */
	__u16 user_len;   /* frames in user_stack */
	__u16 kernel_len; /* frames in kernel_stack */
	__u8 trace_flags;
	__u8 _pad[3];
	__u64 user_stack[WEFT_MAX_STACK];   /* leaf first */
	__u64 kernel_stack[WEFT_MAX_STACK]; /* leaf first */
};

#endif
