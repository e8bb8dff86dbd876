package tracer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// DefaultSampleFrequency is the sampling frequency when none is given: a
// prime, so that sampling does not run in lockstep with periodic work.
const DefaultSampleFrequency = 19

// MaxStackDepth is the most frames a sample records per stack.
const MaxStackDepth = 127

const (
	// The BPF side wakes the reader for each sample it finds caught up;
	// Read also looks at the ring this often, should a wake-up be missed.
	samplePoll = time.Second
	// How often the online CPUs are re-read by default.
	defaultCPUCheck = 5 * time.Second
)

const sampleSize = int(unsafe.Sizeof(tpStackSample{}))

// SamplingOptions configures StartSampling.
type SamplingOptions struct {
	// Frequency is samples per second on each CPU (perf frequency mode);
	// default DefaultSampleFrequency. The kernel caps it at
	// kernel.perf_event_max_sample_rate.
	Frequency int
	// CPUCheckInterval is how often the online CPUs are re-read so that
	// hot-plugged CPUs are sampled too; default 5 s.
	CPUCheckInterval time.Duration
}

// Sample is one on-CPU stack sample of a traced thread.
type Sample struct {
	Time uint64 // CLOCK_MONOTONIC nanoseconds
	PID  uint32 // process (tgid)
	TID  uint32 // thread
	CPU  uint32
	// Key is the thread's correlation key: its tid, or the logical id a
	// JVM agent mounted on it (high bit set).
	Key  uint32
	Comm string // thread name
	// TraceID and SpanID name the server span the key was serving (or,
	// for a helper thread, the span of the thread it works for); both
	// zero outside any span.
	TraceID    [16]byte
	SpanID     [8]byte
	TraceFlags uint8
	// Instruction pointers, leaf first, at most MaxStackDepth each.
	UserStack   []uint64
	KernelStack []uint64
}

// InSpan reports whether the thread was working for a span.
func (s *Sample) InSpan() bool { return s.SpanID != [8]byte{} }

// DecodeSample turns one record of the samples ring buffer into dst,
// reusing dst's stack slices.
func DecodeSample(raw []byte, dst *Sample) error {
	if len(raw) < sampleSize {
		return fmt.Errorf("sample record of %d bytes is shorter than %d", len(raw), sampleSize)
	}
	var r *tpStackSample
	if uintptr(unsafe.Pointer(&raw[0]))%unsafe.Alignof(tpStackSample{}) == 0 {
		// Ring buffer records are 8-byte aligned: read in place.
		r = (*tpStackSample)(unsafe.Pointer(&raw[0]))
	} else {
		r = new(tpStackSample)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(r)), sampleSize), raw)
	}
	nu := min(int(r.UserLen), len(r.UserStack))
	nk := min(int(r.KernelLen), len(r.KernelStack))
	comm := r.Comm[:]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	*dst = Sample{
		Time:        r.TsNs,
		PID:         r.Pid,
		TID:         r.Tid,
		CPU:         r.Cpu,
		Key:         r.Key,
		Comm:        string(comm),
		TraceID:     r.TraceId,
		SpanID:      r.SpanId,
		TraceFlags:  r.TraceFlags,
		UserStack:   append(dst.UserStack[:0], r.UserStack[:nu]...),
		KernelStack: append(dst.KernelStack[:0], r.KernelStack[:nk]...),
	}
	return nil
}

