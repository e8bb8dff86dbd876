package symbolize

import (
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Options configure a Symbolizer; the zero value is ready for the host.
type Options struct {
	// ProcRoot is where procfs is mounted. Default "/proc".
	ProcRoot string
	// KallsymsPath defaults to <ProcRoot>/kallsyms.
	KallsymsPath string
	// MaxProcesses bounds how many processes' mappings and perf maps are
	// remembered. Default 1024.
	MaxProcesses int
	// MaxBinaries bounds how many parsed binaries are kept; a large Go
	// binary's tables take tens of MiB. Default 64.
	MaxBinaries int
	// RefreshInterval is the least time between two re-reads of one
	// process's maps or perf map. Default one second.
	RefreshInterval time.Duration
	// Logger receives debug records on files that could not be read.
	// Default slog.Default().
	Logger *slog.Logger
}

const (
	// kallsymsRefresh spaces re-reads of kallsyms on a miss, which happen
	// when a module was loaded after the first read.
	kallsymsRefresh = time.Minute
	// failedBinaryRetry spaces attempts to read a binary that could not
	// be read: the process may have exited, a new one may succeed.
	failedBinaryRetry = 10 * time.Second
)

// Symbolizer resolves sampled stacks. It is safe for concurrent use; calls
// are serialised.
type Symbolizer struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	mu       sync.Mutex
	procs    *simplelru.LRU[uint32, *process]
	binaries *simplelru.LRU[binaryKey, *binaryEntry]
	kernel   *kernelSymbols
	kernelAt time.Time
	vdso     *object
	vdsoRead bool
}

// binaryKey identifies a file independent of the path or mount namespace
// it is seen through.
type binaryKey struct{ dev, inode uint64 }

// binaryEntry is a parsed binary, or the failure to parse one.
type binaryEntry struct {
	obj *object // nil when it could not be read
	at  time.Time
}

// New returns a Symbolizer. Nothing is read until the first Symbolize.
func New(opts Options) *Symbolizer {
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}
	if opts.KallsymsPath == "" {
		opts.KallsymsPath = filepath.Join(opts.ProcRoot, "kallsyms")
	}
	if opts.MaxProcesses <= 0 {
		opts.MaxProcesses = 1024
	}
	if opts.MaxBinaries <= 0 {
		opts.MaxBinaries = 64
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// Sizes are positive, the only error simplelru reports.
	procs, _ := simplelru.NewLRU[uint32, *process](opts.MaxProcesses, nil)
	bins, _ := simplelru.NewLRU[binaryKey, *binaryEntry](opts.MaxBinaries, nil)
	return &Symbolizer{
		opts:     opts,
		log:      opts.Logger.With("component", "symbolize"),
		now:      time.Now,
		procs:    procs,
		binaries: bins,
	}
}

// Symbolize resolves one sample's stacks, each leaf first, and returns the
// frames leaf first: the kernel frames, then the user ones. A zero address
// ends a stack (the padding of a fixed-size BPF stack array). Every
// address yields a frame, resolved or not.
func (s *Symbolizer) Symbolize(pid uint32, user, kernel []uint64) []Frame {
	user, kernel = trimStack(user), trimStack(kernel)
	frames := make([]Frame, 0, len(user)+len(kernel))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, ip := range kernel {
		frames = append(frames, s.kernelFrame(ip, i == 0))
	}
	if len(user) == 0 {
		return frames
	}
	p := s.process(pid)
	for i, ip := range user {
		// When the kernel stack is not empty the user leaf is where the
		// system call returns to: a return address like the callers'.
		frames = append(frames, s.userFrame(p, pid, ip, i == 0 && len(kernel) == 0))
	}
	return frames
}

// LoadKernel reads the kernel's symbols now instead of at the first kernel
// frame: parsing kallsyms takes a tenth of a second, better spent at start
// than on the first sample.
func (s *Symbolizer) LoadKernel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kernel == nil {
		s.loadKernel(s.now())
	}
}

// Forget drops what is remembered of a process; call it when the process
// exits so a later process reusing the pid is not resolved with its maps.
func (s *Symbolizer) Forget(pid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs.Remove(pid)
}

// PerfMapChanged makes the next look-up in a process's JIT code re-read
// its perf map and mappings at once, not after RefreshInterval: call it
// when the runtime has just rewritten the map (a JVM answers a perf-map
// request within tens of milliseconds, well inside the interval).
func (s *Symbolizer) PerfMapChanged(pid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.procs.Peek(pid); ok {
		p.perfAt, p.readAt = time.Time{}, time.Time{}
	}
}

