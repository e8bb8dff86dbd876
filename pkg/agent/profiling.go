package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/config"
	"github.com/weftdev/weft/pkg/export"
	"github.com/weftdev/weft/pkg/procinfo"
	"github.com/weftdev/weft/pkg/profiler"
	"github.com/weftdev/weft/pkg/profiler/store"
	"github.com/weftdev/weft/pkg/profiler/symbolize"
	"github.com/weftdev/weft/pkg/sampling"
	"github.com/weftdev/weft/pkg/spans"
	"github.com/weftdev/weft/pkg/tracer"
)

const (
	// sampleReadSlice is how long one read of the sample ring waits. Each
	// read that comes back empty moves the watermark: should the sampler
	// not settle (samples keep coming), it bounds how long exported spans
	// are held.
	sampleReadSlice = 250 * time.Millisecond
	// sampleQueue is the samples read but not yet symbolised; beyond it
	// samples are dropped (and counted) rather than stall the reader.
	sampleQueue = 4096
	// forgetAfter leaves the samples of an exited process time to be read
	// before the symbolizer forgets it.
	forgetAfter = 2 * time.Second
	// pruneEvery spaces the deletion of expired profile files.
	pruneEvery = time.Minute
	// commitSlack covers the moment between a sample's place in the ring
	// and its timestamp, and a sample stamped just before a read began
	// but committed just after (the stack walks come between).
	commitSlack = uint64(time.Millisecond)
)

// profileSink receives every interval's profiles besides the files (the
// OTLP profiles export).
type profileSink interface {
	Export(ctx context.Context, profiles map[string]*profile.Profile) error
	Shutdown(ctx context.Context) error
}

// profiling runs the on-CPU profiler: one goroutine reads the sample
// ring, another symbolises and aggregates, and writes one pprof file per
// service every interval.
type profiling struct {
	cfg      config.Profile
	tr       *tracer.Tracer
	sampler  *tracer.Sampler
	links    *spanLinks
	linked   *linkedExporter
	syms     *perfMapRefresher
	agg      *profiler.Aggregator
	resolver *procinfo.Resolver
	sink     profileSink
	log      *slog.Logger

	samples chan *profiler.RawSample
	gone    chan uint32
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the reader and the aggregator
	jitDone chan struct{}
	once    sync.Once

	read, queueFull, inSpan   atomic.Uint64
	filesWritten, writeErrors atomic.Uint64
	sinkErrors                atomic.Uint64
}

// startProfiling starts sampling the traced processes and returns the
// profiler with the exporter spans must go through from now on (it adds
// pyroscope.profile.id).
func startProfiling(cfg config.Config, version string, tr *tracer.Tracer, resolver *procinfo.Resolver, exp export.Exporter) (*profiling, export.Exporter, error) {
	pc := cfg.Profile
	if err := os.MkdirAll(pc.Dir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("profile directory: %w", err)
	}
	sink, err := newProfileSink(cfg, resolver, version)
	if err != nil {
		return nil, nil, err
	}
	closeSink := func() {
		if sink != nil {
			sink.Shutdown(context.Background())
		}
	}
	links := newSpanLinks()
	// A process's perf map (and, on a miss, its mappings) is looked at
	// again up to 10 times a second: a JVM's fresh perf map counts at once.
	ksyms := symbolize.New(symbolize.Options{RefreshInterval: 100 * time.Millisecond})
	ksyms.LoadKernel()
	syms := newPerfMapRefresher(ksyms)
	p := &profiling{
		cfg:      pc,
		tr:       tr,
		links:    links,
		syms:     syms,
		resolver: resolver,
		sink:     sink,
		log:      slog.With("component", "profiler"),
		samples:  make(chan *profiler.RawSample, sampleQueue),
		gone:     make(chan uint32, 1024),
	}
	p.agg, err = profiler.NewAggregator(profiler.Config{
		Symbolizer: syms,
		SampleRate: float64(pc.Frequency),
		Service:    p.service,
		SpanName:   links.name,
	})
	if err != nil {
		closeSink()
		return nil, nil, fmt.Errorf("profiler: %w", err)
	}
	p.sampler, err = tr.StartSampling(tracer.SamplingOptions{Frequency: pc.Frequency})
	if err != nil {
		closeSink()
		return nil, nil, fmt.Errorf("start sampling: %w", err)
	}
	var runCtx context.Context
	runCtx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(2)
	go func() { defer p.wg.Done(); p.readLoop() }()
	go func() { defer p.wg.Done(); p.aggregateLoop(runCtx) }()
	p.jitDone = make(chan struct{})
	go func() { defer close(p.jitDone); syms.run(runCtx) }()
	p.linked = newLinkedExporter(exp, links, defaultMaxHold, p.sampler.Settled)
	p.log.Info("profiling", "hz", pc.Frequency, "dir", pc.Dir, "interval", pc.Interval, "otlp", pc.OTLPEndpoint)
	return p, p.linked, nil
}

func (p *profiling) service(pid uint32) string {
	_, name := p.resolver.Resolve(pid)
	return name
}

// processGone is told of processes that exited or exec'd; it never
// blocks the event loop.
func (p *profiling) processGone(pid uint32) {
	select {
	case p.gone <- pid:
	default:
	}
}

