package tracer

import (
	"fmt"
	"strings"

	"github.com/weftdev/weft/pkg/probesite"
)

// sslProbe is one OpenSSL probe: the file offset it sits at, the
// function it stands for (its index in sslFuncs, the probe's cookie) and
// whether that function's return is probed there too.
type sslProbe struct {
	at  uint64
	fn  int
	ret bool
	// stepped: the kernel single-steps the instruction, a second trap
	// on every call (the code had no emulated site for it).
	stepped bool
}

func (p sslProbe) String() string {
	return fmt.Sprintf("%s@%#x", sslFuncs[p.fn], p.at)
}

// sslEntryArgs are the functions probed at their entry only, and how many
// of their arguments the probe reads (openssl.h): such a probe may sit at
// any emulated instruction of the prologue that comes before those change.
var sslEntryArgs = map[string]int{sslFree: 1, bioWrite: 3, sslShutdown: 1}

// sslWorkers pairs the read and write functions with their _ex variants,
// which take (SSL *, buf, size_t num, size_t *done).
var sslWorkers = [][2]string{{"SSL_read", "SSL_read_ex"}, {"SSL_write", "SSL_write_ex"}}

// sslPlan decides where the OpenSSL functions the file at path defines
// are probed; none when it is not OpenSSL's (memBIO: BIO_write too).
// Every probe sits on an instruction the kernel emulates where the code
// allows (package probesite):
//   - a function probed at its entry only, at the first emulated
//     instruction of its prologue;
//   - SSL_read_ex (SSL_write_ex) whose first instruction is not, at the
//     function it hands its four arguments to unchanged (OpenSSL's
//     ssl_read_internal, with the same return), when that one's is; then
//     SSL_read (SSL_write), which calls it too, is not probed itself;
//   - else at the function's entry, as its return probe needs.
func sslPlan(path string, memBIO bool) ([]sslProbe, error) {
	f, err := probesite.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	funcs := map[string]probesite.Func{}
	has := map[string]bool{}
	for _, name := range sslFuncs {
		if fn, ok := f.Func(name); ok && (name != bioWrite || memBIO) {
			funcs[name], has[name] = fn, true
		}
	}
	if !sslAll(has) && !has[bioWrite] {
		return nil, nil
	}
	var probes []sslProbe
	add := func(name string, addr uint64, ret bool, code []byte) error {
		off, ok := f.Offset(addr)
		if !ok {
			return fmt.Errorf("%s: %s at %#x is in no executable segment", path, name, addr)
		}
		probes = append(probes, sslProbe{at: off, fn: sslFuncIndex(name), ret: ret, stepped: !probesite.Emulated(code)})
		return nil
	}
	covered := map[string]bool{}
	for _, w := range sslWorkers {
		plain, ex := w[0], w[1]
		e, ok := funcs[ex]
		if !ok || probesite.Emulated(e.Code) {
			continue
		}
		target, ok := probesite.Delegate(e.Code, e.Addr, 4)
		if !ok {
			continue
		}
		callee, ok := f.At(target, 16)
		if !ok || !probesite.Emulated(callee.Code) || isEntryOf(funcs, target) {
			continue // (a function probed on its own would be probed twice)
		}
		if err := add(ex, target, true, callee.Code); err != nil {
			return nil, err
		}
		covered[ex] = true
		p, ok := funcs[plain]
		covered[plain] = ok && probesite.Calls(p.Code, p.Addr, target, e.Addr)
	}
	for _, name := range sslFuncs {
		fn, ok := funcs[name]
		if !ok || covered[name] {
			continue
		}
		nargs, entryOnly := sslEntryArgs[name]
		site := 0
		if entryOnly {
			if off, ok := probesite.EntrySite(fn.Code, nargs); ok {
				site = off
			}
		}
		if err := add(name, fn.Addr+uint64(site), !entryOnly, fn.Code[site:]); err != nil {
			return nil, err
		}
	}
	return probes, nil
}

// isEntryOf reports whether addr is where one of funcs begins.
func isEntryOf(funcs map[string]probesite.Func, addr uint64) bool {
	for _, fn := range funcs {
		if fn.Addr == addr {
			return true
		}
	}
	return false
}

// sslFuncIndex is name's index in sslFuncs (enum ssl_fn).
func sslFuncIndex(name string) int {
	for i, n := range sslFuncs {
		if n == name {
			return i
		}
	}
	panic("not an OpenSSL function weft probes: " + name)
}

// steppedFuncs names the functions whose probes the kernel single-steps,
// for the log: each of their calls costs a second trap.
func steppedFuncs(probes []sslProbe) string {
	var names []string
	for _, p := range probes {
		if p.stepped {
			names = append(names, sslFuncs[p.fn])
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (single-stepped, a second trap per call: " + strings.Join(names, ", ") + ")"
}
