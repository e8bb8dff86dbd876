// Package tracer loads weft's BPF programs, attaches them on the path the
// kernel supports and reads their events. It is the only package that talks
// to the kernel's BPF subsystem for tracing.
package tracer

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/jvmattach"
	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/sampling"
)

// MaxCapture is the largest payload prefix an event can carry.
const MaxCapture = 4096

// Options configures the programs before they are loaded.
type Options struct {
	Path         kernel.Path
	CaptureBytes int    // payload prefix per event, 1..MaxCapture
	SelfPID      uint32 // never traced
	TraceAll     bool   // every process except SelfPID and ignored pids
	NotifyExec   bool   // report execve so user space can select by name
	// Propagation writes traceparent into the HTTP requests traced
	// processes send (sockops + sk_msg on the cgroup v2 hierarchy).
	Propagation bool
	// RuntimeHooks attaches uprobes to traced Go programs so that their
	// calls are parented by goroutine (runtime.go); without them such
	// programs are followed fail-closed.
	RuntimeHooks bool
	// GoCreationAlways follows goroutine creation in every Go program
	// from its start. Otherwise a Go program started after weft attached
	// gets the hook at its first outgoing connection (gocreation.go), and
	// one that never calls out never pays for it. Profiling wants it: a
	// sample on a goroutine a handler started carries the handler's span.
	GoCreationAlways bool
	// IoctlPackets reads OBI's ioctl packets (docs/ioctl-protocol.md):
	// a kprobe on sys_ioctl, or on the tracepoint paths the
	// sys_enter_ioctl tracepoint, which slows every task's system calls
	// on the host. weft's own agent reaches the socket path without it.
	IoctlPackets bool
	// TLS attaches uprobes to traced processes' TLS library (OpenSSL), so
	// that HTTPS is seen in clear (openssl.go).
	TLS bool
	// Cgroups are selected cgroups: every process in one of them or below
	// is traced, decided in the kernel from its first call.
	Cgroups []Cgroup
	// Cgroup is the cgroup v2 directory whose sockets injection covers;
	// default: the root of the cgroup2 mount in /proc/mounts.
	Cgroup string
	// PinTracesCtx pins traces_ctx_v1 (thread -> active span, in the
	// OpenTelemetry profiler interop layout) at this bpffs path, so that
	// another profiler can label its samples with weft's spans; the
	// OpenTelemetry eBPF profiler looks at <bpffs>/otel/traces_ctx_v1. A map
	// already pinned there is shared, not replaced. Empty: not pinned.
	PinTracesCtx string
	// TracesCtx keeps traces_ctx_v1 up to date though it is not pinned
	// (tests read it). Pinned, it is kept up to date anyway; else the
	// kernel side skips it: nothing else reads it.
	TracesCtx bool
	// SocketTableSize is how many sockets with data in flight weft
	// follows to their close (0: DefaultSocketTableSize); past it, closes
	// go unseen and weft_socket_table_full counts the calls.
	SocketTableSize uint32
	// Sampler decides, where a trace begins or enters a traced process,
	// whether it is recorded; nil is OpenTelemetry's default,
	// parentbased_always_on.
	Sampler *sampling.Sampler
}

// DefaultSocketTableSize is how many sockets are followed to their close
// unless configured.
const DefaultSocketTableSize = 65536

// Cgroup is a cgroup v2 directory by id and depth (the root is level 0).
type Cgroup struct {
	ID    uint64
	Level int
}

// Tracer is a loaded and attached set of programs.
type Tracer struct {
	path   kernel.Path
	coll   *ebpf.Collection
	objs   objects
	rt     runtimePrograms // with hooks on
	tls    tlsPrograms     // with TLS on
	links  []io.Closer
	reader *ringReader
	rec    ringbuf.Record
	log    *slog.Logger
	pinned string // traces_ctx_v1 pin this tracer created, removed on Close
	inject bool   // propagation: sockops and sk_msg are attached
	hooks  bool   // runtime hooks (Options.RuntimeHooks)
	// goCreationAlways: Options.GoCreationAlways; attachedAt: when the
	// programs were attached, in clock ticks since boot (gocreation.go)
	goCreationAlways bool
	attachedAt       uint64
	// unattached are the optional hooks this kernel would not attach.
	unattached []string

	mu      sync.Mutex
	sampler *Sampler // running sampler, closed with the tracer

	rtMu    sync.Mutex
	corrs   map[uint32]Correlation // per traced process: how it is followed
	netns   map[uint32]uint64      // per traced process: its network namespace (NetNS)
	rtHooks map[uint32]io.Closer   // per process: its runtime's uprobes
	// per Go process not calling out yet: how to attach its goroutine
	// creation hooks when it does (gocreation.go)
	goDeferred map[uint32]attachFunc
	// per process: its TLS libraries' uprobes, kept across exec
	tlsHooks map[uint32]*tlsHooks
	// detaching: hooks of gone processes being removed (detach)
	detaching sync.WaitGroup
}

