// Package sampling is weft's trace sampler: the OpenTelemetry samplers
// named by OTEL_TRACES_SAMPLER, reduced to what the kernel decides when a
// trace begins or continues. The kernel programs apply the same rule
// (bpf/include/tracectx.h, sample_*); user space applies it only to the
// spans the kernel gave no ids.
package sampling

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Root is what a sampler decides for a trace that starts here, or for a
// continued one when the sampler is not parent-based.
type Root uint8

// The values are the kernel's sample_root constants.
const (
	Never  Root = 0
	Always Root = 1
	Ratio  Root = 2
)

// FlagSampled is the W3C trace-flags bit that says the trace is recorded.
const FlagSampled = 0x01

// Sampler is a parsed OTEL_TRACES_SAMPLER.
type Sampler struct {
	Name string
	Root Root
	// ParentBased samplers keep the sampled flag of an incoming
	// traceparent; the others decide again from the trace id.
	ParentBased bool
	// Bound is the traceidratio threshold: a trace is sampled when the
	// last 8 bytes of its id, big-endian, shifted right by one, are below
	// it. It is the OpenTelemetry SDKs' rule, so weft and an in-process
	// SDK with the same ratio agree on every trace id.
	Bound uint64
	// Fraction is the ratio Bound was made from, for logs and docs.
	Fraction float64
}

// Default is the OpenTelemetry default, parentbased_always_on.
func Default() Sampler {
	s, _ := Parse("parentbased_always_on", "")
	return s
}

// Parse reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG. An empty
// name is the default; the argument is a ratio in [0, 1] for the
// traceidratio samplers (default 1), ignored by the others.
func Parse(name, arg string) (Sampler, error) {
	if name == "" {
		name = "parentbased_always_on"
	}
	s := Sampler{Name: name}
	base, parent := strings.CutPrefix(name, "parentbased_")
	s.ParentBased = parent
	switch base {
	case "always_on":
		s.Root, s.Fraction = Always, 1
	case "always_off":
		s.Root, s.Fraction = Never, 0
	case "traceidratio":
		f := 1.0
		if arg != "" {
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(arg), 64); err != nil || f < 0 || f > 1 {
				return s, fmt.Errorf("sampler %s: argument %q: want a ratio from 0 to 1", name, arg)
			}
		}
		s.Root, s.Fraction = ratioRoot(f)
		s.Bound = uint64(f * (1 << 63))
		return s, nil
	default:
		return s, fmt.Errorf("sampler %q: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", name)
	}
	return s, nil // the specification has other samplers ignore an argument
}

// ratioRoot keeps the ends of the range exact: 1 samples every trace id,
// including those at the top of the range the bound cannot reach.
func ratioRoot(f float64) (Root, float64) {
	switch f {
	case 0:
		return Never, f
	case 1:
		return Always, f
	}
	return Ratio, f
}

// RootSampled decides for a trace id as a root sampler does.
func (s Sampler) RootSampled(traceID [16]byte) bool {
	switch s.Root {
	case Always:
		return true
	case Ratio:
		return binary.BigEndian.Uint64(traceID[8:])>>1 < s.Bound
	}
	return false
}

// Flags returns the trace flags of a span that starts a trace with id
// traceID.
func (s Sampler) Flags(traceID [16]byte) byte {
	if s.RootSampled(traceID) {
		return FlagSampled
	}
	return 0
}

// Continued returns the trace flags of a span that continues a trace whose
// incoming flags are in: parent-based samplers keep its decision, the
// others decide from the trace id. Other flag bits pass unchanged.
func (s Sampler) Continued(traceID [16]byte, in byte) byte {
	if s.ParentBased {
		return in
	}
	return in&^FlagSampled | s.Flags(traceID)
}

func (s Sampler) String() string {
	if s.Root == Ratio || strings.HasSuffix(s.Name, "traceidratio") {
		return fmt.Sprintf("%s(%g)", s.Name, s.Fraction)
	}
	return s.Name
}
