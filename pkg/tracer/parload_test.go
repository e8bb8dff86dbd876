package tracer

import (
	"slices"
	"testing"

	"github.com/weftdev/weft/pkg/kernel"
)

// Every program goes to exactly one group, and no group is empty; the
// groups' sizes differ by at most the largest program (greedy, largest
// first), so no CPU verifies much more than another.
func TestProgramGroups(t *testing.T) {
	spec, err := Spec(kernel.PathTracepoint)
	if err != nil {
		t.Fatal(err)
	}
	size := func(name string) int { return len(spec.Programs[name].Instructions) }
	largest := 0
	for name := range spec.Programs {
		largest = max(largest, size(name))
	}
	for _, n := range []int{1, 2, 3, 64} {
		groups := programGroups(spec, n)
		if want := min(n, len(spec.Programs)); len(groups) != want {
			t.Fatalf("n=%d: %d groups, want %d", n, len(groups), want)
		}
		var seen []string
		var totals []int
		for _, g := range groups {
			if len(g) == 0 {
				t.Fatalf("n=%d: an empty group", n)
			}
			total := 0
			for _, name := range g {
				if slices.Contains(seen, name) {
					t.Fatalf("n=%d: %s in two groups", n, name)
				}
				seen = append(seen, name)
				total += size(name)
			}
			totals = append(totals, total)
		}
		if len(seen) != len(spec.Programs) {
			t.Fatalf("n=%d: %d programs grouped, want %d", n, len(seen), len(spec.Programs))
		}
		if d := slices.Max(totals) - slices.Min(totals); d > largest {
			t.Fatalf("n=%d: group sizes %v differ by %d, more than the largest program (%d)", n, totals, d, largest)
		}
	}
}
