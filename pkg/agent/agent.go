// Package agent wires weft together: kernel events in, spans out.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/weftdev/weft/pkg/config"
	"github.com/weftdev/weft/pkg/correlate"
	"github.com/weftdev/weft/pkg/export"
	"github.com/weftdev/weft/pkg/export/otlptls"
	"github.com/weftdev/weft/pkg/javaagent"
	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/metrics"
	"github.com/weftdev/weft/pkg/procinfo"
	"github.com/weftdev/weft/pkg/selector"
	"github.com/weftdev/weft/pkg/tracer"
)

// ioctlPackets resolves the ioctl_packets setting: auto reads OBI's
// packets where that costs the rest of the host nothing more (kprobes, or
// syscall tracepoints attached anyway), not on the socket-only path.
func ioctlPackets(setting string, path kernel.Path) bool {
	switch setting {
	case "on":
		return true
	case "off":
		return false
	}
	return path != kernel.PathTracepoint
}

// tick is how often the event loop does housekeeping between events.
const tick = time.Second

// Run traces until ctx is cancelled, then flushes what it can and returns.
func Run(ctx context.Context, cfg config.Config, version string) error {
	log := slog.With("component", "agent")
	procs, restoreProcs := limitProcs(cfg.MaxProcs)
	defer restoreProcs()
	features := kernel.Probe()
	path, err := features.ChoosePath(cfg.Probes)
	if err != nil {
		return fmt.Errorf("choose attach path: %w", err)
	}
	// Named here, rather than as a verifier's dump at load.
	if err := kernel.CheckBPFFloor(); err != nil {
		return fmt.Errorf("kernel %s: %w", features.Release, err)
	}
	self := os.Getpid()
	cgroupRoot, _ := kernel.FindMount("cgroup2") // needed only to select cgroups: New says so
	sel, err := selector.New(cfg.Select, selector.System{Proc: "/proc", CgroupRoot: cgroupRoot, Self: self}, nil)
	if err != nil {
		return fmt.Errorf("select processes: %w", err)
	}
	var cgroups []tracer.Cgroup
	for _, cg := range sel.Cgroups() {
		cgroups = append(cgroups, tracer.Cgroup{ID: cg.ID, Level: cg.Level})
	}
	// The exporter first: a bad certificate file stops weft before any
	// program is loaded.
	resolver, err := procinfo.NewResolver(procinfo.Config{Version: version, Metadata: kubeMetadata(ctx, cfg.Kubernetes)})
	if err != nil {
		return fmt.Errorf("process resolver: %w", err)
	}
	exp, err := newExporter(ctx, cfg, resolver, version)
	if err != nil {
		return err
	}
	sampler := cfg.Sampler.Parsed()
	tr, err := tracer.Open(tracer.Options{
		Path:            path,
		CaptureBytes:    cfg.CaptureBytes,
		SocketTableSize: uint32(cfg.SocketTableSize),
		SelfPID:         uint32(self),
		TraceAll:        cfg.Select.All(),
		NotifyExec:      sel.NeedsExecEvents(),
		Cgroups:         cgroups,
		Propagation:     cfg.Propagation == "headers",
		RuntimeHooks:    cfg.RuntimeHooks == "on",
		TLS:             cfg.TLS == "on",
		IoctlPackets:    ioctlPackets(cfg.IoctlPackets, path),
		PinTracesCtx:    cfg.Profile.Pin,
		// Samples, weft's or another profiler's, are labelled with the
		// span of the request a goroutine was started for.
		GoCreationAlways: cfg.Profile.On() || cfg.Profile.Pin != "",
		Sampler:          &sampler,
	})
	if err != nil {
		return errors.Join(err, exp.Shutdown(ctx))
	}
	defer tr.Close()
	sel.SetFilter(tr)
	sel.OnTraced(func(pid int) { resolver.Resolve(uint32(pid)) })
	if err := sel.Sync(); err != nil {
		return errors.Join(fmt.Errorf("select processes: %w", err), exp.Shutdown(ctx))
	}

	var prof *profiling
	if cfg.Profile.On() {
		// Spans go through the profiler on their way out, to learn
		// whether they got samples.
		if prof, exp, err = startProfiling(cfg, version, tr, resolver, exp); err != nil {
			return err
		}
		defer prof.Close()
	}
	var reg metrics.Registry
	sm, err := startSpanMetrics(ctx, cfg, resolver, &reg, version)
	if err != nil {
		return errors.Join(err, exp.Shutdown(ctx))
	}
	router, _ := correlate.NewRouter(cfg.Routes) // Validate checked the patterns
	clock := correlate.NewClock()
	corr := correlate.New(correlate.Options{
		RequestTimeout: cfg.RequestTimeout,
		KeepQuery:      cfg.KeepQuery,
		Clock:          clock,
		Sampler:        &sampler,
		Router:         router,
		Observe:        sm.observe(),
		NetNS:          tr.NetNS,
		H2Fresh: func(pid uint32, goroutine uint64, fresh bool) {
			if err := tr.MarkH2Fresh(pid, goroutine, fresh); err != nil {
				slog.Debug("HTTP/2 streams without traceparent keep no new trace for their handler", "component", "agent", "error", err)
			}
		},
		NotHTTP: func(id uint64, local, remote uint16) {
			if err := tr.SkipNotHTTP(id, local, remote); err != nil {
				slog.Debug("kernel keeps copying a connection that is not HTTP", "component", "agent", "error", err)
			}
		},
	}, exp.Export)

	loop := &loop{tr: tr, corr: corr, sel: sel, resolver: resolver, clock: clock, seen: map[uint32]bool{}}
	var attachers []*attacher
	if cfg.JavaAgent == "attach" {
		ja, cleanup, err := newJavaAttacher(ctx, javaagent.Jar(), cfg.JavaAgentArgs)
		if err != nil {
			return err
		}
		defer cleanup()
		attachers = append(attachers, ja)
	}
	if cfg.NodeAgent == "attach" {
		attachers = append(attachers, newNodeAttacher(ctx))
	}
	if len(attachers) > 0 {
		offer := func(pid int) {
			for _, a := range attachers {
				a.Offer(pid)
			}
		}
		for _, pid := range sel.Traced() {
			offer(pid)
		}
		loop.onNewPID = func(pid uint32) { offer(int(pid)) }
	}
	if prof != nil {
		loop.onGone = prof.processGone
		reg.Add(prof.snapshot)
	}
	reg.Add(loop.snapshot)
	reg.Add(corr.Stats().Snapshot)
	reg.Add(func() map[string]uint64 { return exporterSnapshot(exp.Stats()) })
	reg.Add(func() map[string]uint64 { return map[string]uint64{"processes_traced": uint64(len(sel.Traced()))} })
	reg.Handle(ProcessesPath, processesHandler(sel, resolver))
	if cfg.MetricsAddr != "" {
		srv, addr, err := reg.Serve(cfg.MetricsAddr)
		if err != nil {
			return err
		}
		defer srv.Close()
		log.Info("serving self-metrics", "addr", addr.String())
	}

	done := make(chan error, 1)
	go func() { done <- loop.run(ctx, sel.NeedsRescan()) }()
	log.Info("weft running", "path", path, "select_all", cfg.Select.All(), "sampler", sampler.String(), "gomaxprocs", procs)

	var statsC <-chan time.Time
	if cfg.StatsInterval > 0 {
		t := time.NewTicker(cfg.StatsInterval)
		defer t.Stop()
		statsC = t.C
	}
	var runErr error
wait:
	for {
		select {
		case <-statsC:
			reg.Log(log)
		case <-ctx.Done():
			break wait
		case runErr = <-done:
			break wait
		}
	}
	// Closing the tracer unblocks the loop; then flush the exporter.
	tr.Close()
	if runErr == nil {
		runErr = <-done
	}
	if prof != nil {
		if err := prof.Close(); err != nil {
			log.Warn("profiler shutdown", "err", err)
		}
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sm.shutdown(flushCtx)
	if err := exp.Shutdown(flushCtx); err != nil {
		log.Warn("exporter shutdown", "err", err)
	}
	reg.Log(log)
	if errors.Is(runErr, os.ErrClosed) {
		return nil
	}
	return runErr
}

func newExporter(ctx context.Context, cfg config.Config, r *procinfo.Resolver, version string) (export.Exporter, error) {
	if !cfg.OTLP.Enabled() {
		return export.NewConsole(os.Stdout, r), nil
	}
	t, err := cfg.OTLP.Target()
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	exp, err := export.NewOTLP(ctx, export.OTLPConfig{
		Protocol:     t.Protocol,
		Endpoint:     t.Endpoint,
		Headers:      cfg.OTLP.Headers,
		Insecure:     cfg.OTLP.Insecure,
		Timeout:      cfg.OTLP.Timeout,
		Compression:  cfg.OTLP.Compression,
		TLS:          otlpTLS(cfg.OTLP),
		BatchTimeout: cfg.OTLP.BatchDelay,
		Version:      version,
	}, r)
	if err != nil {
		return nil, err // "create otlp exporter: ..." says what failed
	}
	slog.Info("exporting spans over OTLP", "component", "export", "protocol", t.Protocol, "why", t.Why,
		"endpoint", t.Endpoint, "compression", cfg.OTLP.Compression)
	return exp, nil
}

// otlpTLS names the certificate files of the OTLP settings.
func otlpTLS(o config.OTLP) otlptls.Files {
	return otlptls.Files{Certificate: o.Certificate, ClientCertificate: o.ClientCertificate, ClientKey: o.ClientKey}
}

func exporterSnapshot(s export.Stats) map[string]uint64 {
	return map[string]uint64{
		"spans_received": s.Received,
		"spans_exported": s.Exported,
		"spans_dropped":  s.Dropped,
		"spans_failed":   s.Failed,
		"export_queue":   uint64(s.QueueLen),
	}
}
