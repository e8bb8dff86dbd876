package profiler

import (
	"errors"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/profiler/symbolize"
	"github.com/weftdev/weft/pkg/spans"
)

// Symbolizer resolves a sample's stacks; *symbolize.Symbolizer is one.
type Symbolizer interface {
	Symbolize(pid uint32, user, kernel []uint64) []symbolize.Frame
}

// DefaultService names the profile of processes Config.Service does not
// name.
const DefaultService = "unknown_service"

// DefaultMaxStacks bounds the distinct stacks held per interval.
const DefaultMaxStacks = 1 << 16

// Config configures an Aggregator.
type Config struct {
	// Symbolizer is required.
	Symbolizer Symbolizer
	// SampleRate is the per-CPU sampling frequency in Hz; each sample
	// stands for 1/SampleRate seconds of CPU time. Required.
	SampleRate float64
	// Service names the service a process belongs to; each service gets
	// its own profile. Called once per sample, so it should be cheap.
	Service func(pid uint32) string
	// SpanName names a span. It is called at Flush, when spans that were
	// sampled have usually ended and been named; "" leaves the span_name
	// label off.
	SpanName func(trace spans.TraceID, span spans.SpanID) string
	// MaxStacks bounds the distinct (stack, span, thread, pid) counted per
	// interval across services; samples that would add more are dropped
	// and counted in Dropped. Default DefaultMaxStacks.
	MaxStacks int
	// Now is the clock for the profiles' start times; default time.Now.
	Now func() time.Time
}

// Aggregator counts symbolised samples per service for one interval at a
// time. It is safe for concurrent use.
type Aggregator struct {
	cfg    Config
	period int64

	mu       sync.Mutex
	start    time.Time
	builders map[string]*builder
	stacks   int
	dropped  uint64
}

// NewAggregator returns an Aggregator whose first interval starts now.
func NewAggregator(cfg Config) (*Aggregator, error) {
	if cfg.Symbolizer == nil {
		return nil, errors.New("profiler: no symbolizer")
	}
	if cfg.SampleRate <= 0 {
		return nil, errors.New("profiler: sample rate must be positive")
	}
	if cfg.MaxStacks <= 0 {
		cfg.MaxStacks = DefaultMaxStacks
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Aggregator{
		cfg:      cfg,
		period:   int64(float64(time.Second) / cfg.SampleRate),
		start:    cfg.Now(),
		builders: map[string]*builder{},
	}, nil
}

// Add symbolises a sample and counts it. Symbolising happens now, while
// the process and its files are most likely still there.
func (a *Aggregator) Add(s *RawSample) {
	a.AddFrames(s, a.cfg.Symbolizer.Symbolize(s.PID, s.UserStack, s.KernelStack))
}

// AddFrames counts a sample whose stacks the caller symbolised already,
// leaf first as Symbolizer returns them: a caller that looks at the frames
// first, to wait for a JIT's symbols for instance, need not symbolise
// twice.
func (a *Aggregator) AddFrames(s *RawSample, frames []symbolize.Frame) {
	service := ""
	if a.cfg.Service != nil {
		service = a.cfg.Service(s.PID)
	}
	if service == "" {
		service = DefaultService
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.builders[service]
	if !ok {
		b = newBuilder()
		a.builders[service] = b
	}
	grew, ok := b.add(frames, s, a.stacks < a.cfg.MaxStacks)
	switch {
	case !ok:
		a.dropped++
	case grew:
		a.stacks++
	}
}

// Flush ends the interval and returns its profiles by service; a service
// without samples has none. The next interval starts now.
func (a *Aggregator) Flush() map[string]*profile.Profile {
	a.mu.Lock()
	builders, start, now := a.builders, a.start, a.cfg.Now()
	a.builders, a.start, a.stacks = map[string]*builder{}, now, 0
	a.mu.Unlock()

	iv := interval{start: start.UnixNano(), duration: now.Sub(start).Nanoseconds(), period: a.period}
	out := make(map[string]*profile.Profile, len(builders))
	for service, b := range builders {
		out[service] = b.profile(iv, a.cfg.SpanName)
	}
	return out
}

// Dropped is the number of samples dropped so far for want of room.
func (a *Aggregator) Dropped() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dropped
}
