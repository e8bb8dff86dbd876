package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/weftdev/weft/pkg/jvmattach"
	"github.com/weftdev/weft/pkg/nodeagent"
	"github.com/weftdev/weft/pkg/tracer"
)

// attacher loads a runtime companion (weft's Java agent, its Node.js
// script) into the traced processes it is offered that run that runtime,
// once per process, on its own goroutine: an attach takes a while and the
// event loop must not wait for it.
type attacher struct {
	what   string // for the log: "java agent", "node companion"
	accept func(pid int) bool
	attach func(ctx context.Context, pid int) error
	queue  chan int
	log    *slog.Logger
}

// maxTried bounds the memory of processes already looked at; past it the
// set starts over (a process seen again is then only checked again).
const maxTried = 16384

// nodeAttachTimeout bounds one Node.js attach (the inspector opening).
const nodeAttachTimeout = 10 * time.Second

func startAttacher(ctx context.Context, component, what string, accept func(int) bool, attach func(context.Context, int) error) *attacher {
	a := &attacher{what: what, accept: accept, attach: attach, queue: make(chan int, 256), log: slog.With("component", component)}
	go a.run(ctx)
	return a
}

func newJavaAttacher(ctx context.Context, jar []byte, args string) (*attacher, func(), error) {
	if len(jar) == 0 {
		return nil, nil, errors.New("this weft binary carries no Java agent")
	}
	// World-readable: the JVM, often another user, opens the jar itself.
	dir, err := os.MkdirTemp("", "weft-java-")
	if err != nil {
		return nil, nil, fmt.Errorf("java agent: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, "weft-agent.jar")
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("java agent: %w", err)
	}
	if err := os.WriteFile(path, jar, 0o644); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("java agent: %w", err)
	}
	isHotSpot := func(pid int) bool { ok, err := jvmattach.IsHotSpot(pid); return err == nil && ok }
	attach := func(ctx context.Context, pid int) error { return jvmattach.Attach(ctx, pid, path, args) }
	return startAttacher(ctx, "java", "java agent", isHotSpot, attach), cleanup, nil
}

// newNodeAttacher loads weft's Node.js companion through each traced
// Node.js process's inspector.
func newNodeAttacher(ctx context.Context) *attacher {
	attach := func(ctx context.Context, pid int) error {
		ctx, cancel := context.WithTimeout(ctx, nodeAttachTimeout)
		defer cancel()
		return nodeagent.Attach(ctx, pid)
	}
	return startAttacher(ctx, "node", "node companion", tracer.IsNode, attach)
}

// Offer queues a process to look at; it never blocks.
func (a *attacher) Offer(pid int) {
	select {
	case a.queue <- pid:
	default:
	}
}

func (a *attacher) run(ctx context.Context) {
	tried := map[int]bool{}
	for {
		var pid int
		select {
		case <-ctx.Done():
			return
		case pid = <-a.queue:
		}
		if tried[pid] {
			continue
		}
		if len(tried) >= maxTried {
			clear(tried)
		}
		tried[pid] = true
		if !a.accept(pid) {
			continue
		}
		if err := a.attach(ctx, pid); err != nil {
			a.log.Warn(a.what+" not attached", "pid", pid, "err", err)
			continue
		}
		a.log.Info(a.what+" attached", "pid", pid)
	}
}
