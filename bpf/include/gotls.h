/* Go's crypto/tls: (*Conn).Read(b []byte) (int, error), (*Conn).Write
 * and (*Conn).clientHandshake / serverHandshake, per Go process. Go moves
 * stacks, so uretprobes cannot be used (gohooks.h); and a RET probe is
 * single-stepped (two traps), so Read and Write are probed where one trap
 * does, at an instruction uprobes emulate (a CALL):
 *  - Read at its call of memmove that copies the plaintext into b
 *    (bytes.Reader's Read inlined: the source in RBX, the length in RCX;
 *    c from the stack slot its prologue spilled it to, whose offset from
 *    RSP the cookie carries: pkg/goexec);
 *  - Write at its calls of writeRecordLocked (c in RAX, the record type in
 *    BL, the plaintext in RCX, its length in RDI), past the handshake, so
 *    the connection's socket is known.
 * The handshakes, once per connection, at entry and at each RET: their
 * socket calls tie the connection to its socket (tls.h), which from then
 * on carries ciphertext only, so a Read needs no note of its own.
 * A Write is keyed by its goroutine (R14's g): the goroutine may resume on
 * another thread between the call and its socket calls (tls.h). Its note
 * outlives the call, which no probe ends: a socket call on another
 * socket than the connection's shows it stale (tls_note_stale). The
 * cookie says which probe point it is.
 * Included by common.h after emit_data. */
#ifndef WEFT_GOTLS_H
#define WEFT_GOTLS_H

#include "common.h"
#include "tlscall.h"

enum go_tls_probe {
	GO_TLS_HANDSHAKE = 2,	 /* a handshake's entry */
	GO_TLS_READ_COPY = 3,	 /* Read's memmove into b */
	GO_TLS_WRITE_RECORD = 4, /* Write's call of writeRecordLocked */
};
#define GO_TLS_PROBE 0xff /* cookie bits: enum go_tls_probe */
#define GO_TLS_RET 0x100 /* cookie bit: a RET of the function */
#define GO_TLS_AT_CHECK 0x200 /* cookie bit: the probe is the stack check's JBE */
#define GO_TLS_SLOT_SHIFT 16 /* Read's copy: c's stack slot, from RSP, above */
#define TLS_RECORD_APPLICATION_DATA 23

/* Read's copy of n bytes at buf into the caller's b, on connection conn
 * of process tgid: reported as the plaintext of the connection's socket,
 * which its handshake (or a Write, for a connection older than weft)
 * named. */
static __always_inline void go_tls_read(struct pt_regs *ctx, void *progs, __u64 pid_tgid, __u64 cookie)
{
	__u64 conn = 0;
	if (bpf_probe_read_user(&conn, sizeof(conn), (void *)(ctx->sp + (cookie >> GO_TLS_SLOT_SHIFT))) < 0 || !conn)
		return;
	struct tls_call c = {.conn = conn, .buf = ctx->bx, .dir = WEFT_DIR_INGRESS};
	tls_report(ctx, progs, pid_tgid, &c, ctx->cx);
}

static __always_inline int go_tls(struct pt_regs *ctx, void *progs)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!pid_traced(tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if ((cookie & GO_TLS_PROBE) == GO_TLS_READ_COPY) {
		go_tls_read(ctx, progs, pid_tgid, cookie);
		return 0;
	}
	struct proc_info *pi = proc_of(tgid);
	/* The goroutine's id only: its parent's is not needed here. */
	__u64 goid = pi && pi->mode == WEFT_MODE_GO ? go_goid(pi, ctx->r14) : 0;
	if (!goid)
		return 0;
	__u64 key = go_tls_key(tgid, goid);
	struct tls_call c = {.conn = ctx->ax, .unended = 1};
	if (cookie & GO_TLS_RET) { /* a handshake's */
		tls_call_end(key, TLS_NO_PLAINTEXT, &c);
		return 0;
	}
	/* A call whose stack must grow first jumps from the stack check to
	 * runtime.morestack and starts over, passing the probe again: only
	 * the pass that goes on into the body counts (JBE jumps on CF or
	 * ZF). */
	if ((cookie & GO_TLS_AT_CHECK) && (ctx->flags & (X86_FLAGS_CF | X86_FLAGS_ZF)))
		return 0;
	if ((cookie & GO_TLS_PROBE) == GO_TLS_HANDSHAKE) {
		/* A new connection (or a renegotiation): the socket an object
		 * at this address had before is forgotten, by an open call of
		 * it too; the handshake's socket calls name the new one. */
		struct tls_conn_key tk = {.conn = c.conn, .tgid = tgid};
		bpf_map_delete_elem(&tls_socks, &tk);
		struct tls_call *open = bpf_map_lookup_elem(&tls_calls, &key);
		if (open && open->conn == c.conn)
			open->sock = 0;
		c.dir = TLS_NO_PLAINTEXT;
		tls_call_begin(pi, key, &c);
		return 0;
	}
	if ((cookie & GO_TLS_PROBE) != GO_TLS_WRITE_RECORD || ctx->bx != TLS_RECORD_APPLICATION_DATA)
		return 0;
	c.dir = WEFT_DIR_EGRESS;
	c.buf = ctx->cx;
	/* Known now, a socket call on it need not name it again. */
	c.sock = tls_sock_of(c.conn, tgid);
	tls_call_begin(pi, key, &c);
	/* Reported now, before a byte leaves: the goroutine that reads the
	 * answer (net/http's readLoop) may report it first, on another CPU,
	 * and an answer seen before its request is matched to the next one.
	 * A Write moves all of its record unless the connection fails. */
	tls_write_begins(pid_tgid, c.conn, c.sock, c.buf, ctx->di, goid);
	tls_report(ctx, progs, pid_tgid, &c, ctx->di);
	return 0;
}

/* In two forms, as openssl.h's: one uprobe_multi link per process, or a
 * perf-event uprobe per address. */
SEC("uprobe.multi")
int weft_go_tls_multi(struct pt_regs *ctx)
{
	return go_tls(ctx, &emit_multi_progs);
}

SEC("uprobe")
int weft_go_tls(struct pt_regs *ctx)
{
	return go_tls(ctx, &emit_probe_progs);
}

#endif
