package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/link"
)

// OpenSSL's functions bpf/include/openssl.h probes, in the order of its
// enum ssl_fn (their probes' cookies). The _ex variants came with 1.1.1;
// a library without them is probed on the others. The handshake's nested
// calls name the socket before the first write (tlslink.h). SSL_free,
// libcrypto's BIO_write (a runtime feeding memory BIOs, tlsbio.h) and
// SSL_shutdown are probed at their entry only (returning).
var sslFuncs = []string{"SSL_write", "SSL_write_ex", "SSL_read", "SSL_read_ex", "SSL_do_handshake", sslFree, bioWrite, sslShutdown}

const (
	sslWrite     = "SSL_write"
	sslFree      = "SSL_free"
	bioWrite     = "BIO_write"
	sslShutdown  = "SSL_shutdown"
	libsslPfx    = "libssl.so"
	libcryptoPfx = "libcrypto.so"
)

// sslRequired are the functions without which a library is not taken for
// OpenSSL.
var sslRequired = []string{"SSL_write", "SSL_read", "SSL_do_handshake"}

// sslLibDirs are where a dynamic linker finds libssl: a process that has
// not loaded it yet (one just exec'd, or Python before `import ssl`) will
// take it from one of them. Seen through the process's root.
var sslLibDirs = []string{
	"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64",
	"/usr/lib", "/lib", "/usr/local/lib", "/usr/local/lib64",
}

// fileID names a file by device and inode: uprobes are per file, however
// many names lead to it.
type fileID struct{ dev, ino uint64 }

// tlsHooks are one process's TLS uprobes and the files they are on (as
// the process names them).
type tlsHooks struct {
	files map[fileID]string
	links hookLinks
}

// opensslFiles lists the files whose OpenSSL process pid runs or may run:
// its executable when it defines SSL_write itself (a static build, as
// Node.js's), the libssl it mapped, and every libssl.so.* of the usual
// library directories; with any of them and memBIO, the libcrypto files
// found the same way (BIO_write).
func opensslFiles(pid int, memBIO bool) map[fileID]string {
	proc := "/proc/" + strconv.Itoa(pid)
	var paths []string
	if definesFunc(proc+"/exe", sslWrite) {
		paths = append(paths, proc+"/exe")
	}
	for _, pfx := range []string{libsslPfx, libcryptoPfx} {
		if pfx == libcryptoPfx && (len(paths) == 0 || !memBIO) {
			break
		}
		if p, err := mappedLib(pid, pfx); err == nil {
			paths = append(paths, p)
		}
		for _, dir := range sslLibDirs {
			m, _ := filepath.Glob(proc + "/root" + dir + "/" + pfx + ".*")
			paths = append(paths, m...)
		}
	}
	out := map[fileID]string{}
	for _, p := range paths {
		if k, err := statFileID(p); err == nil {
			if _, dup := out[k]; !dup {
				out[k] = p
			}
		}
	}
	return out
}

// attachOpenSSL puts the TLS probes on every OpenSSL file process pid
// runs or may run that h does not have yet, for that process only, and
// returns every file h has, as the process names them (for the log and
// `weft doctor`); none found is not an error. memBIO: BIO_write is
// probed too, for connections on memory BIOs (tlsbio.h).
func attachOpenSSL(progs *tlsPrograms, pid int, h *tlsHooks, memBIO bool) ([]string, error) {
	for id, path := range opensslFiles(pid, memBIO) {
		if _, ok := h.files[id]; ok {
			continue
		}
		has := definedFuncs(path, sslFuncs...)
		has[bioWrite] = has[bioWrite] && memBIO
		var syms []string
		var cookies []uint64
		for i, fn := range sslFuncs {
			if has[fn] {
				syms = append(syms, fn)
				cookies = append(cookies, uint64(i))
			}
		}
		if !sslAll(has) && !has[bioWrite] {
			h.files[id] = "" // another library of that name: not OpenSSL's
			continue
		}
		ex, err := link.OpenExecutable(path)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		l, err := progs.attach(ex, pid, syms, cookies)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		h.links = append(h.links, l...)
		h.files[id] = "OpenSSL in " + displayName(path, pid)
	}
	var names []string
	for _, n := range h.files {
		if n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

func sslAll(has map[string]bool) bool {
	for _, fn := range sslRequired {
		if !has[fn] {
			return false
		}
	}
	return true
}

// attach probes the entries and returns of syms in one file: with two
// uprobe_multi links where the kernel has them, else a uprobe and a
// uretprobe per function. Each entry's cookie says which function it is.
func (p *tlsPrograms) attach(ex *link.Executable, pid int, syms []string, cookies []uint64) (hookLinks, error) {
	if p.EnterMulti != nil {
		opts := &link.UprobeMultiOptions{PID: uint32(pid), Cookies: cookies}
		in, err := ex.UprobeMulti(syms, p.EnterMulti, opts)
		if err != nil {
			return nil, fmt.Errorf("uprobe_multi %v: %w", syms, err)
		}
		retSyms, retCookies := returning(syms, cookies)
		if len(retSyms) == 0 {
			return hookLinks{in}, nil
		}
		out, err := ex.UretprobeMulti(retSyms, p.RetMulti, &link.UprobeMultiOptions{PID: uint32(pid), Cookies: retCookies})
		if err != nil {
			in.Close()
			return nil, fmt.Errorf("uretprobe_multi %v: %w", syms, err)
		}
		return hookLinks{in, out}, nil
	}
	var hooks hookLinks
	for i, sym := range syms {
		opts := &link.UprobeOptions{PID: pid, Cookie: cookies[i]}
		in, err := ex.Uprobe(sym, p.Enter, opts)
		if err != nil {
			hooks.Close()
			return nil, fmt.Errorf("uprobe %s: %w", sym, err)
		}
		if sslEntryOnly[sym] {
			hooks = append(hooks, in)
			continue
		}
		out, err := ex.Uretprobe(sym, p.Ret, opts)
		if err != nil {
			in.Close()
			hooks.Close()
			return nil, fmt.Errorf("uretprobe %s: %w", sym, err)
		}
		hooks = append(hooks, in, out)
	}
	return hooks, nil
}

// sslEntryOnly are the functions whose returns are not probed.
var sslEntryOnly = map[string]bool{sslFree: true, bioWrite: true, sslShutdown: true}

// returning drops the functions probed at their entry only from syms and
// their cookies.
func returning(syms []string, cookies []uint64) ([]string, []uint64) {
	var s []string
	var c []uint64
	for i, sym := range syms {
		if !sslEntryOnly[sym] {
			s = append(s, sym)
			c = append(c, cookies[i])
		}
	}
	return s, c
}

// displayName is a probed file's path as the process sees it.
func displayName(path string, pid int) string {
	proc := "/proc/" + strconv.Itoa(pid)
	if path == proc+"/exe" {
		if exe, err := os.Readlink(path); err == nil {
			return exe
		}
	}
	return strings.TrimPrefix(path, proc+"/root")
}
