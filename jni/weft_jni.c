/* libweft_jni: the JVM agent's line to the kernel side (bpf/include/mount.h).
 *
 * The kernel only observes ioctl(0, 0x0b10b1, packet); the call itself fails
 * (ENOTTY/EBADF) and is harmless. In slot mode each OS thread registers the
 * address of its own slot once (op 0x57) and from then on mounting a logical
 * id is a plain store that BPF reads at the thread's next socket event. A
 * registration also goes out as a note on a socket (weft_jni.h), for the
 * kernels where weft watches socket calls and no ioctl.
 * Natives here never block or log, and allocate at most once per thread
 * (its first registration's pthread_setspecific): they run on every hop
 * of a request, inside JDK and Netty internals. */
#include <errno.h>
#include <jni.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "weft_jni.h"

/* Read by the kernel (bpf_probe_read_user) at each socket event of this
 * thread: nonzero = that logical id is mounted. TLS lives as long as the
 * OS thread, which is what the kernel's registration assumes. */
static __thread volatile uint64_t slot;
/* The registration generation this thread last told the kernel about. */
static __thread uint32_t registered_gen;
/* Bumped by weft_refresh so that every thread registers again at its next
 * mount: covers a tracer that started after the threads registered. */
static volatile uint32_t generation = 1;
/* Registered slots, which a tracer started later reads (weft_jni.h). */
__attribute__((visibility("default"))) struct weft_slot_table weft_slots;
/* This thread's cell in weft_slots; NULL until claimed (or when full). */
static __thread struct weft_slot_cell *slot_cell;
/* Frees slot_cell when its thread ends: a tid the kernel hands out again
 * must not find this thread's slot. */
static pthread_key_t cell_key;
static bool cell_key_made;
/* Packets sent, for diagnostics and tests (rare in slot mode). */
static volatile uint64_t packets;
/* An AF_UNIX datagram socket never connected: notes sent on it fail at
 * once and go nowhere. -1 when it could not be made (notes are skipped). */
static int note_fd = -1;

static void free_cell(void *cell)
{
	struct weft_slot_cell *c = cell;
	__atomic_store_n(&c->addr, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&c->tid, 0, __ATOMIC_RELEASE);
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
	(void)vm;
	(void)reserved;
	note_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cell_key_made = pthread_key_create(&cell_key, free_cell) == 0;
	weft_slots.cells = WEFT_SLOT_CELLS;
	__atomic_store_n(&weft_slots.magic, WEFT_SLOTS_MAGIC, __ATOMIC_RELEASE);
	return JNI_VERSION_1_8;
}

/* Puts the calling thread's slot in weft_slots, once per thread: from the
 * cell its tid hashes to, the first free one. A full table leaves the
 * thread to its registrations alone. */
static void claim_cell(void)
{
	if (slot_cell || !cell_key_made)
		return;
	int32_t tid = (int32_t)syscall(SYS_gettid);
	for (uint32_t i = 0; i < WEFT_SLOT_CELLS; i++) {
		struct weft_slot_cell *c = &weft_slots.cell[((uint32_t)tid + i) & (WEFT_SLOT_CELLS - 1)];
		int32_t free_tid = 0;
		if (__atomic_load_n(&c->tid, __ATOMIC_RELAXED) != 0 ||
		    !__atomic_compare_exchange_n(&c->tid, &free_tid, tid, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&c->addr, (uint64_t)(uintptr_t)&slot, __ATOMIC_RELEASE);
		if (pthread_setspecific(cell_key, c) != 0) {
			free_cell(c); /* it could not be freed at exit: give it back */
			return;
		}
		slot_cell = c;
		return;
	}
}

static void send_note(uint8_t op, uint64_t arg)
{
	if (note_fd < 0)
		return;
	struct weft_note note = {.magic = WEFT_NOTE_MAGIC, .op = op, .arg = arg};
	(void)sendto(note_fd, &note, sizeof(note), MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
}

static void send_packet(uint8_t op, uint64_t arg)
{
	unsigned char packet[WEFT_PACKET_SIZE];
	int saved = errno; /* the call fails by design: leave errno as it was */

	packet[0] = op;
	for (int i = 0; i < 8; i++)
		packet[1 + i] = (unsigned char)(arg >> (8 * i));
	(void)syscall(SYS_ioctl, 0, WEFT_IOCTL_CMD, packet);
	__atomic_fetch_add(&packets, 1, __ATOMIC_RELAXED);
	errno = saved;
}

JNIEXPORT void JNICALL Java_dev_weft_agent_bootstrap_WeftNative_mount(JNIEnv *env, jclass cls, jlong id)
{
	(void)env;
	(void)cls;
	slot = (uint64_t)id;
	uint32_t gen = generation;
	if (registered_gen != gen) {
		int saved = errno;
		registered_gen = gen;
		claim_cell();
		send_packet(WEFT_OP_SLOT, (uint64_t)(uintptr_t)&slot);
		send_note(WEFT_OP_SLOT, (uint64_t)(uintptr_t)&slot);
		errno = saved;
	}
}

JNIEXPORT void JNICALL Java_dev_weft_agent_bootstrap_WeftNative_mountIoctl(JNIEnv *env, jclass cls, jlong id)
{
	(void)env;
	(void)cls;
	send_packet(WEFT_OP_MOUNT, (uint64_t)id);
}

JNIEXPORT void JNICALL Java_dev_weft_agent_bootstrap_WeftNative_unmountIoctl(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	send_packet(WEFT_OP_UNMOUNT, 0);
}

JNIEXPORT void JNICALL Java_dev_weft_agent_bootstrap_WeftNative_parentIoctl(JNIEnv *env, jclass cls, jlong tid)
{
	(void)env;
	(void)cls;
	send_packet(WEFT_OP_PARENT, (uint64_t)tid);
}

JNIEXPORT jint JNICALL Java_dev_weft_agent_bootstrap_WeftNative_gettid(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return (jint)syscall(SYS_gettid);
}

JNIEXPORT jlong JNICALL Java_dev_weft_agent_bootstrap_WeftNative_currentSlot(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return (jlong)slot;
}

JNIEXPORT void JNICALL Java_dev_weft_agent_bootstrap_WeftNative_refresh(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	__atomic_fetch_add(&generation, 1, __ATOMIC_RELAXED);
}

JNIEXPORT jlong JNICALL Java_dev_weft_agent_bootstrap_WeftNative_packets(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return (jlong)__atomic_load_n(&packets, __ATOMIC_RELAXED);
}
