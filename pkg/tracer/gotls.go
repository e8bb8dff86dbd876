package tracer

import (
	"fmt"
	"strconv"

	"github.com/cilium/ebpf/link"

	"github.com/weftdev/weft/pkg/goexec"
)

// The cookies of bpf/include/gotls.h's probes: which function, whether
// at a RET, and whether the entry probe is the stack check's jump (a call
// that grows its stack passes it twice).
const (
	goTLSWrite     = 0
	goTLSRead      = 1
	goTLSHandshake = 2
	goTLSRet       = 0x100
	goTLSAtCheck   = 0x200
)

// attachGoTLS puts the crypto/tls probes on Go process pid (its own
// executable, for it alone): each function's argument point and RETs,
// as one uprobe_multi link where the kernel has them.
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
	var addrs, cookies []uint64
	for fn, cookie := range map[string]uint64{goexec.TLSWrite: goTLSWrite, goexec.TLSRead: goTLSRead,
		goexec.TLSClientHandshake: goTLSHandshake, goexec.TLSServerHandshake: goTLSHandshake} {
		f, ok := bin.Funcs[fn]
		if !ok || len(f.Returns) == 0 {
			continue // a handshake the program does not link
		}
		addrs = append(addrs, f.Probe)
		if f.Probe != f.Entry {
			cookies = append(cookies, cookie|goTLSAtCheck)
		} else {
			cookies = append(cookies, cookie)
		}
		for _, r := range f.Returns {
			addrs = append(addrs, r)
			cookies = append(cookies, cookie|goTLSRet)
		}
	}
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
