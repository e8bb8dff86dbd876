/* Wire format shared with bpf/include/mount.h (kept in step by hand: this
 * library is built without the BPF headers). */
#ifndef WEFT_JNI_H
#define WEFT_JNI_H

#include <stdint.h>

#define WEFT_IOCTL_CMD 0x0b10b1
#define WEFT_PACKET_SIZE 9 /* op, then a u64 little-endian argument */
#define WEFT_OP_PARENT 3
#define WEFT_OP_MOUNT 4
#define WEFT_OP_UNMOUNT 5
#define WEFT_OP_SLOT 0x57

/* The same op and argument as a note: sendto(2) of this on an unconnected
 * AF_UNIX datagram socket, which the kernel's sock_send_length tracepoint
 * sees before the call fails (ENOTCONN). weft's socket-only tracepoint
 * path, which watches no ioctl, reads registrations this way. */
#define WEFT_NOTE_MAGIC 0x74666577u /* "weft", little-endian */
struct weft_note {
	uint32_t magic;
	uint8_t op;
	uint8_t pad[3];
	uint64_t arg;
};

/* Every thread's slot registration, kept in the library's memory for a
 * tracer that starts after the threads registered: weft reads the table
 * (symbol weft_slots) once when it begins to follow the process, instead
 * of waiting for each thread to register again (pkg/tracer/slottable.go:
 * same layout). A thread claims a cell at its first registration (tid
 * first, then the address) and frees it when it ends (address first). */
#define WEFT_SLOTS_MAGIC 0x31736677u /* "wfs1", little-endian */
#define WEFT_SLOT_CELLS 4096         /* a power of two */
struct weft_slot_cell {
	int32_t tid;   /* 0: free */
	uint32_t pad;
	uint64_t addr; /* the thread's slot; 0 while claimed, not yet filled */
};
struct weft_slot_table {
	uint32_t magic; /* WEFT_SLOTS_MAGIC once the library is loaded */
	uint32_t cells; /* WEFT_SLOT_CELLS */
	struct weft_slot_cell cell[WEFT_SLOT_CELLS];
};
_Static_assert(sizeof(struct weft_slot_table) == 8 + 16 * WEFT_SLOT_CELLS, "struct weft_slot_table is read by weft");

#endif

/* TLS plaintext the agent saw (weft_tls.c), one record for weft_tls_event,
 * whose entry weft's uprobe reads (bpf/include/jvmtls.h: same layout). */
#define WEFT_TLS_COPY 4096 /* bytes of plaintext copied: WEFT_MAX_CAPTURE */
#define WEFT_TLS_FP_LEN 24
#define WEFT_TLS_SOCKET 1  /* an SSLSocket: fd names the socket */
#define WEFT_TLS_ENGINE 2  /* an SSLEngine: conn names it, fp ties it to its socket */
struct weft_tls_io {
	uint64_t conn;  /* the engine's id, unique in the process (WEFT_TLS_ENGINE) */
	int32_t fd;     /* the socket's descriptor (WEFT_TLS_SOCKET), else -1 */
	uint8_t dir;    /* 0: plaintext about to be sent, 1: plaintext received */
	uint8_t kind;   /* WEFT_TLS_SOCKET or WEFT_TLS_ENGINE */
	uint8_t has_fp; /* fp holds the first bytes of the record made (dir 0) or read (dir 1) */
	uint8_t pad;
	uint64_t len;   /* plaintext bytes the call moved */
	uint64_t buf;   /* the first min(len, WEFT_TLS_COPY) of them */
	uint8_t fp[WEFT_TLS_FP_LEN];
};
_Static_assert(sizeof(struct weft_tls_io) == 56, "struct weft_tls_io is shared with bpf/include/jvmtls.h");
