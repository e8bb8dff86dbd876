package tracer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/weftdev/weft/pkg/goexec"
)

// Mode is how the kernel side tells which request a process's threads
// work for (enum weft_proc_mode).
type Mode uint8

const (
	ModeUnknown Mode = Mode(tpWeftProcModeWEFT_MODE_UNKNOWN)
	ModeThread  Mode = Mode(tpWeftProcModeWEFT_MODE_THREAD)
	ModeGo      Mode = Mode(tpWeftProcModeWEFT_MODE_GO)
	ModeRefuse  Mode = Mode(tpWeftProcModeWEFT_MODE_REFUSE)
	ModeAgent   Mode = Mode(tpWeftProcModeWEFT_MODE_AGENT)
	ModeNode    Mode = Mode(tpWeftProcModeWEFT_MODE_NODE)
)

func (m Mode) String() string {
	switch m {
	case ModeThread:
		return "thread"
	case ModeGo:
		return "goroutine"
	case ModeRefuse:
		return "fail-closed"
	case ModeAgent:
		return "agent"
	case ModeNode:
		return "node companion"
	}
	return "unknown"
}

// Correlation is what weft decided for one process, and why.
type Correlation struct {
	Mode   Mode
	Reason string // for the log and `weft doctor`
	g      goexec.GOffsets
}

func (c Correlation) info() tpProcInfo {
	return tpProcInfo{Mode: uint8(c.Mode), GoidOff: c.g.Goid, ParentGoidOff: c.g.ParentGoid}
}

// setMode writes c into pid's proc_mode entry from inside the kernel
// (weft_set_mode), keeping what the kernel side noted there (the
// process's TLS calls, tls.h; its HTTP/2 connections, h2walk.h; its
// outgoing connections, propagate.h), and says the mode the entry has:
// an agent's, set by its first packet, rules.
// callsOut: the process connected out before (its calls_out mark).
func (t *Tracer) setMode(pid uint32, c Correlation) (mode Mode, callsOut bool, err error) {
	ret, err := t.objs.SetMode.Run(&ebpf.RunOptions{Context: tpSetModeArgs{Tgid: pid, Want: c.info()}})
	if err != nil {
		return ModeUnknown, false, fmt.Errorf("run weft_set_mode: %w", err)
	}
	if int32(ret) < 0 {
		return ModeUnknown, false, fmt.Errorf("process %d's proc_mode entry vanished as it was written", pid)
	}
	return Mode(uint8(ret)), ret&setModeCallsOut != 0, nil
}

// setModeCallsOut is WEFT_SET_MODE_CALLS_OUT (procmode.h).
const setModeCallsOut = 0x100

// attachFunc attaches hooks to process pid.
type attachFunc func(progs *runtimePrograms, pid int) (io.Closer, error)

// hookPlan is what a runtime needs attached to one process, and the mode
// the process falls back to when it cannot be (hooks off or failing).
type hookPlan struct {
	attach attachFunc
	// creation: a Go program's goroutine creation hooks, attached apart
	// (gocreation.go)
	creation attachFunc
	fallback Correlation
	bin      *goexec.Binary // a Go program's functions (its crypto/tls)
	// socketBIO: its TLS connections run on socket BIOs only (nginx), so
	// BIO_write, called by every TLS write there, is not probed.
	socketBIO bool
}

