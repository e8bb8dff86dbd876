/* TLS in clear: a TLS library's read and write calls (openssl.h) report
 * their plaintext; the socket calls nested in them, which move the
 * ciphertext, report nothing and name the socket the plaintext belongs to.
 *
 * An entry probe notes the call per thread (tls_calls); a socket call of
 * the same thread while it is open ties the library's connection object to
 * the socket (tls_socks) and stays silent; the return probe copies the
 * plaintext from the caller's buffer and emits it as the socket's data,
 * flagged tls. A read the library answers from records it already holds
 * moves no ciphertext: tls_socks still names its socket. Included by
 * common.h before emit_data. */
#ifndef WEFT_TLS_H
#define WEFT_TLS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "weft.h"
#include "procmode.h"

/* An open read or write call of a TLS library, per thread. */
struct tls_call {
	__u64 conn; /* the library's connection object (SSL *); 0: the call
		     * ended, its entry kept for the thread's next call to
		     * be written in place (tls_call_end) */
	__u64 buf;  /* the caller's plaintext buffer */
	__u64 done; /* where an _ex variant stores the bytes it moved, else 0 */
	__u64 sock; /* the socket a nested call moved ciphertext on, else 0 */
	__u8 dir;   /* enum weft_direction, or TLS_NO_PLAINTEXT */
	__u8 unended; /* no probe ends the note (gotls.h): a socket call on
		       * another socket than the connection's shows it stale */
	__u8 _pad[6];
};

/* A call that moves no plaintext (the handshake). */
#define TLS_NO_PLAINTEXT 0xff

/* An LRU: a call whose return never came (its thread killed) must not
 * hold its slot for ever. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* pid_tgid, or go_tls_key */
	__type(value, struct tls_call);
} tls_calls SEC(".maps");

/* A library connection object of one process: the same address in two
 * processes is two objects. */
struct tls_conn_key {
	__u64 conn;
	__u32 tgid;
	__u32 _pad;
};

/* The socket each TLS connection object was last seen moving ciphertext
 * on. An LRU: objects are freed without a call weft sees, and a stale
 * entry is corrected by the next nested call. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct tls_conn_key);
	__type(value, __u64);
} tls_socks SEC(".maps");

/* The socket connection object conn of process tgid was last seen on,
 * or 0. */
static __always_inline __u64 tls_sock_of(__u64 conn, __u32 tgid)
{
	struct tls_conn_key k = {.conn = conn, .tgid = tgid};
	__u64 *s = bpf_map_lookup_elem(&tls_socks, &k);
	return s ? *s : 0;
}

/* The key user space and the kernel's skip table use for a socket's
 * plaintext: socket addresses are aligned, so the low bit is free. */
#define TLS_SOCK_KEY(sk) ((__u64)(sk) | 1)

/* tls_calls' key for goroutine goid of process tgid: the low half of a
 * thread's key (pid_tgid) never has bit 31 set (pids < 2^22). */
static __always_inline __u64 go_tls_key(__u32 tgid, __u64 goid)
{
	return ((__u64)tgid << 32) | 0x80000000ULL | (goid & 0x7fffffff);
}

/* tls_calls' key for the current call: its thread, or in a Go program its
 * goroutine, which may move to another thread between the TLS call and
 * its socket calls. */
static __always_inline __u64 tls_call_key(struct proc_info *pi, __u64 pid_tgid)
{
	struct go_id id;
	if (pi->mode != WEFT_MODE_GO || !go_id_of(pi, user_g(), &id))
		return pid_tgid;
	return go_tls_key(pid_tgid >> 32, id.goid);
}

/* Notes that process pi makes TLS calls of kind flags (weft_proc_tls), so
 * that its socket calls are checked against them: processes without
 * any pay no lookup. */
static __always_inline void proc_tls_mark(struct proc_info *pi, __u8 flags)
{
	if (pi && (pi->tls & flags) != flags)
		pi->tls |= flags;
}

/* Whether unended note c (its call returned long ago, maybe) is not the
 * call of this socket call on sk: a TLS connection moves its ciphertext
 * on one socket, so a call on another socket is the goroutine's own, in
 * clear. A connection whose socket is not known yet takes sk: the
 * handshake (whose note is ended) names it first, and forgets the old
 * one (gotls.h). */
static __always_inline bool tls_note_stale(const struct tls_call *c, __u32 tgid, __u64 sk)
{
	__u64 known = c->sock ? c->sock : tls_sock_of(c->conn, tgid);
	return known && known != sk;
}

/* Names sk the socket of connection object conn of process tgid; false
 * when it was already. Written only when it changes: an LRU update
 * allocates. */
static __always_inline bool tls_socks_set(__u64 conn, __u32 tgid, __u64 sk)
{
	struct tls_conn_key k = {.conn = conn, .tgid = tgid};
	__u64 *known = bpf_map_lookup_elem(&tls_socks, &k);
	if (known && *known == sk)
		return false;
	bpf_map_update_elem(&tls_socks, &k, &sk, BPF_ANY);
	return true;
}

/* Ties connection object conn of process tgid to socket sk: from now on
 * sk carries that connection's ciphertext, which no socket call reports
 * (tls_nested). */
static __always_inline void tls_tie(__u64 conn, __u32 tgid, __u64 sk)
{
	if (!tls_socks_set(conn, tgid, sk))
		return;
	__u8 *flags = bpf_map_lookup_elem(&tracked_socks, &sk);
	if (flags) {
		*flags |= SOCK_CIPHER;
		return;
	}
	__u8 v = SOCK_TRACKED | SOCK_CIPHER;
	long err = bpf_map_update_elem(&tracked_socks, &sk, &v, BPF_NOEXIST);
	if (err == -7 /* E2BIG */)
		count(WEFT_STAT_SOCK_TABLE_FULL);
	else if (err == 0)
		note_traced_server(sk);
}

/* A socket call on sk of this thread (goroutine) of process pi that moves
 * a TLS connection's ciphertext: made inside an open TLS call, whose
 * connection object it ties to sk, or on a socket tied before (a read
 * Go's Read parks in, an alert outside the calls). Its bytes are reported
 * as the calls' plaintext instead. */
static __always_inline bool tls_nested(struct proc_info *pi, __u64 pid_tgid, __u64 sk)
{
	if (!pi || !(pi->tls & WEFT_PROC_TLS_CALLS))
		return false;
	__u64 key = tls_call_key(pi, pid_tgid);
	struct tls_call *c = bpf_map_lookup_elem(&tls_calls, &key);
	if (c && !c->conn)
		c = NULL;
	if (c && c->sock != sk && c->unended && tls_note_stale(c, pid_tgid >> 32, sk)) {
		bpf_map_delete_elem(&tls_calls, &key);
		c = NULL;
	}
	if (!c) {
		__u8 *flags = bpf_map_lookup_elem(&tracked_socks, &sk);
		return flags && (*flags & SOCK_CIPHER);
	}
	if (c->sock != sk) {
		c->sock = sk;
		tls_tie(c->conn, pid_tgid >> 32, sk);
	}
	return true;
}

#include "tlsbio.h"

#endif
