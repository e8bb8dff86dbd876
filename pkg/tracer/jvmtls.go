package tracer

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// The functions of libweft_jni the Java agent calls with each TLS call's
// plaintext, before it with plaintext that may begin a request, and
// before the HEADERS that open an HTTP/2 client stream (jni/weft_tls.c,
// bpf/include/jvmtls.h).
const (
	jvmTLSFunc    = "weft_tls_event"
	jvmTLSReqFunc = "weft_tls_request"
	jvmH2Func     = "weft_h2_claim"
)

// jniLibNames are the names libweft_jni is mapped under: the agent's
// private copy (unlinked once loaded), or the file -Dweft.agent.native
// names.
var jniLibNames = []string{"weft-jni-", "libweft_jni"}

// jniLib finds libweft_jni among process pid's mappings. The path is the
// mapping's /proc/pid/map_files entry, which opens the file even after
// the agent unlinked it.
func jniLib(pid int) (path string, id fileID, err error) {
	m, ok, err := findMapping(pid, isJNILib)
	if err != nil || !ok {
		return "", fileID{}, err
	}
	if id, err = statFileID(m.mapFile); err != nil {
		return "", fileID{}, err
	}
	return m.mapFile, id, nil
}

func isJNILib(base string) bool {
	for _, n := range jniLibNames {
		if strings.HasPrefix(base, n) && strings.Contains(base, ".so") {
			return true
		}
	}
	return false
}

// attachJVMTLS probes libweft_jni's functions in process pid, once, if
// the process mapped the library; true when h has it.
func attachJVMTLS(progs *tlsPrograms, pid int, h *tlsHooks) (bool, error) {
	if progs.JVM == nil && progs.JVMMulti == nil {
		return false, nil
	}
	path, id, err := jniLib(pid)
	if err != nil || path == "" {
		return false, err
	}
	if _, done := h.files[id]; done {
		return true, nil
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	var links hookLinks
	for _, p := range []struct {
		fn   string
		prog *ebpf.Program
	}{{jvmTLSFunc, progs.JVM}, {jvmTLSFunc, progs.JVMMulti}, {jvmTLSReqFunc, progs.JVMRequest}, {jvmH2Func, progs.JVMH2}} {
		if p.prog == nil { // the other form of weft_jvm_tls
			continue
		}
		var l link.Link
		if p.prog == progs.JVMMulti {
			l, err = ex.UprobeMulti([]string{p.fn}, p.prog, &link.UprobeMultiOptions{PID: uint32(pid)})
		} else {
			l, err = ex.Uprobe(p.fn, p.prog, &link.UprobeOptions{PID: pid})
		}
		if err != nil {
			links.Close()
			return false, fmt.Errorf("uprobe %s: %w", p.fn, err)
		}
		links = append(links, l)
	}
	h.links = append(h.links, links...)
	h.files[id] = "the Java agent's TLS hooks"
	return true, nil
}

// AgentLoaded probes the TLS hooks of the agent process pid just loaded
// (its first mount-protocol packet): its library was not mapped when the
// process was classified.
func (t *Tracer) AgentLoaded(pid uint32) {
	if t.tls.JVM == nil && t.tls.JVMMulti == nil {
		return
	}
	t.rtMu.Lock()
	defer t.rtMu.Unlock()
	h := t.tlsHooks[pid]
	if h == nil {
		h = &tlsHooks{files: map[fileID]string{}}
		t.tlsHooks[pid] = h
	}
	if ok, err := attachJVMTLS(&t.tls, int(pid), h); err != nil {
		t.log.Warn("the Java agent's TLS hooks failed to attach: its HTTPS is not followed", "pid", pid, "err", err)
	} else if ok {
		t.log.Info("the Java agent's TLS hooks attached", "pid", pid)
	}
}
