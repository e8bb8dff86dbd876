package tracer

import (
	"fmt"
	"strconv"

	"github.com/cilium/ebpf/link"

	"github.com/weftdev/weft/pkg/goexec"
)

// The cookies of bpf/include/gotls.h's probes: which probe point, whether
// at a handshake's RET, whether the entry probe is the stack check's
// jump (a call that grows its stack passes it twice), and at Read's copy
// the offset from RSP of the stack slot that holds the connection.
const (
	goTLSHandshake   = 2
	goTLSReadCopy    = 3
	goTLSWriteRecord = 4
	goTLSRet         = 0x100
	goTLSAtCheck     = 0x200
	goTLSSlotShift   = 16
)

// attachGoTLS puts the crypto/tls probes on Go process pid (its own
// executable, for it alone), as one uprobe_multi link where the kernel
// has them.
func attachGoTLS(progs *tlsPrograms, pid int, bin *goexec.Binary, h *tlsHooks) ([]string, error) {
	exe := "/proc/" + strconv.Itoa(pid) + "/exe"
	id, err := statFileID(exe)
	if err != nil {
		return nil, err
	}
	name := displayName(exe, pid) + " (crypto/tls)"
	if _, done := h.files[id]; done {
		return []string{name}, nil
	}
	addrs, cookies := goTLSProbes(bin)
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return nil, fmt.Errorf("open executable: %w", err)
	}
	var links hookLinks
	if progs.GoMulti != nil {
		l, err := ex.UprobeMulti(nil, progs.GoMulti, &link.UprobeMultiOptions{Addresses: addrs, Cookies: cookies, PID: uint32(pid)})
		if err != nil {
			return nil, fmt.Errorf("uprobe_multi crypto/tls: %w", err)
		}
		links = hookLinks{l}
	} else {
		for i, a := range addrs {
			l, err := ex.Uprobe("crypto/tls", progs.Go, &link.UprobeOptions{Address: a, Cookie: cookies[i], PID: pid})
			if err != nil {
				links.Close()
				return nil, fmt.Errorf("uprobe crypto/tls at %#x: %w", a, err)
			}
			links = append(links, l)
		}
	}
	h.links = append(h.links, links...)
	h.files[id] = name
	return []string{name}, nil
}

// goTLSProbes lists crypto/tls's probe points and their cookies
// (CryptoTLS says the binary has them all): Read at its copy into the
// caller's buffer, Write at its calls of writeRecordLocked, the
// handshakes (once per connection) at entry and RETs.
func goTLSProbes(bin *goexec.Binary) (addrs, cookies []uint64) {
	add := func(addr, cookie uint64) {
		addrs = append(addrs, addr)
		cookies = append(cookies, cookie)
	}
	copyAt, _ := bin.TLSReadCopy()
	add(copyAt, goTLSReadCopy|uint64(bin.Funcs[goexec.TLSRead].RecvSlot)<<goTLSSlotShift)
	for _, c := range bin.Funcs[goexec.TLSWrite].Calls {
		add(c, goTLSWriteRecord)
	}
	for _, f := range bin.TLSHandshakes() {
		cookie := uint64(goTLSHandshake)
		if f.Probe != f.Entry {
			cookie |= goTLSAtCheck
		}
		add(f.Probe, cookie)
		for _, r := range f.Returns {
			add(r, goTLSHandshake|goTLSRet)
		}
	}
	return addrs, cookies
}
