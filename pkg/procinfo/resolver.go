// Package procinfo identifies the process behind a pid: its OpenTelemetry
// resource and service name, derived from /proc the way an SDK running inside
// the process would have named itself.
package procinfo

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/weftdev/weft/pkg/cgroupid"
)

// Config configures a Resolver. The zero value is ready for production use.
type Config struct {
	// ProcRoot is where procfs is mounted; default "/proc". Tests point it
	// at a fake tree.
	ProcRoot string
	// MachineIDPath is read once for host.id; default "/etc/machine-id".
	MachineIDPath string
	// HostName is host.name; default os.Hostname().
	HostName string
	// CacheSize bounds how many processes are remembered; default 4096.
	CacheSize int
	// MissingTTL is how long the answer for a pid that could not be found is
	// reused; default 10s.
	MissingTTL time.Duration
	// Version is reported as telemetry.distro.version when set.
	Version string
	// Revalidate is how long a cached identity is trusted before /proc is
	// read again to catch pid reuse; default 5s. Resolve runs for every
	// span, so it must not cost syscalls each time; Invalidate forces the
	// check (weft calls it when a process execs).
	Revalidate time.Duration
	// Metadata, when set, adds what the orchestrator knows of processes
	// in containers (pkg/kube). It may learn of a pod after its processes
	// were first resolved: those are asked about again every Revalidate
	// until it does.
	Metadata Metadata
}

const (
	defaultProcRoot      = "/proc"
	defaultMachineIDPath = "/etc/machine-id"
	defaultCacheSize     = 4096
	defaultMissingTTL    = 10 * time.Second
	defaultRevalidate    = 5 * time.Second
)

// Resolver maps pids to resources. It is safe for concurrent use.
type Resolver struct {
	fs         procFS
	cache      *lru.Cache[uint32, *entry]
	host       hostInfo
	owners     *ownerNames
	meta       Metadata
	missingTTL time.Duration
	revalidate time.Duration
	now        func() time.Time
	log        *slog.Logger
}

type entry struct {
	startTime uint64
	exe       string
	res       *resource.Resource
	service   string
	// expires is set only for processes that could not be found, so a
	// transient failure is not remembered for the life of the cache.
	expires time.Time
	// checked is when /proc last confirmed this identity (unix ns); 0
	// forces the next Resolve to check.
	checked atomic.Int64
	// cgroup is the container and pod the process is in.
	cgroup cgroupid.Identity
	// podLater: the process is in a container the metadata source did
	// not know yet (its informer syncs after weft starts, a pod's status
	// names its containers only once they run), so the identity is
	// rebuilt once it does.
	podLater bool
}

// NewResolver returns a Resolver for cfg, with defaults filled in.
func NewResolver(cfg Config) (*Resolver, error) {
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = defaultProcRoot
	}
	if cfg.MachineIDPath == "" {
		cfg.MachineIDPath = defaultMachineIDPath
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = defaultCacheSize
	}
	if cfg.MissingTTL <= 0 {
		cfg.MissingTTL = defaultMissingTTL
	}
	if cfg.Revalidate <= 0 {
		cfg.Revalidate = defaultRevalidate
	}
	log := slog.With("component", "procinfo")
	if cfg.HostName == "" {
		name, err := os.Hostname()
		if err != nil {
			log.Warn("host name unknown", "error", err)
		}
		cfg.HostName = name
	}
	cache, err := lru.New[uint32, *entry](cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("create process cache: %w", err)
	}
	return &Resolver{
		fs:         procFS{root: cfg.ProcRoot},
		cache:      cache,
		host:       hostInfo{name: cfg.HostName, id: readMachineID(cfg.MachineIDPath, log), version: cfg.Version},
		owners:     newOwnerNames(),
		meta:       cfg.Metadata,
		missingTTL: cfg.MissingTTL,
		revalidate: cfg.Revalidate,
		now:        time.Now,
		log:        log,
	}, nil
}

// Resolve returns the resource and service name of pid.
//
// Every call re-reads /proc/<pid>/stat (and the exe link) to detect pid reuse
// and exec; the rest is cached. A process that has exited keeps its cached
// identity, because its last spans are usually exported after it is gone.
func (r *Resolver) Resolve(pid uint32) (*resource.Resource, string) {
	cached, hit := r.cache.Get(pid)
	now := r.now()
	if hit && cached.expires.IsZero() && now.UnixNano()-cached.checked.Load() < int64(r.revalidate) {
		return cached.res, cached.service
	}
	st, err := r.fs.stat(pid)
	if err != nil {
		if hit && (cached.expires.IsZero() || r.now().Before(cached.expires)) {
			return cached.res, cached.service
		}
		r.log.Debug("process not found", "pid", pid, "error", err)
		e := r.missing(pid)
		r.cache.Add(pid, e)
		return e.res, e.service
	}
	exe := r.fs.exe(pid)
	if hit && cached.expires.IsZero() && cached.startTime == st.startTime && (exe == cached.exe || exe == "") && !r.podKnownNow(cached) {
		cached.checked.Store(now.UnixNano())
		return cached.res, cached.service
	}
	e := r.build(pid, st, exe)
	e.checked.Store(now.UnixNano())
	r.cache.Add(pid, e)
	return e.res, e.service
}

// podKnownNow reports whether the metadata source has learnt of the pod of
// a process that was resolved without it.
func (r *Resolver) podKnownNow(e *entry) bool {
	if !e.podLater {
		return false
	}
	_, ok := r.pod(e.cgroup.ContainerID, e.cgroup.PodUID)
	return ok
}

// Invalidate makes the next Resolve of pid re-read /proc (after an exec,
// the same pid runs another program).
func (r *Resolver) Invalidate(pid uint32) {
	if e, ok := r.cache.Peek(pid); ok {
		e.checked.Store(0)
	}
}

func (r *Resolver) missing(pid uint32) *entry {
	service := unknownServiceName(validUTF8(r.fs.comm(pid)), pid)
	return &entry{
		res:     resource.NewWithAttributes(schemaURL, r.baseAttrs(pid, service)...),
		service: service,
		expires: r.now().Add(r.missingTTL),
	}
}

func readMachineID(path string, log *slog.Logger) string {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Warn("host.id unknown", "path", path, "error", err)
		return ""
	}
	return strings.TrimSpace(string(b))
}