// readLoop moves samples from the ring to the aggregator and keeps the
// watermark. The ring hands samples over in the order they were reserved,
// which is the order of their timestamps but for the moment between the
// two (commitSlack): a sample stamped T means every sample stamped before
// T has been read. When samples stop coming, a read that comes back empty
// says the same of the time it began.
func (p *profiling) readLoop() {
	defer close(p.samples)
	// Once nothing is read any more, held spans need not wait.
	defer p.links.mark.advance(math.MaxUint64)
	var smp tracer.Sample
	for {
		begin := monoNow()
		p.sampler.SetDeadline(time.Now().Add(sampleReadSlice))
		err := p.sampler.ReadInto(&smp)
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			p.links.mark.advance(begin - min(begin, commitSlack))
			continue
		case errors.Is(err, os.ErrClosed):
			return
		default:
			p.log.Error("reading samples stopped", "err", err)
			return
		}
		p.read.Add(1)
		p.links.mark.advance(smp.Time - min(smp.Time, commitSlack))
		raw := &profiler.RawSample{
			PID: smp.PID, TID: smp.TID, CPU: smp.CPU, Time: smp.Time,
			UserStack:   append([]uint64(nil), smp.UserStack...),
			KernelStack: append([]uint64(nil), smp.KernelStack...),
			Thread:      smp.Comm,
		}
		// A span of an unsampled trace is never exported: its CPU stays
		// in the profile, linked to no span.
		if smp.TraceFlags&sampling.FlagSampled != 0 {
			raw.TraceID, raw.SpanID = spans.TraceID(smp.TraceID), spans.SpanID(smp.SpanID)
		}
		if raw.InSpan() {
			p.inSpan.Add(1)
			p.links.markSampled(raw.SpanID)
		}
		now := monoNow()
		p.sampler.Handled()
		if p.sampler.Settled() {
			// Nothing stamped before now is unread: held spans may go.
			p.links.mark.advance(now)
		}
		select {
		case p.samples <- raw:
		default:
			p.queueFull.Add(1)
		}
	}
}

// aggregateLoop symbolises and counts samples, writes the profiles every
// interval and once more when the samples end, and forgets processes that
// are gone.
func (p *profiling) aggregateLoop(ctx context.Context) {
	flush := time.NewTicker(p.cfg.Interval)
	defer flush.Stop()
	house := time.NewTicker(time.Second)
	defer house.Stop()
	jit := newJITWait(p.syms, p.agg)
	gone := map[uint32]time.Time{}
	lastPrune := time.Time{}
	for {
		select {
		case s, ok := <-p.samples:
			if !ok {
				jit.releaseAll()
				p.flush()
				return
			}
			jit.add(s, time.Now())
		case pid := <-p.syms.done:
			jit.release(pid)
		case <-flush.C:
			p.flush()
		case pid := <-p.gone:
			if _, ok := gone[pid]; !ok {
				gone[pid] = time.Now()
			}
		case now := <-house.C:
			jit.expire(now)
			for pid, at := range gone {
				if now.Sub(at) >= forgetAfter {
					jit.release(pid)
					p.syms.Forget(pid)
					delete(gone, pid)
				}
			}
			if p.cfg.Retention > 0 && now.Sub(lastPrune) >= pruneEvery {
				lastPrune = now
				if n, err := store.Prune(p.cfg.Dir, now.Add(-p.cfg.Retention)); err != nil {
					p.log.Warn("deleting old profiles", "err", err)
				} else if n > 0 {
					p.log.Debug("deleted old profiles", "files", n)
				}
			}
		case <-ctx.Done():
			// Close stops the sampler first; this is the way out if the
			// reader is stuck.
			jit.releaseAll()
			p.flush()
			return
		}
	}
}

// flush writes the interval's profiles, one file per service.
func (p *profiling) flush() {
	profiles := p.agg.Flush()
	if len(profiles) == 0 {
		return
	}
	end := time.Now()
	for service, prof := range profiles {
		path, err := store.Write(p.cfg.Dir, service, prof, end)
		if err != nil {
			p.writeErrors.Add(1)
			p.log.Warn("writing profile", "service", service, "err", err)
			continue
		}
		p.filesWritten.Add(1)
		p.log.Debug("wrote profile", "service", service, "path", path, "samples", len(prof.Sample))
	}
	if p.sink != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.sink.Export(ctx, profiles); err != nil {
			p.sinkErrors.Add(1)
			p.log.Warn("exporting profiles", "err", err)
		}
	}
}

// Close stops sampling, writes what was aggregated and waits for the
// goroutines. Spans still held by the linked exporter are released by its
// Shutdown, which should come after.
func (p *profiling) Close() error {
	var err error
	p.once.Do(func() {
		err = p.sampler.Close()
		done := make(chan struct{})
		go func() { p.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.cancel() // the aggregator flushes and leaves
			<-done
		}
		p.cancel()
		<-p.jitDone
		if p.sink != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = errors.Join(err, p.sink.Shutdown(ctx))
		}
		if err != nil {
			err = fmt.Errorf("stop profiling: %w", err)
		}
	})
	return err
}

// snapshot reports the profiler's counters for the self-metrics.
func (p *profiling) snapshot() map[string]uint64 {
	out := map[string]uint64{
		"profile_samples_read":    p.read.Load(),
		"profile_samples_in_span": p.inSpan.Load(),
		// Dropped in user space: the symbolising side fell behind, or an
		// interval held too many distinct stacks.
		"profile_samples_dropped": p.queueFull.Load() + p.agg.Dropped(),
		"profile_files_written":   p.filesWritten.Load(),
		"profile_write_errors":    p.writeErrors.Load(),
		"profile_export_errors":   p.sinkErrors.Load(),
	}
	for k, v := range p.linked.snapshot() {
		out[k] = v
	}
	if s, err := p.tr.Stats(); err == nil {
		out["profile_samples"] = s.Samples
		out["profile_samples_lost"] = s.LostSamples
	}
	return out
}
