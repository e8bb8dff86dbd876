package profiler

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// functionNames lists the distinct function names a profile's samples use.
func functionNames(p *profile.Profile) map[string]bool {
	out := map[string]bool{}
	for _, s := range p.Sample {
		for _, n := range stackNames(s) {
			out[n] = true
		}
	}
	return out
}

func total(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	return n
}

func TestFilter(t *testing.T) {
	p := testProfiles(t)["checkout"]
	cases := []struct {
		sel   Selector
		count int64
		has   string
		not   string
	}{
		{BySpan(spanA.String()), 3, "main.compute", "main.handleB"},
		{BySpan(strings.ToUpper(spanB.String())), 2, "vfs_read", "main.compute"},
		{BySpan(NoSpan), 1, "runtime.gcBgMarkWorker", "main.main"},
		{ByTrace(traceOne.String()), 5, "main.handleB", "runtime.gcBgMarkWorker"},
		{BySpanName("GET /a"), 3, "main.handleA", "vfs_read"},
		{Selector{TraceID: traceOne.String(), SpanName: "GET /b"}, 2, "encoding/json.Marshal", "main.compute"},
		{BySpan("0000000000000001"), 0, "", "main.main"},
		{Selector{}, 6, "main.main", ""},
	}
	for _, c := range cases {
		got := Filter(p, c.sel)
		if err := got.CheckValid(); err != nil {
			t.Fatalf("%s: %v", c.sel, err)
		}
		names := functionNames(got)
		if total(got) != c.count || (c.has != "" && !names[c.has]) || names[c.not] {
			t.Errorf("%s: %d samples, functions %v", c.sel, total(got), names)
		}
		// Unused functions are gone, not just unreferenced.
		for _, fn := range got.Function {
			if !names[fn.Name] {
				t.Errorf("%s: kept unused function %s", c.sel, fn.Name)
			}
		}
	}
	if total(p) != 6 {
		t.Errorf("Filter changed its input: %d samples", total(p))
	}
}

func TestAggregateSpans(t *testing.T) {
	p := testProfiles(t)["checkout"]
	// Two spans of one name: the same stack under a second span id.
	dup := p.Copy()
	first := dup.Sample[0]
	dup.Sample = append(dup.Sample, &profile.Sample{
		Location: first.Location,
		Value:    first.Value,
		Label: map[string][]string{
			LabelTraceID:  first.Label[LabelTraceID],
			LabelSpanID:   {"1111111111111111"},
			LabelSpanName: first.Label[LabelSpanName],
			LabelThread:   first.Label[LabelThread],
		},
		NumLabel: first.NumLabel,
	})

	agg := AggregateSpans(Filter(dup, BySpanName("GET /a")))
	if len(agg.Sample) != 1 || agg.Sample[0].Value[0] != 6 {
		t.Fatalf("got %d samples: %v", len(agg.Sample), agg.Sample)
	}
	if l := agg.Sample[0].Label; l[LabelSpanID] != nil || l[LabelTraceID] != nil || l[LabelSpanName][0] != "GET /a" {
		t.Errorf("labels %v", l)
	}
}

func TestSelectorString(t *testing.T) {
	if s := (Selector{TraceID: "ab", SpanName: "GET /"}).String(); s != `trace ab, span name "GET /"` {
		t.Errorf("got %s", s)
	}
	if s := (Selector{}).String(); s != "all samples" {
		t.Errorf("got %s", s)
	}
}
