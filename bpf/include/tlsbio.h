/* TLS through memory BIOs: Node.js, Python's ssl.MemoryBIO (asyncio,
 * anyio), gRPC's C core and others hand OpenSSL buffers instead of a
 * socket and move the ciphertext themselves, when and on whichever thread
 * their event loop chooses. No socket call nests in the TLS call to name
 * its socket (tls.h); the ciphertext itself does. OpenSSL puts the
 * records it makes into the write BIO with BIO_write, and the runtime
 * feeds what it read from the socket to the read BIO with BIO_write:
 *
 *   out: a BIO_write inside an open TLS call on connection C writes C's
 *        records; a later send (any thread of the process) whose bytes
 *        begin with the same TLS_FP_LEN bytes carries them: C is tied to
 *        that socket;
 *   in:  a socket read whose bytes begin with a TLS record is noted by
 *        its first TLS_FP_LEN bytes; a BIO_write of the same bytes outside
 *        a TLS call feeds them to the connection of the thread's next TLS
 *        call (runtimes feed a BIO right before the call that consumes
 *        it, SSL_shutdown included), which is tied to the socket they
 *        came from; a socket call of the thread in between cancels it.
 *
 * The first bytes of a record are its header and then random (a hello's)
 * or encrypted bytes, so two connections do not share them. A tie is made
 * once (tls_socks) and undone by SSL_free, before the connection's address
 * can name another; a tied socket's records are not fingerprinted any
 * more. Included by tls.h. */
#ifndef WEFT_TLSBIO_H
#define WEFT_TLSBIO_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "weft.h"
#include "stats.h"
#include "maputil.h"

#define TLS_FP_LEN 24

/* The first TLS_FP_LEN bytes of some ciphertext, in one process. */
struct tls_fp_key {
	__u32 tgid;
	__u8 b[TLS_FP_LEN];
};

/* Ciphertext read from a socket: the socket. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct tls_fp_key);
	__type(value, __u64);
} tls_in_fps SEC(".maps");

/* Ciphertext a connection not tied yet made: the connection (SSL *). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct tls_fp_key);
	__type(value, __u64);
} tls_out_fps SEC(".maps");

/* A socket whose ciphertext a thread fed to a BIO, for the connection of
 * its next TLS call. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* pid_tgid */
	__type(value, __u64);
} tls_fed SEC(".maps");

/* A socket a connection was tied to by its ciphertext: while the tie
 * holds (tls_socks still names the socket for that connection), the
 * socket's records need no fingerprint. Cleared when the socket closes,
 * before its address can name another. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* socket */
	__type(value, struct tls_conn_key);
} tls_bio_socks SEC(".maps");

/* Whether socket sk is tied to a live connection of process tgid. */
static __always_inline bool tls_bio_tied(__u64 sk, __u32 tgid)
{
	struct tls_conn_key *b = bpf_map_lookup_elem(&tls_bio_socks, &sk);
	return b && b->tgid == tgid && tls_sock_of(b->conn, tgid) == sk;
}

/* Reads the first TLS_FP_LEN bytes a socket call moved (its first buffer
 * must hold them) into b; false when it cannot or they do not begin with
 * a TLS record header (content type 20-23, version 3.0-3.4). */
static __always_inline bool tls_record_peek(const struct user_buf *ub, __u32 bytes, __u8 *b)
{
	if (bytes < TLS_FP_LEN)
		return false;
	__u64 at = ub->ptr + ub->offset;
	if (ub->iovcnt) {
		struct iovec iov;
		long err = ub->iov_kernel ? bpf_probe_read_kernel(&iov, sizeof(iov), (void *)ub->ptr)
					  : bpf_probe_read_user(&iov, sizeof(iov), (void *)ub->ptr);
		if (err < 0 || iov.iov_len < ub->offset + TLS_FP_LEN)
			return false;
		at = (__u64)iov.iov_base + ub->offset;
	}
	if (bpf_probe_read_user(b, TLS_FP_LEN, (void *)at) < 0)
		return false;
	return b[0] >= 20 && b[0] <= 23 && b[1] == 3 && b[2] <= 4;
}

/* Ties connection conn of process tgid to socket sk (a tie left by a
 * freed connection whose free weft did not see is replaced). */
