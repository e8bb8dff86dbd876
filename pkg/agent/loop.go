package agent

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"time"

	"github.com/weftdev/weft/pkg/correlate"
	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/procinfo"
	"github.com/weftdev/weft/pkg/selector"
	"github.com/weftdev/weft/pkg/tracer"
)

// loop is the single goroutine that owns the correlator: events and
// housekeeping alternate on it, so nothing needs a lock.
type loop struct {
	tr       *tracer.Tracer
	corr     *correlate.Correlator
	sel      *selector.Selector
	resolver *procinfo.Resolver
	clock    *correlate.Clock
	// seen holds the pids whose identity was read while they ran: a
	// short-lived client is often gone by the time its span is exported.
	seen map[uint32]bool
	// onNewPID, when set, is told of each process first seen on the network.
	onNewPID func(pid uint32)
	// onGone, when set, is told of each process that exited or exec'd.
	onGone     func(pid uint32)
	eventsRead atomic.Uint64
	// kstats are the kernel counters last read, for a snapshot taken
	// after the tracer closed (the final log line).
	kstats atomic.Pointer[tracer.Stats]
}

// drainEvery is how often the ring buffer is drained: the kernel side
// does not wake the reader per event (see WAKEUP_BYTES in bpf/), so this
// bounds how late an event is read when the buffer is not filling up.
// Each drain costs weft ~0.2 ms of CPU on a small VM (parking and
// unparking the Go scheduler's threads), so 5 per second; spans wait for
// their batch (1 s) anyway, and an exec, which selection may act on,
// wakes the reader at once.
const drainEvery = 200 * time.Millisecond

// clockEvery is how many events a drain handles between two reads of the
// clock: at most a few milliseconds of work.
const clockEvery = 256

func (l *loop) run(ctx context.Context, rescan bool) error {
	defer l.corr.Flush() // finished spans still waiting go out with the exporter's last batch
	var ev event.Event
	now := time.Now()
	next := now.Add(tick)
	lastRescan := now
	clockIn := 0 // events until the clock is read again
	for {
		// The clock is read after each wait and every clockEvery events
		// of a drain, not per event (2 % of weft's CPU samples at 3000
		// spans/s); the deadline set then bounds the next wait.
		// Housekeeping once per tick, not at every drain of an idle
		// buffer.
		if clockIn == 0 {
			now = time.Now()
			l.tr.SetDeadline(now.Add(drainEvery))
			clockIn = clockEvery
		}
		err := l.tr.Read(&ev)
		switch {
		case err == nil:
			clockIn--
			l.eventsRead.Add(1)
			l.handle(&ev)
		case errors.Is(err, os.ErrDeadlineExceeded):
			clockIn = 0
			if ctx.Err() != nil {
				return nil
			}
		default:
			return err
		}
		if now.Before(next) {
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		next = now.Add(tick)
		l.clock.Refresh()
		l.noteLost()
		l.corr.Expire(correlate.Monotonic())
		if rescan && time.Since(lastRescan) >= 2*time.Second {
			_ = l.sel.Sync()
			lastRescan = time.Now()
		}
	}
}

func (l *loop) handle(ev *event.Event) {
	switch ev.Kind {
	case event.KindData:
		if !l.seen[ev.PID] {
			l.seen[ev.PID] = true
			l.sel.Seen(int(ev.PID))
			l.tr.EnsureClassified(ev.PID)
			l.resolver.Resolve(ev.PID)
			if l.onNewPID != nil {
				l.onNewPID(ev.PID)
			}
		}
	case event.KindExec:
		delete(l.seen, ev.PID)
		if l.onGone != nil {
			l.onGone(ev.PID)
		}
		l.resolver.Invalidate(ev.PID)
		l.tr.ProcessExeced(ev.PID)
		l.sel.OnExec(int(ev.PID))
		return
	case event.KindFork:
		l.tr.ProcessForked(ev.PID, ev.TID)
		return
	case event.KindAgent:
		l.tr.AgentLoaded(ev.PID)
		return
	case event.KindCallsOut:
		l.tr.ProcessCallsOut(ev.PID)
		return
	case event.KindExit:
		l.noteLost() // before the exit ends what its connections had pending
		delete(l.seen, ev.PID)
		l.tr.ProcessGone(ev.PID)
		if l.onGone != nil {
			l.onGone(ev.PID)
		}
		l.sel.OnExit(int(ev.PID))
	}
	l.corr.Handle(ev)
}

// noteLost tells the correlator when the kernel last dropped an event, so
// that it does not end as errors requests whose answers may be among the
// drops.
func (l *loop) noteLost() {
	if ts, err := l.tr.LastDrop(); err == nil {
		l.corr.DroppedAt(ts)
	}
}

func (l *loop) snapshot() map[string]uint64 {
	out := map[string]uint64{"events_read": l.eventsRead.Load()}
	// Read when asked: a per-CPU map read per counter is too dear for
	// every tick of an idle loop.
	if s, err := l.tr.Stats(); err == nil {
		l.kstats.Store(&s)
	}
	if s := l.kstats.Load(); s != nil {
		out["kernel_events"] = s.Events
		out["events_lost"] = s.Lost()
		out["events_lost_ringbuf"] = s.LostRingbuf
		out["events_lost_inflight_full"] = s.LostStash
		out["events_lost_emit"] = s.LostEmit
		out["payload_unreadable"] = s.LostRead
		out["socket_table_full"] = s.SockTableFull
		out["agent_packets"] = s.AgentPackets
		out["agent_packets_ignored"] = s.BadPackets
		out["propagation_conns_joined"] = s.ConnsJoined
		out["propagation_conns_released"] = s.ConnsReleased
		out["propagation_conns_released_untraced"] = s.ConnsUntraced
		out["propagation_conns_skipped_blocking"] = s.ConnsBlocking
		out["parent_refused_ambiguous"] = s.ParentAmbiguous
		out["parent_refused_unknown_runtime"] = s.ParentUnknown
		out["parent_refused_ended"] = s.ParentStale
		out["traceparent_beyond_capture"] = s.TraceparentUnseen
		out["events_skipped_not_http"] = s.NotHTTPSkipped
		out["events_skipped_unreadable_call"] = s.CallUnreadable
		out["h2_conns_table_full"] = s.H2TableFull
		out["h2_conns_cut"] = s.H2Cut
		out["tls_calls_without_socket"] = s.TLSNoSocket
		out["tls_links_ambiguous"] = s.TLSLinkAmbiguous
		out["tls_bio_sockets_learned"] = s.TLSBIOLearned
	}
	return out
}
