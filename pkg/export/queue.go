package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// sender delivers one batch. accepted is how many spans the backend took;
// the rest of the batch counts as failed.
type sender interface {
	send(ctx context.Context, batch []queued) (accepted int, err error)
	shutdown(ctx context.Context) error
}

type queueConfig struct {
	size         int
	maxBatch     int
	batchTimeout time.Duration
}

// dropLogInterval limits how often a full queue is logged.
const dropLogInterval = 10 * time.Second

// queue batches spans for the sender. It is weft's own, not the SDK's
// BatchSpanProcessor, because that one drops silently, while weft must
// count every span it loses. Enqueueing never blocks: a full queue
// drops. Nor does it wake the worker, but for a full batch: a wake-up per
// span would cost more than the span at low rates.
type queue struct {
	cfg   queueConfig
	out   sender
	stats *counters
	log   *slog.Logger

	// mu guards pending, and orders enqueue against shutdown so that no
	// span is added after the final drain and left uncounted.
	mu      sync.Mutex
	closed  bool
	pending []queued // at most cfg.size

	full chan struct{} // a batch is pending (capacity 1)
	stop chan struct{}
	done chan struct{}
	// runCtx is cancelled when the shutdown deadline passes, aborting the
	// export in flight.
	runCtx    context.Context
	cancelRun context.CancelFunc

	// Owned by the worker goroutine.
	lastDropLog time.Time
	dropsLogged uint64
	failing     bool
}

func newQueue(cfg queueConfig, out sender, stats *counters, log *slog.Logger) *queue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &queue{
		cfg:       cfg,
		out:       out,
		stats:     stats,
		log:       log,
		full:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		runCtx:    ctx,
		cancelRun: cancel,
	}
	go q.run()
	return q
}

func (q *queue) enqueue(s queued) {
	q.mu.Lock()
	if q.closed || len(q.pending) >= q.cfg.size {
		q.mu.Unlock()
		q.stats.dropped.Add(1)
		return
	}
	q.pending = append(q.pending, s)
	q.stats.queued.Add(1)
	ready := len(q.pending) >= q.cfg.maxBatch
	q.mu.Unlock()
	if ready {
		select {
		case q.full <- struct{}{}:
		default: // signalled already
		}
	}
}

// take moves up to a batch of the oldest pending spans into buf, so that
// the spans held, waiting or being sent, stay within size + maxBatch.
func (q *queue) take(buf []queued) []queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.pending), q.cfg.maxBatch)
	buf = append(buf[:0], q.pending[:n]...)
	rest := copy(q.pending, q.pending[n:])
	clear(q.pending[rest:])
	q.pending = q.pending[:rest]
	return buf
}

// shutdown exports what is queued within ctx, counts the rest as dropped and
// shuts the sender down. Later calls return nil.
func (q *queue) shutdown(ctx context.Context) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.mu.Unlock()

	close(q.stop)
	var errs []error
	select {
	case <-q.done:
	case <-ctx.Done():
		q.cancelRun()
		<-q.done
		errs = append(errs, fmt.Errorf("flush spans: %w", ctx.Err()))
	}
	q.cancelRun()

	if err := q.out.shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("shut down span sender: %w", err))
	}
	return errors.Join(errs...)
}

func (q *queue) run() {
	defer close(q.done)
	ticker := time.NewTicker(q.cfg.batchTimeout)
	defer ticker.Stop()
	batch := make([]queued, 0, q.cfg.maxBatch)
	for {
		select {
		case <-q.stop:
			q.exportPending(batch)
			q.logDrops()
			return
		case <-q.full:
		case <-ticker.C:
			q.logDrops()
		}
		q.exportPending(batch)
	}
}

// exportPending exports the pending spans, a batch at a time. Once the
// shutdown deadline has passed the rest is counted as dropped: it was never
// attempted.
func (q *queue) exportPending(batch []queued) {
	for {
		batch = q.take(batch)
		if len(batch) == 0 {
			return
		}
		if q.runCtx.Err() != nil {
			q.stats.queued.Add(-int64(len(batch)))
			q.stats.dropped.Add(uint64(len(batch)))
		} else {
			q.export(batch)
		}
		clear(batch) // drop references so exported spans can be collected
	}
}

func (q *queue) export(batch []queued) {
	n := len(batch)
	accepted, err := q.out.send(q.runCtx, batch)
	accepted = max(0, min(accepted, n))
	// Logged before the counters move, so whoever sees the batch counted
	// also finds its log line.
	switch {
	case err != nil:
		q.failing = true
		q.log.Warn("span export failed", "spans", n, "failed", n-accepted, "error", err)
	case q.failing:
		q.failing = false
		q.log.Info("span export recovered")
	}
	q.stats.exported.Add(uint64(accepted))
	q.stats.failed.Add(uint64(n - accepted))
	q.stats.queued.Add(-int64(n))
}

func (q *queue) logDrops() {
	dropped := q.stats.dropped.Load()
	if dropped == q.dropsLogged || time.Since(q.lastDropLog) < dropLogInterval {
		return
	}
	q.log.Warn("span queue full, spans dropped", "dropped", dropped-q.dropsLogged, "total_dropped", dropped, "queue_size", q.cfg.size)
	q.dropsLogged = dropped
	q.lastDropLog = time.Now()
}