static __always_inline void tls_bio_tie(__u64 conn, __u32 tgid, __u64 sk)
{
	if (!tls_socks_set(conn, tgid, sk))
		return;
	struct tls_conn_key k = {.conn = conn, .tgid = tgid};
	bpf_map_update_elem(&tls_bio_socks, &sk, &k, BPF_ANY);
	count(WEFT_STAT_TLS_BIO_LEARNED);
}

/* A socket call of process pi not nested in a TLS call: a read of TLS
 * records is noted; a send of records a connection made ties it. */
static __always_inline void tls_bio_socket_call(struct proc_info *pi, __u64 pid_tgid, __u64 sk, __u8 dir,
						const struct user_buf *ub, __u32 bytes)
{
	if (!pi || !(pi->tls & WEFT_PROC_TLS_BIO))
		return;
	/* Runtimes feed a BIO and call the library with no socket call
	 * between: after one, what the thread fed names nothing. */
	delete_present(&tls_fed, &pid_tgid);
	if (tls_bio_tied(sk, pid_tgid >> 32))
		return;
	struct tls_fp_key fp = {.tgid = pid_tgid >> 32};
	if (!tls_record_peek(ub, bytes, fp.b))
		return;
	if (dir == WEFT_DIR_INGRESS) {
		bpf_map_update_elem(&tls_in_fps, &fp, &sk, BPF_ANY);
		return;
	}
	__u64 *conn = bpf_map_lookup_elem(&tls_out_fps, &fp);
	if (!conn)
		return;
	tls_bio_tie(*conn, fp.tgid, sk);
	bpf_map_delete_elem(&tls_out_fps, &fp);
}

/* BIO_write(bio, buf, n) in process pi: inside an open TLS call (c), the
 * records it makes; outside, ciphertext the runtime feeds it. Only
 * processes with this probe (not nginx) get the mark that makes their
 * socket calls peek at their bytes. */
static __always_inline void tls_bio_write(struct proc_info *pi, __u64 pid_tgid, __u64 buf, __u64 n)
{
	struct tls_fp_key fp = {.tgid = pid_tgid >> 32};
	if (!pi || n < TLS_FP_LEN || n > 0x7fffffff)
		return;
	proc_tls_mark(pi, WEFT_PROC_TLS_BIO);
	struct tls_call *c = bpf_map_lookup_elem(&tls_calls, &pid_tgid);
	if (c && !c->conn)
		c = NULL; /* ended */
	struct tls_conn_key k = {.conn = c ? c->conn : 0, .tgid = fp.tgid};
	if (c && (c->sock || bpf_map_lookup_elem(&tls_socks, &k)))
		return; /* tied already */
	if (bpf_probe_read_user(fp.b, TLS_FP_LEN, (void *)buf) < 0)
		return;
	if (c) {
		__u64 conn = c->conn;
		bpf_map_update_elem(&tls_out_fps, &fp, &conn, BPF_ANY);
		return;
	}
	__u64 *sk = bpf_map_lookup_elem(&tls_in_fps, &fp);
	if (!sk)
		return;
	__u64 sock = *sk;
	bpf_map_delete_elem(&tls_in_fps, &fp);
	bpf_map_update_elem(&tls_fed, &pid_tgid, &sock, BPF_ANY);
}

/* A TLS call on conn begins: the socket its thread just fed ciphertext
 * from is conn's. */
static __always_inline void tls_bio_call_begins(struct proc_info *pi, __u64 pid_tgid, __u64 conn)
{
	if (!pi || !(pi->tls & WEFT_PROC_TLS_BIO))
		return;
	__u64 *sk = bpf_map_lookup_elem(&tls_fed, &pid_tgid);
	if (!sk)
		return;
	__u64 sock = *sk;
	bpf_map_delete_elem(&tls_fed, &pid_tgid);
	tls_bio_tie(conn, pid_tgid >> 32, sock);
}

/* The library frees connection conn: its address may name the next. */
static __always_inline void tls_conn_freed(__u32 tgid, __u64 conn)
{
	struct tls_conn_key k = {.conn = conn, .tgid = tgid};
	bpf_map_delete_elem(&tls_socks, &k);
}

#endif