// Sampler samples the on-CPU stacks of traced processes: a CPU-clock perf
// event on every online CPU runs the BPF sampler, which keeps the ticks
// that land on traced threads. Read must not be called concurrently.
type Sampler struct {
	t      *Tracer
	prog   *ebpf.Program
	freq   uint64
	reader *ringReader
	rec    ringbuf.Record
	log    *slog.Logger

	// begun counts the samples the BPF side reserved; handled those the
	// reader's caller is done with (and those dropped as undecodable).
	begun   *ebpf.Memory
	handled atomic.Uint64

	deadline atomic.Int64 // Read's deadline, unix ns; 0: none

	mu     sync.Mutex
	events map[int]*cpuEvent // by CPU

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// cpuEvent is the perf event of one CPU and the program's attachment to it.
type cpuEvent struct {
	fd   int
	link io.Closer // nil when attached with PERF_EVENT_IOC_SET_BPF
}

// StartSampling starts sampling the stacks of traced processes on every
// online CPU. One sampler runs at a time; Close stops it (so does the
// tracer's Close). The perf events belong to this process: if it dies,
// however it dies, the kernel closes them and sampling stops.
func (t *Tracer) StartSampling(opts SamplingOptions) (*Sampler, error) {
	freq := opts.Frequency
	if freq == 0 {
		freq = DefaultSampleFrequency
	}
	if freq < 0 {
		return nil, fmt.Errorf("sampling frequency %d Hz is negative", freq)
	}
	check := opts.CPUCheckInterval
	if check <= 0 {
		check = defaultCPUCheck
	}
	prog := t.objs.Sample

	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sampler != nil {
		return nil, errors.New("sampling is already running")
	}
	begun, err := t.objs.SamplesBegun.Memory()
	if err != nil {
		return nil, fmt.Errorf("samples_begun memory: %w", err)
	}
	reader, err := newRingReader(t.objs.Samples)
	if err != nil {
		return nil, fmt.Errorf("open samples ring buffer: %w", err)
	}
	s := &Sampler{
		t:      t,
		prog:   prog,
		freq:   uint64(freq),
		reader: reader,
		begun:  begun,
		log:    t.log.With("component", "sampler"),
		events: map[int]*cpuEvent{},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	cpus, err := onlineCPUs()
	if err == nil {
		err = s.syncCPUs(cpus)
	}
	if err != nil {
		s.mu.Lock()
		errs := []error{err, s.closeEvents(), reader.Close()}
		s.mu.Unlock()
		return nil, errors.Join(errs...)
	}
	go s.watchCPUs(check)
	t.sampler = s
	s.log.Info("sampling", "hz", freq, "cpus", len(cpus))
	return s, nil
}

// Read blocks for the next sample. It returns os.ErrClosed after Close and
// os.ErrDeadlineExceeded once the deadline set with SetDeadline passed.
func (s *Sampler) Read() (Sample, error) {
	var smp Sample
	err := s.ReadInto(&smp)
	return smp, err
}

// ReadInto is Read into dst, reusing its stack slices.
func (s *Sampler) ReadInto(dst *Sample) error {
	for {
		wait := time.Now().Add(samplePoll)
		user := s.deadline.Load()
		if user != 0 && user < wait.UnixNano() {
			wait = time.Unix(0, user)
		}
		s.reader.SetDeadline(wait)
		err := s.reader.ReadInto(&s.rec)
		switch {
		case err == nil:
			if err := DecodeSample(s.rec.RawSample, dst); err != nil {
				s.log.Warn("undecodable sample", "err", err)
				s.handled.Add(1)
				continue
			}
			return nil
		case errors.Is(err, os.ErrClosed):
			return os.ErrClosed
		case errors.Is(err, os.ErrDeadlineExceeded):
			if user != 0 && time.Now().UnixNano() >= user {
				return os.ErrDeadlineExceeded
			}
		default:
			return fmt.Errorf("read samples ring buffer: %w", err)
		}
	}
}

// Handled tells the sampler that the caller is done with one sample Read
// returned: Settled counts on it.
func (s *Sampler) Handled() { s.handled.Add(1) }

// Settled reports whether every sample the kernel has begun was read and
// handled: then no sample stamped before the call can still be unread.
// It reads shared memory, no system call.
func (s *Sampler) Settled() bool {
	var b [8]byte
	// The kernel's count first: handled never passes it, so equal counts
	// read in this order mean nothing begun before was still in flight.
	// An aligned 8-byte copy is one load on the 64-bit targets.
	if _, err := s.begun.ReadAt(b[:], 0); err != nil {
		return false
	}
	return s.handled.Load() >= binary.NativeEndian.Uint64(b[:])
}

// SetDeadline makes a blocked Read return os.ErrDeadlineExceeded at d (a
// zero d removes the deadline). A Read already blocked sees a new
// deadline within samplePoll.
func (s *Sampler) SetDeadline(d time.Time) {
	if d.IsZero() {
		s.deadline.Store(0)
		return
	}
	s.deadline.Store(max(d.UnixNano(), 1))
}

// CPUs returns the CPUs being sampled, in order.
func (s *Sampler) CPUs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	cpus := make([]int, 0, len(s.events))
	for c := range s.events {
		cpus = append(cpus, c)
	}
	slices.Sort(cpus)
	return cpus
}

// Close stops sampling: it detaches the program from every CPU, closes the
// perf events and interrupts Read.
func (s *Sampler) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.mu.Lock()
		errs := []error{s.closeEvents()}
		s.mu.Unlock()
		errs = append(errs, s.reader.Close())
		s.t.mu.Lock()
		if s.t.sampler == s {
			s.t.sampler = nil
		}
		s.t.mu.Unlock()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// watchCPUs follows CPU hot-plug: a CPU that comes online gets a perf
// event, one that goes offline loses its own.
func (s *Sampler) watchCPUs(every time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		cpus, err := onlineCPUs()
		if err == nil {
			err = s.syncCPUs(cpus)
		}
		if err != nil {
			s.log.Warn("following online CPUs", "err", err)
		}
	}
}

