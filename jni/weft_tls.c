/* The JVM's TLS in clear: the agent's advice on the JDK's SSLSocket streams
 * and SSLEngine hands each call's plaintext here, and weft_tls_event, which
 * weft uprobes in each JVM that loaded this library, shows it to the kernel
 * side (bpf/include/jvmtls.h). One native call per TLS call: its state
 * never spans two calls, so a virtual thread moving between carriers
 * cannot mix two calls up. */
#include <jni.h>
#include <stdint.h>
#include <string.h>

#include "weft_jni.h"

/* weft's uprobes read *io at these functions' entries. noinline and an
 * opaque use keep the calls, and the symbols, in the library. Each begins
 * with a nop, which the kernel emulates under a uprobe: a probed RET (the
 * whole function otherwise) is single-stepped, a second trap of ~15 us on
 * this project's VM (pkg/probesite). */
__attribute__((noinline, visibility("default"))) void weft_tls_event(const struct weft_tls_io *io)
{
	__asm__ volatile("nop" : : "r"(io) : "memory");
}

/* Called first for plaintext about to be sent that may begin a request:
 * weft decides its client span there. */
__attribute__((noinline, visibility("default"))) void weft_tls_request(const struct weft_tls_io *io)
{
	__asm__ volatile("nop" : : "r"(io) : "memory");
}

/* The calling thread is about to write HTTP/2 HEADERS it or another
 * thread buffered, opening stream `stream` for the request of logical id
 * `id` (or, with id 0, of the thread `tid` buffered them on): weft claims
 * the stream for that request, for the write (bpf/include/jvmtls.h). */
__attribute__((noinline, visibility("default"))) void weft_h2_claim(uint32_t stream, uint64_t id, uint32_t tid)
{
	__asm__ volatile("nop" : : "r"(stream), "r"(id), "r"(tid) : "memory");
}

JNIEXPORT void JNICALL Java_dev_weft_agent_bootstrap_WeftNative_h2Claim(JNIEnv *env, jclass cls, jint stream, jlong id,
									jint tid)
{
	(void)env;
	(void)cls;
	if (stream > 0)
		weft_h2_claim((uint32_t)stream, (uint64_t)id, (uint32_t)tid);
}

/* Plaintext that may begin a request: an upper-case token (a method), not
 * a response's "HTTP/". One more trap per request, none per response. */
static int may_begin_request(const uint8_t *p, jint n)
{
	return n >= 5 && p[0] >= 'A' && p[0] <= 'Z' && memcmp(p, "HTTP/", 5) != 0;
}

static void report(const struct weft_tls_io *io, const uint8_t *plain, jint copied)
{
	if (io->dir == 0 && may_begin_request(plain, copied))
		weft_tls_request(io);
	weft_tls_event(io);
}

/* The descriptor of an SSLSocketImpl's socket (the socket it is, or the
 * one it layers over), or -1. JNI reads private fields whatever the
 * modules export; the ids are looked up once (classes of java.base never
 * unload). */
static jfieldID self_fid, impl_fid, fd_fid;
static jmethodID getfd_mid;
static int ids_state; /* 0 not yet, 1 ready, -1 unavailable: published after the ids */

static int lookup_ids(JNIEnv *env)
{
	jclass base = (*env)->FindClass(env, "sun/security/ssl/BaseSSLSocketImpl");
	jclass sock = base ? (*env)->FindClass(env, "java/net/Socket") : NULL;
	jclass impl = sock ? (*env)->FindClass(env, "java/net/SocketImpl") : NULL;
	jclass fdc = impl ? (*env)->FindClass(env, "java/io/FileDescriptor") : NULL;
	if (fdc) {
		self_fid = (*env)->GetFieldID(env, base, "self", "Ljava/net/Socket;");
		impl_fid = self_fid ? (*env)->GetFieldID(env, sock, "impl", "Ljava/net/SocketImpl;") : NULL;
		getfd_mid = impl_fid ? (*env)->GetMethodID(env, impl, "getFileDescriptor", "()Ljava/io/FileDescriptor;") : NULL;
		fd_fid = getfd_mid ? (*env)->GetFieldID(env, fdc, "fd", "I") : NULL;
	}
	if ((*env)->ExceptionCheck(env))
		(*env)->ExceptionClear(env);
	return fd_fid ? 1 : -1;
}

static int32_t socket_fd(JNIEnv *env, jobject ssl)
{
	int state = __atomic_load_n(&ids_state, __ATOMIC_ACQUIRE);
	if (state == 0) {
		state = lookup_ids(env); /* two threads may both look: the same ids */
		__atomic_store_n(&ids_state, state, __ATOMIC_RELEASE);
	}
	if (state < 0 || !ssl)
		return -1;
	int32_t fd = -1;
	jobject s = (*env)->GetObjectField(env, ssl, self_fid);
	jobject impl = s ? (*env)->GetObjectField(env, s, impl_fid) : NULL;
	jobject fdo = impl ? (*env)->CallObjectMethod(env, impl, getfd_mid) : NULL;
	if ((*env)->ExceptionCheck(env))
		(*env)->ExceptionClear(env);
	else if (fdo)
		fd = (*env)->GetIntField(env, fdo, fd_fid);
	return fd;
}

/* Copies the first bytes of b[off, off+len) to out; false when b is not
 * that long. */
static int copy_plain(JNIEnv *env, jbyteArray b, jint off, jint len, uint8_t *out, jint *copied)
{
	jint n = len < WEFT_TLS_COPY ? len : WEFT_TLS_COPY;
	if (!b || off < 0 || n < 0 || off > (*env)->GetArrayLength(env, b) - n)
		return 0;
	(*env)->GetByteArrayRegion(env, b, off, n, (jbyte *)out);
	*copied = n;
	return 1;
}

JNIEXPORT void JNICALL Java_dev_weft_agent_bootstrap_WeftNative_tlsSocket(JNIEnv *env, jclass cls, jobject ssl,
									  jint dir, jbyteArray b, jint off, jint len)
{
	(void)cls;
	uint8_t plain[WEFT_TLS_COPY];
	jint copied = 0;
	if (len <= 0 || !copy_plain(env, b, off, len, plain, &copied))
		return;
	struct weft_tls_io io = {.fd = socket_fd(env, ssl), .dir = (uint8_t)dir, .kind = WEFT_TLS_SOCKET,
				 .len = (uint64_t)len, .buf = (uint64_t)(uintptr_t)plain};
	if (io.fd < 0)
		return;
	report(&io, plain, copied);
}

JNIEXPORT void JNICALL Java_dev_weft_agent_bootstrap_WeftNative_tlsEngine(JNIEnv *env, jclass cls, jlong conn,
									  jint dir, jbyteArray plain, jint off,
									  jint len, jbyteArray fp)
{
	(void)cls;
	uint8_t copy[WEFT_TLS_COPY];
	jint copied = 0;
	/* plain[off, ...) holds the first min(len, WEFT_TLS_COPY) bytes */
	if (len < 0 || (len > 0 && !copy_plain(env, plain, off, len, copy, &copied)))
		return;
	struct weft_tls_io io = {.conn = (uint64_t)conn, .fd = -1, .dir = (uint8_t)dir, .kind = WEFT_TLS_ENGINE,
				 .len = (uint64_t)len, .buf = (uint64_t)(uintptr_t)copy};
	if (fp && (*env)->GetArrayLength(env, fp) == WEFT_TLS_FP_LEN) {
		(*env)->GetByteArrayRegion(env, fp, 0, WEFT_TLS_FP_LEN, (jbyte *)io.fp);
		io.has_fp = 1;
	}
	report(&io, copy, copied);
}
