package sampling

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// weft must agree with an in-process OpenTelemetry SDK configured with the
// same ratio on every trace id, or a chain of weft and SDK services would
// keep different traces.
func TestRatioAgreesWithSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range []float64{0, 0.001, 0.1, 0.25, 0.5, 0.999, 1} {
		s, err := Parse("traceidratio", strconv.FormatFloat(f, 'g', -1, 64))
		if err != nil {
			t.Fatal(err)
		}
		sdk := sdktrace.TraceIDRatioBased(f)
		for range 20000 {
			var id [16]byte
			for i := range id {
				id[i] = byte(r.Uint32())
			}
			want := sdk.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: trace.TraceID(id)}).Decision == sdktrace.RecordAndSample
			if got := s.RootSampled(id); got != want {
				t.Fatalf("ratio %g, trace %x: weft %v, SDK %v", f, id, got, want)
			}
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, arg string
		root      Root
		parent    bool
		err       bool
	}{
		{"", "", Always, true, false},
		{"always_on", "", Always, false, false},
		{"always_off", "", Never, false, false},
		{"traceidratio", "", Always, false, false},
		{"traceidratio", "0.25", Ratio, false, false},
		{"traceidratio", "0", Never, false, false},
		{"parentbased_always_on", "", Always, true, false},
		{"parentbased_always_off", "", Never, true, false},
		{"parentbased_traceidratio", "0.2", Ratio, true, false},
		{"traceidratio", "1.5", 0, false, true},
		{"traceidratio", "-0.1", 0, false, true},
		{"traceidratio", "half", 0, false, true},
		{"always_on", "0.5", Always, false, false},
		{"jaeger_remote", "", 0, false, true},
		{"parentbased_", "", 0, false, true},
	} {
		s, err := Parse(tc.name, tc.arg)
		if tc.err {
			if err == nil {
				t.Errorf("Parse(%q, %q) = %+v, want an error", tc.name, tc.arg, s)
			}
			continue
		}
		if err != nil || s.Root != tc.root || s.ParentBased != tc.parent {
			t.Errorf("Parse(%q, %q) = %+v, %v; want root %d, parent-based %v", tc.name, tc.arg, s, err, tc.root, tc.parent)
		}
	}
}

func TestContinued(t *testing.T) {
	var id [16]byte // the lowest ids are inside every ratio above 0
	for _, tc := range []struct {
		name, arg string
		in, want  byte
	}{
		{"parentbased_always_on", "", 0x00, 0x00},
		{"parentbased_always_on", "", 0x01, 0x01},
		{"parentbased_always_off", "", 0x01, 0x01},
		{"parentbased_traceidratio", "0.1", 0x00, 0x00},
		{"always_on", "", 0x00, 0x01},
		{"always_on", "", 0x02, 0x03}, // other flags pass through
		{"always_off", "", 0x03, 0x02},
		{"traceidratio", "0.1", 0x00, 0x01},
	} {
		s, err := Parse(tc.name, tc.arg)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Continued(id, tc.in); got != tc.want {
			t.Errorf("%s: Continued(flags %02x) = %02x, want %02x", tc.name, tc.in, got, tc.want)
		}
	}
}