// Spec returns the collection spec of a path, with nothing loaded.
func Spec(p kernel.Path) (*ebpf.CollectionSpec, error) {
	switch p {
	case kernel.PathKprobe:
		return loadKprobe()
	case kernel.PathTracepoint, kernel.PathSyscalls:
		return loadTp()
	}
	return nil, fmt.Errorf("unknown attach path %q", p)
}

// Load loads the programs into the kernel without attaching them.
// PinTracesCtx is Open's business: Load neither pins nor shares a pin.
func Load(opts Options) (*ebpf.Collection, error) {
	coll, _, err := load(opts, nil)
	return coll, err
}

// load loads the programs, using the given maps instead of creating the
// ones of the same name; it returns the spec of what it loaded.
func load(opts Options, replace map[string]*ebpf.Map) (*ebpf.Collection, *ebpf.CollectionSpec, error) {
	if opts.CaptureBytes < 1 || opts.CaptureBytes > MaxCapture {
		return nil, nil, fmt.Errorf("capture bytes %d out of range 1..%d", opts.CaptureBytes, MaxCapture)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, nil, fmt.Errorf("remove memlock limit: %w", err)
	}
	spec, err := Spec(opts.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("load %s spec: %w", opts.Path, err)
	}
	smp := sampling.Default()
	if opts.Sampler != nil {
		smp = *opts.Sampler
	}
	vars := map[string]any{
		"capture_max":         uint32(opts.CaptureBytes),
		"self_pid":            opts.SelfPID,
		"trace_all":           boolByte(opts.TraceAll),
		"notify_exec":         boolByte(opts.NotifyExec),
		"propagation_on":      boolByte(opts.Propagation),
		"publish_traces_ctx":  boolByte(opts.TracesCtx || opts.PinTracesCtx != ""),
		"cgroup_levels":       cgroupLevels(opts.Cgroups),
		"sample_root":         uint8(smp.Root),
		"sample_parent_based": boolByte(smp.ParentBased),
		"sample_bound":        smp.Bound,
		// sockops that cannot tell the process take every connection
		"note_all_senders": boolByte(!SockopsKnowsProcess()),
	}
	for name, v := range vars {
		vs, ok := spec.Variables[name]
		if !ok {
			return nil, nil, fmt.Errorf("variable %s missing from %s objects", name, opts.Path)
		}
		if err := vs.Set(v); err != nil {
			return nil, nil, fmt.Errorf("set %s: %w", name, err)
		}
	}
	size := opts.SocketTableSize
	if size == 0 {
		size = DefaultSocketTableSize
	}
	socks, ok := spec.Maps["tracked_socks"]
	if !ok {
		return nil, nil, fmt.Errorf("map tracked_socks missing from %s objects", opts.Path)
	}
	socks.MaxEntries = size
	dropSockopsVariant(spec)
	dropTLSVariant(spec)
	if err := dropDisabled(spec, opts); err != nil {
		return nil, nil, fmt.Errorf("load %s programs: %w", opts.Path, err)
	}
	coll, err := newCollection(spec, replace)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, nil, fmt.Errorf("load %s programs: %+v", opts.Path, ve)
		}
		return nil, nil, fmt.Errorf("load %s programs: %w", opts.Path, err)
	}
	if err := fillProgramArrays(coll); err != nil {
		coll.Close()
		return nil, nil, fmt.Errorf("load %s programs: %w", opts.Path, err)
	}
	return coll, spec, nil
}