// Classify reads a process's executable and says how its requests can be
// followed: by goroutine for Go programs weft has hooks for, fail-closed
// for Go programs it has none for (their goroutines move between threads,
// so a thread names no request), by the Node.js companion's announcements
// for Node.js, by thread otherwise, with nginx's upstream hooks where the
// executable is nginx.
func Classify(pid int) (Correlation, *hookPlan) {
	exe := "/proc/" + strconv.Itoa(pid) + "/exe"
	bin, err := goexec.Open(exe)
	switch {
	case errors.Is(err, goexec.ErrNotGo):
		if isNginx(exe) {
			return Correlation{Mode: ModeThread, Reason: "nginx: upstream requests tied to their downstream request"},
				&hookPlan{attach: attachNginx, fallback: Correlation{Mode: ModeThread, Reason: "nginx without upstream hooks: by thread"}, socketBIO: true}
		}
		if isNode(exe) {
			// Without the companion's announcements its client spans are
			// refused: one thread serves every request.
			return Correlation{Mode: ModeNode, Reason: "Node.js: parents as weft's companion announces them, else none"},
				&hookPlan{attach: attachNode, fallback: Correlation{Mode: ModeRefuse, Reason: "Node.js without the companion's hook"}}
		}
		if isPython(exe) {
			// Threads stay the rule; asyncio calls the companion announces
			// follow their connection's route instead.
			return Correlation{Mode: ModeThread, Reason: "Python: by thread, and asyncio calls as weft's companion announces them"},
				&hookPlan{attach: attachPython, fallback: Correlation{Mode: ModeThread, Reason: "Python: by thread"}}
		}
		return Correlation{Mode: ModeThread, Reason: "not a Go program"}, nil
	case err != nil:
		return Correlation{Mode: ModeRefuse, Reason: fmt.Sprintf("cannot read the executable: %v", err)}, nil
	}
	if why := bin.Unsupported(); why != "" {
		return Correlation{Mode: ModeRefuse, Reason: why}, nil
	}
	what := "goroutine hooks"
	if bin.NetHTTPClient() {
		what += ", net/http client"
	}
	if bin.Stripped {
		what += ", functions from the Go table (stripped binary)"
	}
	what += ", runtime.g offsets from " + bin.G.From
	return Correlation{ModeGo, bin.GoVersion + ": " + what, bin.G}, &hookPlan{
		attach:   func(progs *runtimePrograms, pid int) (io.Closer, error) { return attachGo(progs, pid, bin) },
		creation: func(progs *runtimePrograms, pid int) (io.Closer, error) { return attachGoCreation(progs, pid, bin) },
		fallback: Correlation{Mode: ModeRefuse, Reason: bin.GoVersion + ": no goroutine hooks"},
		bin:      bin,
	}
}

// hookLinks are one process's uprobes (links, or sets of them).
type hookLinks []io.Closer