// syncCPUs opens events on the given CPUs that have none and closes those
// of CPUs not in the list.
func (s *Sampler) syncCPUs(cpus []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	online := make(map[int]bool, len(cpus))
	for _, c := range cpus {
		online[c] = true
		if s.events[c] != nil {
			continue
		}
		ev, err := s.openEvent(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.events[c] = ev
	}
	for c, ev := range s.events {
		if !online[c] {
			errs = append(errs, ev.close(c))
			delete(s.events, c)
		}
	}
	return errors.Join(errs...)
}

// closeEvents closes every CPU's event. s.mu must be held.
func (s *Sampler) closeEvents() error {
	var errs []error
	for c, ev := range s.events {
		errs = append(errs, ev.close(c))
		delete(s.events, c)
	}
	return errors.Join(errs...)
}

// openEvent opens a CPU-clock event in frequency mode on one CPU, for
// every task, and attaches the sampler to it: with a BPF link where the
// kernel has perf_event links (5.15+), else with PERF_EVENT_IOC_SET_BPF.
func (s *Sampler) openEvent(cpu int) (*cpuEvent, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: s.freq,
		Bits:   unix.PerfBitFreq | unix.PerfBitDisabled, // enabled once the program is on
	}
	fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open cpu-clock perf event on cpu %d at %d Hz: %w", cpu, s.freq, err)
	}
	ev := &cpuEvent{fd: fd}
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: s.prog, Attach: ebpf.AttachPerfEvent})
	switch {
	case err == nil:
		ev.link = l
	case errors.Is(err, link.ErrNotSupported) || errors.Is(err, unix.EINVAL):
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, s.prog.FD()); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("attach sampler to cpu %d: %w", cpu, err)
		}
	default:
		unix.Close(fd)
		return nil, fmt.Errorf("link sampler to cpu %d: %w", cpu, err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		ev.close(cpu)
		return nil, fmt.Errorf("enable perf event on cpu %d: %w", cpu, err)
	}
	return ev, nil
}

// close detaches the program and closes the event (closing the event
// alone detaches an ioctl attachment).
func (ev *cpuEvent) close(cpu int) error {
	var errs []error
	if ev.link != nil {
		if err := ev.link.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach sampler from cpu %d: %w", cpu, err))
		}
	}
	if err := unix.Close(ev.fd); err != nil {
		errs = append(errs, fmt.Errorf("close perf event of cpu %d: %w", cpu, err))
	}
	return errors.Join(errs...)
}

const cpuOnlinePath = "/sys/devices/system/cpu/online"

func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile(cpuOnlinePath)
	if err != nil {
		return nil, fmt.Errorf("read online CPUs: %w", err)
	}
	cpus, err := parseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", cpuOnlinePath, err)
	}
	return cpus, nil
}

// parseCPUList parses the kernel's CPU list format ("0-3,5,7-8").
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			return nil, fmt.Errorf("bad CPU %q in %q", lo, s)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return nil, fmt.Errorf("bad CPU range %q in %q", part, s)
			}
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
