package agent

import (
	"runtime"
	"testing"
)

func TestLimitProcsOnlyLowers(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	runtime.GOMAXPROCS(4)
	for _, c := range []struct{ max, want int }{{0, 4}, {1, 1}, {3, 3}, {4, 4}, {8, 4}} {
		got, restore := limitProcs(c.max)
		if got != c.want || runtime.GOMAXPROCS(0) != c.want {
			t.Errorf("max %d: got %d, GOMAXPROCS %d; want %d", c.max, got, runtime.GOMAXPROCS(0), c.want)
		}
		restore()
		if n := runtime.GOMAXPROCS(0); n != 4 {
			t.Fatalf("max %d: restored to %d, want 4", c.max, n)
		}
	}
}
