package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/weftdev/weft/pkg/jvmattach"
)

// javaAttacher loads weft's Java agent into the traced JVMs it is offered,
// once per process, on its own goroutine: an attach takes a while and the
// event loop must not wait for it.
type javaAttacher struct {
	jarPath string
	args    string
	queue   chan int
	log     *slog.Logger
}

// maxTried bounds the memory of processes already looked at; past it the
// set starts over (a process seen again is then only checked again).
const maxTried = 16384

func newJavaAttacher(ctx context.Context, jar []byte, args string) (*javaAttacher, func(), error) {
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
	a := &javaAttacher{jarPath: path, args: args, queue: make(chan int, 256), log: slog.With("component", "java")}
	go a.run(ctx)
	return a, cleanup, nil
}

// Offer queues a process to look at; it never blocks.
func (a *javaAttacher) Offer(pid int) {
	select {
	case a.queue <- pid:
	default:
	}
}

func (a *javaAttacher) run(ctx context.Context) {
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
		if ok, err := jvmattach.IsHotSpot(pid); err != nil || !ok {
			continue
		}
		if err := jvmattach.Attach(ctx, pid, a.jarPath, a.args); err != nil {
			a.log.Warn("java agent not attached", "pid", pid, "err", err)
			continue
		}
		a.log.Info("java agent attached", "pid", pid)
	}
}