func trimStack(st []uint64) []uint64 {
	for i, ip := range st {
		if ip == 0 {
			return st[:i]
		}
	}
	return st
}

// lookupPC is the address to look up for a frame. A caller's frame holds
// a return address, which for a call at the very end of a function (to a
// function that does not return) is already in the next function; one
// byte back is inside the call instruction.
func lookupPC(ip uint64, exact bool) uint64 {
	if exact || ip == 0 {
		return ip
	}
	return ip - 1
}

func (s *Symbolizer) process(pid uint32) *process {
	if p, ok := s.procs.Get(pid); ok {
		return p
	}
	p := &process{}
	s.readMaps(p, pid, s.now())
	s.procs.Add(pid, p)
	return p
}

func (s *Symbolizer) kernelFrame(ip uint64, exact bool) Frame {
	f := Frame{Kind: KindKernel, Address: ip, Module: ModuleKernel}
	pc := lookupPC(ip, exact)
	now := s.now()
	if s.kernel == nil {
		s.loadKernel(now)
	}
	name, module, ok := s.kernel.lookup(pc)
	if !ok && !s.kernel.hidden && now.Sub(s.kernelAt) >= kallsymsRefresh {
		s.loadKernel(now)
		name, module, ok = s.kernel.lookup(pc)
	}
	if ok {
		f.Function = name
		if module != "" {
			f.File = "[" + module + "]"
		}
	}
	return f
}

func (s *Symbolizer) loadKernel(now time.Time) {
	s.kernelAt = now
	ks, err := loadKallsyms(s.opts.KallsymsPath)
	if err != nil {
		s.log.Debug("kernel symbols unavailable", "err", err)
		if s.kernel == nil {
			s.kernel = &kernelSymbols{}
		}
		return
	}
	s.kernel = ks
}

func (s *Symbolizer) userFrame(p *process, pid uint32, ip uint64, exact bool) Frame {
	f := Frame{Kind: KindUser, Address: ip}
	pc := lookupPC(ip, exact)
	m, ok := s.mappingFor(p, pid, ip)
	switch {
	case !ok:
		return f
	case m.anonymous():
		f.Module = m.path
		if f.Module == "" {
			f.Module = ModuleAnon
		}
		f.Offset = ip - m.start
		if name, ok := s.jitName(p, pid, pc); ok {
			f.Kind, f.Function = KindJIT, name
		}
		return f
	case m.path == vdsoPath:
		f.Module = m.path
		f.Offset = ip - m.start + m.offset
		s.resolveIn(&f, s.ownVDSO(), ip-pc)
		return f
	case m.fileBacked():
		f.Module = m.path
		f.Offset = ip - m.start + m.offset // the file offset until translated
		s.resolveIn(&f, s.object(p, pid, m), ip-pc)
		return f
	default: // [vsyscall] and other special mappings
		f.Module = m.path
		f.Offset = ip - m.start
		return f
	}
}

// resolveIn turns f.Offset from a file offset into b's virtual address and
// names it; back is how far before the address the lookup is made.
func (s *Symbolizer) resolveIn(f *Frame, b *object, back uint64) {
	if b == nil {
		return
	}
	v, ok := b.vaddr(f.Offset)
	if !ok {
		return
	}
	f.Offset = v
	f.Function, f.File, f.Line = b.lookup(v - back)
}

// object returns the parsed file of a mapping, or nil.
func (s *Symbolizer) object(p *process, pid uint32, m *mapping) *object {
	key := binaryKey{dev: m.dev, inode: m.inode}
	now := s.now()
	if e, ok := s.binaries.Get(key); ok {
		switch {
		case e.obj == nil && now.Sub(e.at) < failedBinaryRetry:
			return nil
		case e.obj != nil && (p.verified[key] || p.current(key, e.obj, s.binaryPaths(pid, m))):
			return e.obj
		}
	}
	obj, err := openBinary(s.binaryPaths(pid, m))
	if err != nil {
		s.log.Debug("binary unreadable", "pid", pid, "path", m.path, "err", err)
	} else {
		p.verify(key)
	}
	s.binaries.Add(key, &binaryEntry{obj: obj, at: now})
	return obj
}

func (s *Symbolizer) ownVDSO() *object {
	if !s.vdsoRead {
		s.vdsoRead = true
		b, err := readOwnVDSO()
		if err != nil {
			s.log.Debug("vdso unreadable", "err", err)
		}
		s.vdso = b
	}
	return s.vdso
}