// Open loads and attaches the programs and opens the event stream.
func Open(opts Options) (*Tracer, error) {
	if opts.Path.Tracepoints() {
		if _, err := kernel.EnsureTracefs(); err != nil {
			return nil, err
		}
	}
	shared, err := openTracesCtxPin(opts.PinTracesCtx)
	if err != nil {
		return nil, err
	}
	var replace map[string]*ebpf.Map
	if shared != nil {
		replace = map[string]*ebpf.Map{tracesCtxMap: shared}
		defer shared.Close() // the collection holds its own clone
	}
	coll, spec, err := load(opts, replace)
	if err != nil {
		return nil, err
	}
	t := &Tracer{path: opts.Path, coll: coll, inject: opts.Propagation, hooks: opts.RuntimeHooks, goCreationAlways: opts.GoCreationAlways,
		log: slog.With("component", "tracer"), corrs: map[uint32]Correlation{}, netns: map[uint32]uint64{}, rtHooks: map[uint32]io.Closer{},
		goDeferred: map[uint32]attachFunc{}, tlsHooks: map[uint32]*tlsHooks{}}
	if err := coll.Assign(&t.objs); err != nil {
		t.Close()
		return nil, fmt.Errorf("%s objects: %w", opts.Path, err)
	}
	if opts.RuntimeHooks {
		if err := coll.Assign(&t.rt); err != nil {
			t.Close()
			return nil, fmt.Errorf("%s runtime hooks: %w", opts.Path, err)
		}
	}
	if opts.TLS {
		if err := t.tls.assign(coll); err != nil {
			t.Close()
			return nil, fmt.Errorf("%s TLS hooks: %w", opts.Path, err)
		}
	}
	for _, cg := range opts.Cgroups {
		if err := t.objs.CgroupFilter.Put(cg.ID, uint8(1)); err != nil {
			t.Close()
			return nil, fmt.Errorf("select cgroup %d: %w", cg.ID, err)
		}
	}
	tgt := attachTarget{sockhash: t.objs.ClientSocks, cgroup: opts.Cgroup}
	if opts.Propagation && tgt.cgroup == "" {
		if tgt.cgroup, err = kernel.FindMount("cgroup2"); err != nil {
			t.Close()
			return nil, fmt.Errorf("propagation needs cgroup v2: %w", err)
		}
	}
	if opts.PinTracesCtx != "" && shared == nil {
		if err := t.objs.TracesCtx.Pin(opts.PinTracesCtx); err != nil {
			t.Close()
			return nil, fmt.Errorf("pin %s at %s: %w", tracesCtxMap, opts.PinTracesCtx, err)
		}
		t.pinned = opts.PinTracesCtx
	}
	if err := t.attachAtOpen(spec, tgt); err != nil {
		t.Close()
		return nil, err
	}
	if t.attachedAt, err = bootTicks(); err != nil {
		t.Close()
		return nil, err
	}
	t.reader, err = newRingReader(t.objs.Events)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	t.log.Info("attached", "path", opts.Path, "programs", len(t.links), "unattached", t.unattached, "capture_bytes", opts.CaptureBytes,
		"propagation", opts.Propagation, "ioctl_packets", opts.IoctlPackets, "traces_ctx_pin", opts.PinTracesCtx)
	return t, nil
}

// Path is the attach path in use.
func (t *Tracer) Path() kernel.Path { return t.path }

// Read blocks for the next event. The payload aliases an internal buffer
// and is valid only until the next call. It returns os.ErrClosed after
// Close.
func (t *Tracer) Read(ev *event.Event) error {
	for {
		if err := t.reader.ReadInto(&t.rec); err != nil {
			if errors.Is(err, ringbuf.ErrClosed) {
				return os.ErrClosed
			}
			return fmt.Errorf("read ring buffer: %w", err)
		}
		if err := Decode(t.rec.RawSample, ev); err != nil {
			t.log.Warn("undecodable event", "err", err)
			continue
		}
		return nil
	}
}

// SetPID marks a process as traced, or as never traced. A traced process
// is classified first (Classify), so that its first request already finds
// its hooks and mode.
func (t *Tracer) SetPID(pid uint32, traced bool) error {
	if !traced {
		return t.putPID(pid, pidIgnored)
	}
	return t.trace(pid, pidTraced)
}

// SetPIDByCgroup marks a process found in a selected cgroup as traced;
// the kernel checks it again if it moves to another cgroup.
func (t *Tracer) SetPIDByCgroup(pid uint32) error { return t.trace(pid, pidTracedByCgroup) }

func (t *Tracer) trace(pid, how uint32) error {
	t.setupRuntime(pid)
	if err := t.putPID(pid, how); err != nil {
		return err
	}
	if t.inject {
		t.allowBlockingSockets(pid)
	}
	return nil
}

func (t *Tracer) putPID(pid, v uint32) error {
	if err := t.objs.PidFilter.Put(pid, v); err != nil {
		return fmt.Errorf("update pid filter for %d: %w", pid, err)
	}
	return nil
}

