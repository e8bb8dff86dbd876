/* Wire format shared with bpf/include/mount.h (kept in step by hand: this
 * library is built without the BPF headers). */
#ifndef WEFT_JNI_H
#define WEFT_JNI_H

#define WEFT_IOCTL_CMD 0x0b10b1
#define WEFT_PACKET_SIZE 9 /* op, then a u64 little-endian argument */
#define WEFT_OP_PARENT 3
#define WEFT_OP_MOUNT 4
#define WEFT_OP_UNMOUNT 5
#define WEFT_OP_SLOT 0x57

#endif
