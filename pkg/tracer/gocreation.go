package tracer

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/weftdev/weft/pkg/procinfo"
	"golang.org/x/sys/unix"
)

// A Go program's goroutine creation is followed by a uprobe in
// runtime.newproc1, so that a goroutine a handler starts works for the
// handler's request. Its trap is paid for every goroutine created, one
// per request in net/http's server (its background reader), while it
// matters only for a goroutine that calls out. So a Go program gets it
// at its first outgoing connection (connect(), noted by the kernel side,
// h2peer.h): a server that calls nobody never pays, and the goroutines a
// program started before then start their calls' traces themselves
// (counted, as any call without a known request). A program that ran
// before weft attached may have connected unseen: it gets the
// hook at once if it holds a connection it did not accept (a later call
// may go out on it without a connect()), and so does every Go program
// when GoCreationAlways is set, and a gRPC-Go server, whose streams'
// handlers take their spans from their creation (h2serve.h).

const creationDeferred = "; goroutine creation followed from its first outgoing connection"

// creationNow says why process pid's goroutine creation is followed from
// now on, or that it waits for the process's first outgoing connection.
func (t *Tracer) creationNow(pid uint32, plan *hookPlan) (why string, deferIt bool) {
	switch {
	case t.goCreationAlways:
		return "always: profiling", false
	case plan.bin != nil && plan.bin.GRPCServer():
		return "a gRPC-Go server", false
	}
	if started, err := procStartTicks(pid); err != nil || started <= t.attachedAt {
		// It may have connected out unseen: a connection it holds may
		// carry a later call without a new connect().
		switch out, err := procinfo.ConnectedOut(int(pid)); {
		case err != nil:
			return fmt.Sprintf("its connections cannot be read: %v", err), false
		case out:
			return "it holds a connection it made before weft attached", false
		}
	}
	return "", true
}

// deferCreation leaves process pid's creation hooks for its first
// outgoing connection, or attaches them now if that came already (the
// process's calls_out mark). Called with rtMu held.
func (t *Tracer) deferCreation(pid uint32, attach attachFunc, callsOut bool) string {
	if callsOut {
		return t.attachCreation(pid, attach, "it connected out")
	}
	t.goDeferred[pid] = attach
	return creationDeferred
}

// ProcessCallsOut attaches the creation hooks of process pid, which
// connected out for the first time (WEFT_EV_CALLS_OUT).
func (t *Tracer) ProcessCallsOut(pid uint32) {
	t.rtMu.Lock()
	defer t.rtMu.Unlock()
	attach := t.goDeferred[pid]
	if attach == nil {
		return // followed already, gone, or not a Go program
	}
	delete(t.goDeferred, pid)
	note := t.attachCreation(pid, attach, "since its first outgoing connection")
	if c, ok := t.corrs[pid]; ok {
		c.Reason = strings.Replace(c.Reason, creationDeferred, note, 1)
		t.corrs[pid] = c
	}
}

// attachCreation attaches process pid's creation hooks next to its other
// runtime hooks. Called with rtMu held.
func (t *Tracer) attachCreation(pid uint32, attach attachFunc, why string) string {
	h, err := attach(&t.rt, int(pid))
	if err != nil {
		// Its goroutines' calls start their own traces, as before.
		t.log.Warn("goroutine creation hooks failed to attach: calls from goroutines a request started start their own traces",
			"pid", pid, "err", err)
		return fmt.Sprintf("; goroutine creation not followed (%v)", err)
	}
	if old := t.rtHooks[pid]; old != nil {
		h = hookLinks{old, h}
	}
	t.rtHooks[pid] = h
	t.log.Info("goroutine creation followed", "pid", pid, "why", why)
	return "; goroutine creation followed (" + why + ")"
}

// userHZ is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on every
// Linux architecture weft runs on).
const userHZ = 100

// bootTicks is the time since boot in /proc's clock ticks.
func bootTicks() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("read CLOCK_BOOTTIME: %w", err)
	}
	return uint64(ts.Nano()) / (1e9 / userHZ), nil
}

// procStartTicks is when process pid started, in clock ticks since boot
// (/proc/<pid>/stat's field 22).
func procStartTicks(pid uint32) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(fields))
	}
	return strconv.ParseUint(fields[22-3], 10, 64)
}