func (h hookLinks) Close() error {
	var errs []error
	for _, l := range h {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// detach closes a gone process's hooks off the event loop: removing a
// uprobe waits for a grace period (tens of milliseconds per link), and a
// host starting short-lived processes must not stall the ring buffer's
// reader. Close waits for them.
func (t *Tracer) detach(c io.Closer) {
	t.detaching.Go(func() {
		if err := c.Close(); err != nil {
			t.log.Debug("detach a gone process's hooks", "err", err)
		}
	})
}

// goProbe is one uprobe in a Go program.
type goProbe struct {
	prog   *ebpf.Program
	fn     string
	addr   uint64
	cookie uint64 // what the program reads with bpf_get_attach_cookie
}

// attachGoProbes puts probes on process pid only (a uprobe with a pid
// traps in no other process running the same binary): all or none.
func attachGoProbes(pid int, probes []goProbe) (io.Closer, error) {
	ex, err := link.OpenExecutable("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return nil, fmt.Errorf("open executable: %w", err)
	}
	var hooks hookLinks
	for _, p := range probes {
		l, err := ex.Uprobe(p.fn, p.prog, &link.UprobeOptions{Address: p.addr, PID: pid, Cookie: p.cookie})
		if err != nil {
			hooks.Close()
			return nil, fmt.Errorf("uprobe %s at %#x: %w", p.fn, p.addr, err)
		}
		hooks = append(hooks, l)
	}
	return hooks, nil
}

// attachGoCreation puts the goroutine creation hooks (runtime.newproc1)
// on process pid.
func attachGoCreation(progs *runtimePrograms, pid int, bin *goexec.Binary) (io.Closer, error) {
	np := bin.Funcs[goexec.NewProc1]
	var probes []goProbe
	switch bin.NewProc() {
	case goexec.HookCasg:
		for _, a := range np.Calls {
			probes = append(probes, goProbe{progs.GoNewproc1Casg, goexec.NewProc1, a, 0})
		}
	case goexec.HookEntryReturn:
		probes = append(probes, goProbe{progs.GoNewproc1, goexec.NewProc1, np.Probe, 0})
		fallthrough
	case goexec.HookReturn:
		if np.NewG != 0 { // one emulated probe where the RETs would single-step
			probes = append(probes, goProbe{progs.GoNewproc1Ret, goexec.NewProc1, np.NewG, 0})
			break
		}
		for _, a := range np.Returns {
			probes = append(probes, goProbe{progs.GoNewproc1Ret, goexec.NewProc1, a, 0})
		}
	}
	return attachGoProbes(pid, probes)
}

// attachGo puts the goroutine hooks but creation's on process pid.
func attachGo(progs *runtimePrograms, pid int, bin *goexec.Binary) (io.Closer, error) {
	var probes []goProbe
	if bin.NetHTTPClient() {
		probes = append(probes, goProbe{progs.GoRoundtrip, goexec.RoundTrip, bin.Funcs[goexec.RoundTrip].Probe, 0},
			goProbe{progs.GoWriteloop, goexec.WriteLoop, bin.Funcs[goexec.WriteLoop].Probe, 0})
	}
	for _, fn := range bin.H2Clients() {
		probes = append(probes, goProbe{progs.GoH2Headers, fn, bin.Funcs[fn].Probe, 0})
	}
	if take, ok := bin.GRPCClient(); ok {
		for _, a := range bin.Funcs[goexec.GRPCNewStream].Calls {
			probes = append(probes, goProbe{progs.GoGRPCPut, goexec.GRPCNewStream, a, 0})
		}
		var inRCX uint64 // the cookie weft_go_grpc_headers reads
		if take.InRCX {
			inRCX = 1
		}
		probes = append(probes, goProbe{progs.GoGRPCHeaders, take.Func, bin.Funcs[take.Func].Probe, inRCX})
	}
	// An entry probe whose cookie says it is on the stack check's jump.
	atEntry := func(prog *ebpf.Program, fn string) goProbe {
		f := bin.Funcs[fn]
		var atCheck uint64
		if f.Probe != f.Entry {
			atCheck = 1
		}
		return goProbe{prog, fn, f.Probe, atCheck}
	}
	if bin.GRPCServer() {
		probes = append(probes, atEntry(progs.GoGRPCServeHeaders, goexec.GRPCServeHeaders),
			atEntry(progs.GoH2ServeDone, goexec.GRPCServeStatus))
	}
	for _, srv := range bin.H2Servers() {
		probes = append(probes, atEntry(progs.GoH2ServeRequest, srv.Request),
			atEntry(progs.GoH2ServeHandler, srv.Handler), atEntry(progs.GoH2ServeDone, srv.Done))
	}
	return attachGoProbes(pid, probes)
}

// setupRuntime classifies a process, attaches what its mode needs and
// tells the kernel side. Where hooks cannot attach, the process is
// followed fail-closed: its client spans start their own traces.
func (t *Tracer) setupRuntime(pid uint32) Correlation {
	c, plan := Classify(int(pid))
	t.rtMu.Lock()
	defer t.rtMu.Unlock()
	if old := t.rtHooks[pid]; old != nil {
		old.Close()
		delete(t.rtHooks, pid)
	}
	delete(t.goDeferred, pid)
	var deferCreation bool
	switch {
	case plan == nil:
	case !t.hooks:
		c = plan.fallback
		c.Reason += " (runtime_hooks off)"
	default:
		h, err := plan.attach(&t.rt, int(pid))
		if err == nil && plan.creation != nil {
			var why string
			if why, deferCreation = t.creationNow(pid, plan); !deferCreation {
				var hc io.Closer
				if hc, err = plan.creation(&t.rt, int(pid)); err == nil {
					h = hookLinks{h, hc}
					c.Reason += "; goroutine creation followed (" + why + ")"
				} else {
					h.Close()
				}
			}
		}
		if err != nil {
			c = plan.fallback
			c.Reason += fmt.Sprintf(" (hooks failed to attach: %v)", err)
			deferCreation = false
		} else {
			t.rtHooks[pid] = h
		}
	}
	if t.tls.Ret != nil || t.tls.RetMulti != nil {
		c.Reason += t.attachTLS(pid, c, plan)
	}
	pulled := 0
	if c.Mode != ModeGo {
		var err error
		if pulled, err = t.pullSlots(pid); err != nil {
			t.log.Warn("cannot read the Java agent's registered threads: they are followed from their next registration", "pid", pid, "err", err)
		} else if pulled > 0 {
			c.Reason += fmt.Sprintf("; %d threads registered before weft", pulled)
		}
	}
	// A process that speaks the mount protocol: the ids its agent
	// mounts rule.
	agent := Correlation{Mode: ModeAgent, Reason: "an agent mounts request ids on its threads (" + c.Reason + ")"}
	if pulled > 0 {
		c = agent
	}
	switch mode, callsOut, err := t.setMode(pid, c); {
	case err != nil:
		t.log.Warn("cannot set a process's correlation", "pid", pid, "err", err)
		c = Correlation{Mode: ModeUnknown, Reason: fmt.Sprintf("proc_mode map: %v", err)}
	case mode == ModeAgent:
		c = agent
	case deferCreation && mode == ModeGo:
		// Connected out before it was classified: the kernel side did
		// not report it (it reports only a known Go program).
		c.Reason += t.deferCreation(pid, plan.creation, callsOut)
	}
	t.corrs[pid] = c
	if ns, ok := netNSOf(pid); ok {
		t.netns[pid] = ns
	}
	lvl := slog.LevelInfo
	if c.Mode != ModeThread && c.Mode != ModeGo && c.Mode != ModeNode {
		lvl = slog.LevelWarn
	}
	t.log.Log(context.Background(), lvl, "correlation", "pid", pid, "mode", c.Mode.String(), "why", c.Reason)
	return c
}

// attachTLS puts the TLS probes on process pid, next to its runtime
// hooks, and says what for the correlation's reason: crypto/tls in a Go
// program followed by goroutine (its calls are keyed by goroutine),
// OpenSSL in any other program.
func (t *Tracer) attachTLS(pid uint32, c Correlation, plan *hookPlan) string {
	h := t.tlsHooks[pid]
	if h == nil {
		h = &tlsHooks{files: map[fileID]string{}}
		t.tlsHooks[pid] = h
	}
	var libs []string
	var err error
	switch {
	case c.Mode == ModeGo && plan != nil && plan.bin != nil:
		if !plan.bin.CryptoTLS() {
			if _, linked := plan.bin.Funcs[goexec.TLSRead]; linked {
				return "; crypto/tls not followed: Read's copy, Write's record calls or a handshake not found"
			}
			return "; no crypto/tls"
		}
		libs, err = attachGoTLS(&t.tls, int(pid), plan.bin, h)
	case c.Mode == ModeGo || c.Mode == ModeRefuse:
		return "" // a Go program weft cannot follow by goroutine
	default:
		// A JVM's agent library first: attachOpenSSL names every file h has.
		if _, err = attachJVMTLS(&t.tls, int(pid), h); err == nil {
			libs, err = attachOpenSSL(&t.tls, int(pid), h, plan == nil || !plan.socketBIO)
		}
	}
	switch {
	case err != nil:
		t.log.Warn("TLS hooks failed to attach: its HTTPS is not followed", "pid", pid, "err", err)
		return fmt.Sprintf("; TLS hooks failed to attach: %v", err)
	case len(libs) == 0:
		return "; no OpenSSL found"
	}
	return "; TLS: " + strings.Join(libs, ", ")
}

// EnsureClassified classifies a traced process the kernel side knows no
// mode of (selected by "every process", or forked before it exec'd).
func (t *Tracer) EnsureClassified(pid uint32) {
	var cur tpProcInfo
	if err := t.objs.ProcMode.Lookup(pid, &cur); err == nil && Mode(cur.Mode) != ModeUnknown {
		return
	}
	t.setupRuntime(pid)
}

// ProcessExeced re-classifies a traced process that runs a new program
// (the kernel side dropped its mode at exec). Its TLS hooks stay: a
// pid's uprobes trap in whatever program it runs, from the new program's
// first mapping of the library on, before weft hears of the exec.
func (t *Tracer) ProcessExeced(pid uint32) {
	t.releaseRuntime(pid)
	var v uint32
	if err := t.objs.PidFilter.Lookup(pid, &v); err == nil && (v == pidTraced || v == pidTracedByCgroup) {
		t.setupRuntime(pid)
	}
}

// ProcessForked sets up process child, which traced process parent forked
// and which runs parent's program on (nginx's workers, pre-fork servers):
// the kernel side gave it its parent's mode, but uprobes are per process,
// so the parent's runtime and TLS hooks do not fire in it. A child that
// runs another program by now is left to its exec's event, one that is
// gone to none.
func (t *Tracer) ProcessForked(child, parent uint32) {
	t.rtMu.Lock()
	tls := t.tlsHooks[parent]
	hooked := t.rtHooks[parent] != nil || (tls != nil && len(tls.links) > 0)
	t.rtMu.Unlock()
	if !hooked {
		return
	}
	c, err := os.Stat(procExe(child))
	if err != nil {
		return
	}
	if p, err := os.Stat(procExe(parent)); err == nil && !os.SameFile(c, p) {
		return
	}
	t.setupRuntime(child)
}

func procExe(pid uint32) string { return "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/exe" }

// ProcessGone releases what a process that exited held.
func (t *Tracer) ProcessGone(pid uint32) {
	t.releaseRuntime(pid)
	t.rtMu.Lock()
	defer t.rtMu.Unlock()
	if h := t.tlsHooks[pid]; h != nil {
		t.detach(h.links)
		delete(t.tlsHooks, pid)
	}
}

// releaseRuntime drops a process's runtime hooks and correlation.
func (t *Tracer) releaseRuntime(pid uint32) {
	t.rtMu.Lock()
	defer t.rtMu.Unlock()
	if h := t.rtHooks[pid]; h != nil {
		t.detach(h)
		delete(t.rtHooks, pid)
	}
	delete(t.goDeferred, pid)
	delete(t.corrs, pid)
	delete(t.netns, pid)
}

// Correlations lists how each classified process is followed.
func (t *Tracer) Correlations() map[uint32]Correlation {
	t.rtMu.Lock()
	defer t.rtMu.Unlock()
	return maps.Clone(t.corrs)
}