// allowBlockingSockets lets a JVM's sockets that connect in blocking mode
// join the injection sockhash when its socket reads retry EAGAIN (see
// connects_blocking in bpf/include/propagate.h); anything else stays out.
func (t *Tracer) allowBlockingSockets(pid uint32) {
	ok, err := jvmattach.RetriesEAGAIN(int(pid))
	if err != nil {
		t.log.Debug("cannot tell whether a process retries EAGAIN", "pid", pid, "err", err)
	}
	if !ok {
		return
	}
	if err := t.objs.EagainRetry.Put(pid, uint8(1)); err != nil {
		t.log.Warn("cannot let a JVM's blocking sockets be injected into", "pid", pid, "err", err)
	}
}

// ForgetPID removes a process from the filter.
func (t *Tracer) ForgetPID(pid uint32) error {
	t.objs.EagainRetry.Delete(pid) // mostly absent
	t.ProcessGone(pid)
	t.objs.ProcMode.Delete(pid)
	err := t.objs.PidFilter.Delete(pid)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("delete %d from pid filter: %w", pid, err)
	}
	return nil
}

// SkipNotHTTP stops the copy of a socket's data: user space found it
// carries another protocol than HTTP/1.x. Its close is still reported.
// The ports name the connection: by the time this is set, the socket may
// have closed and another taken its address, which keeps being copied.
func (t *Tracer) SkipNotHTTP(connID uint64, local, remote uint16) error {
	if err := t.objs.NotHTTPSocks.Put(connID, uint32(local)<<16|uint32(remote)); err != nil {
		return fmt.Errorf("mark socket %#x not HTTP: %w", connID, err)
	}
	return nil
}

// MarkH2Fresh says whether goroutine goroutine of process pid reads, or
// created the reader of, an HTTP/2 server connection whose client weft
// does not follow on this host: the kernel then starts a trace for each
// of its streams without traceparent, for the stream's handler
// (bpf/include/h2serve.h).
func (t *Tracer) MarkH2Fresh(pid uint32, goroutine uint64, fresh bool) error {
	k := tpGoKey{Tgid: pid, Id: goroutine}
	var err error
	if fresh {
		err = t.objs.GoH2Fresh.Put(k, uint8(1))
	} else if err = t.objs.GoH2Fresh.Delete(k); errors.Is(err, ebpf.ErrKeyNotExist) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("mark goroutine %d of %d fresh=%v: %w", goroutine, pid, fresh, err)
	}
	return nil
}

// Close detaches everything. Links are not pinned, so the kernel also
// detaches them when the process dies, however it dies.
func (t *Tracer) Close() error {
	var errs []error
	t.mu.Lock()
	s := t.sampler
	t.mu.Unlock()
	if s != nil {
		errs = append(errs, s.Close())
	}
	if t.reader != nil {
		errs = append(errs, t.reader.Close())
	}
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.rtMu.Lock()
	for _, h := range t.rtHooks {
		errs = append(errs, h.Close())
	}
	for _, h := range t.tlsHooks {
		errs = append(errs, h.links.Close())
	}
	t.rtMu.Unlock()
	t.detaching.Wait()
	if t.pinned != "" {
		if err := t.objs.TracesCtx.Unpin(); err != nil {
			errs = append(errs, fmt.Errorf("unpin %s: %w", t.pinned, err))
		}
	}
	errs = append(errs, t.objs.Close(), t.rt.Close(), t.tls.Close())
	t.coll.Close()
	return errors.Join(errs...)
}

// dropSockopsVariant keeps the sockops program this kernel can run: the
// one that checks the connecting process where sockops may ask for it,
// else the one that takes every client connection.
func dropSockopsVariant(spec *ebpf.CollectionSpec) {
	if SockopsKnowsProcess() {
		delete(spec.Programs, "weft_sockops_any")
	} else {
		delete(spec.Programs, "weft_sockops")
	}
}

// SockopsKnowsProcess reports whether sockops programs may call
// bpf_get_current_pid_tgid on this kernel.
func SockopsKnowsProcess() bool {
	return features.HaveProgramHelper(ebpf.SockOps, asm.FnGetCurrentPidTgid) == nil
}

const (
	pidTraced         = 1
	pidIgnored        = 2
	pidTracedByCgroup = 3
)

// cgroupLevels is the kernel's cgroup_levels: bit n set for a cgroup at
// level n.
func cgroupLevels(cgs []Cgroup) uint32 {
	var m uint32
	for _, cg := range cgs {
		m |= 1 << cg.Level
	}
	return m
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// SetDeadline makes a blocked Read return os.ErrDeadlineExceeded at t, so
// the reading goroutine can do periodic work between events.
func (t *Tracer) SetDeadline(d time.Time) { t.reader.SetDeadline(d) }
