package agent

import "runtime"

// limitProcs lowers GOMAXPROCS to max (0 leaves it) for as long as weft
// runs and returns the value in force and a function that restores the
// previous one. On one P weft's goroutines (the drain, the exporter, the
// gRPC transport) hand work to each other on the thread that runs them
// instead of waking another thread each time: at 3000 spans/s that was
// ~8 % of weft's CPU, and at saturation the traced server gained ~5 %
// throughput (docs/benchmarks.md).
func limitProcs(max int) (int, func()) {
	prev := runtime.GOMAXPROCS(0)
	if max <= 0 || max >= prev {
		return prev, func() {}
	}
	runtime.GOMAXPROCS(max)
	return max, func() { runtime.GOMAXPROCS(prev) }
}
