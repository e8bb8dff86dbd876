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
// SSL_shutdown are probed at their entry only (sslEntryArgs); where each
// probe sits, sslPlan decides.
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
		probes, err := sslPlan(path, memBIO)
		if err != nil {
			return nil, err
		}
		if len(probes) == 0 {
			h.files[id] = "" // another library of that name: not OpenSSL's
			continue
		}
		ex, err := link.OpenExecutable(path)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		l, err := progs.attach(ex, pid, probes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		h.links = append(h.links, l...)
		h.files[id] = "OpenSSL in " + displayName(path, pid) + steppedFuncs(probes)
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

// attach puts probes in one file: two uprobe_multi links (entries,
// returns) where the kernel has them, else a uprobe per probe and a
// uretprobe per probed return. Each probe's cookie says which function
// it stands for.
func (p *tlsPrograms) attach(ex *link.Executable, pid int, probes []sslProbe) (hookLinks, error) {
	if p.EnterMulti != nil {
		var at, cookies, retAt, retCookies []uint64
		for _, pr := range probes {
			at, cookies = append(at, pr.at), append(cookies, uint64(pr.fn))
			if pr.ret {
				retAt, retCookies = append(retAt, pr.at), append(retCookies, uint64(pr.fn))
			}
		}
		in, err := ex.UprobeMulti(nil, p.EnterMulti, &link.UprobeMultiOptions{PID: uint32(pid), Addresses: at, Cookies: cookies})
		if err != nil {
			return nil, fmt.Errorf("uprobe_multi %v: %w", probes, err)
		}
		if len(retAt) == 0 {
			return hookLinks{in}, nil
		}
		out, err := ex.UretprobeMulti(nil, p.RetMulti, &link.UprobeMultiOptions{PID: uint32(pid), Addresses: retAt, Cookies: retCookies})
		if err != nil {
			in.Close()
			return nil, fmt.Errorf("uretprobe_multi %v: %w", probes, err)
		}
		return hookLinks{in, out}, nil
	}
	var hooks hookLinks
	for _, pr := range probes {
		opts := &link.UprobeOptions{PID: pid, Address: pr.at, Cookie: uint64(pr.fn)}
		in, err := ex.Uprobe(sslFuncs[pr.fn], p.Enter, opts)
		if err != nil {
			hooks.Close()
			return nil, fmt.Errorf("uprobe %v: %w", pr, err)
		}
		hooks = append(hooks, in)
		if !pr.ret {
			continue
		}
		out, err := ex.Uretprobe(sslFuncs[pr.fn], p.Ret, opts)
		if err != nil {
			hooks.Close()
			return nil, fmt.Errorf("uretprobe %v: %w", pr, err)
		}
		hooks = append(hooks, out)
	}
	return hooks, nil
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
