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

#endif
