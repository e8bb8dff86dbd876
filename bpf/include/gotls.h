/* Go's crypto/tls: (*Conn).Read(b []byte) (int, error), (*Conn).Write
 * and (*Conn).clientHandshake / serverHandshake, per Go process, at the
 * stack check's jump
 * (the arguments: c in RAX, b's pointer in RBX, its length in RCX) and at
 * each RET (n in RAX), since Go moves stacks and uretprobes cannot be
 * used (gohooks.h). A call is keyed by its goroutine (R14's g): the
 * goroutine may resume on another thread between the call and its socket
 * calls (tls.h). The cookie says which function, whether a RET, and
 * whether the entry probe sits on the stack check's jump.
 * Included by common.h after emit_data. */
#ifndef WEFT_GOTLS_H
#define WEFT_GOTLS_H

#include "common.h"
#include "tlscall.h"

enum go_tls_fn {
	GO_TLS_WRITE = 0,
	GO_TLS_READ = 1,
	GO_TLS_HANDSHAKE = 2,
};
#define GO_TLS_RET 0x100 /* cookie bit: a RET of the function */
#define GO_TLS_AT_CHECK 0x200 /* cookie bit: the probe is the stack check's JBE */
#define X86_FLAGS_CF 0x0001
#define X86_FLAGS_ZF 0x0040

static __always_inline int go_tls(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!pid_traced(tgid))
		return 0;
	struct proc_info *pi = proc_of(tgid);
	struct go_id id;
	if (!pi || pi->mode != WEFT_MODE_GO || !go_id_of(pi, ctx->r14, &id))
		return 0;
	__u64 key = go_tls_key(tgid, id.goid);
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (cookie & GO_TLS_RET) {
		__u64 fn = cookie & ~GO_TLS_RET;
		__u8 dir = fn == GO_TLS_WRITE ? WEFT_DIR_EGRESS : fn == GO_TLS_READ ? WEFT_DIR_INGRESS : TLS_NO_PLAINTEXT;
		struct tls_call c;
		long n = (long)ctx->ax;
		if (tls_call_end(key, dir, &c) && n > 0)
			tls_report(ctx, pid_tgid, &c, n);
		return 0;
	}
	/* A call whose stack must grow first jumps from the stack check to
	 * runtime.morestack and starts over, passing the probe again: only
	 * the pass that goes on into the body counts (JBE jumps on CF or
	 * ZF). A Write reported twice would be parsed twice. */
	if ((cookie & GO_TLS_AT_CHECK) && (ctx->flags & (X86_FLAGS_CF | X86_FLAGS_ZF)))
		return 0;
	cookie &= ~GO_TLS_AT_CHECK;
	struct tls_call c = {.conn = ctx->ax, .buf = ctx->bx};
	switch (cookie) {
	case GO_TLS_WRITE:
		c.dir = WEFT_DIR_EGRESS;
		break;
	case GO_TLS_READ:
		c.dir = WEFT_DIR_INGRESS;
		break;
	case GO_TLS_HANDSHAKE:
		c.dir = TLS_NO_PLAINTEXT;
		c.buf = 0;
		break;
	default:
		return 0;
	}
	tls_call_begin(pi, key, &c);
	if (c.dir != WEFT_DIR_EGRESS)
		return 0;
	tls_write_begins(pid_tgid, c.conn, c.buf, ctx->cx, &id);
	/* Reported now rather than at a RET: the goroutine that reads the
	 * answer (net/http's readLoop) may reach its own RET first, on
	 * another CPU, and an answer seen before its request is matched to
	 * the next one. A Write moves all of b unless the connection fails;
	 * where the socket is not known yet, the RET reports it. */
	if (tls_report(ctx, pid_tgid, &c, ctx->cx)) {
		struct tls_call *open = bpf_map_lookup_elem(&tls_calls, &key);
		if (open && open->conn == c.conn && open->dir == WEFT_DIR_EGRESS)
			open->early = 1;
	}
	return 0;
}

/* In two forms, as openssl.h's: one uprobe_multi link per process, or a
 * perf-event uprobe per address. */
SEC("uprobe.multi")
int weft_go_tls_multi(struct pt_regs *ctx)
{
	return go_tls(ctx);
}

SEC("uprobe")
int weft_go_tls(struct pt_regs *ctx)
{
	return go_tls(ctx);
}

#endif
