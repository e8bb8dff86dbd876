package config

import (
	"flag"
	"fmt"

	"github.com/weftdev/weft/pkg/sampling"
)

// Sampler is the trace sampler, by OpenTelemetry's names
// (OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG). The kernel applies it
// where a trace begins or enters a traced process.
type Sampler struct {
	// Name: always_on, always_off, traceidratio, parentbased_always_on
	// (the default), parentbased_always_off or parentbased_traceidratio.
	Name string `yaml:"name"`
	// Arg is the ratio (0..1) of the traceidratio samplers; default 1.
	Arg string `yaml:"arg"`
}

// Parsed returns the sampler the names stand for; Validate has checked
// them.
func (s Sampler) Parsed() sampling.Sampler {
	p, _ := sampling.Parse(s.Name, s.Arg)
	return p
}

func (s Sampler) validate() error {
	if _, err := sampling.Parse(s.Name, s.Arg); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	return nil
}

func applySamplerEnv(s *Sampler, set func(string, func(string) error)) {
	set("OTEL_TRACES_SAMPLER", func(v string) error { s.Name = v; return nil })
	set("OTEL_TRACES_SAMPLER_ARG", func(v string) error { s.Arg = v; return nil })
}

// samplerFlags are --traces-sampler and --traces-sampler-arg.
type samplerFlags struct{ name, arg string }

func (f *samplerFlags) register(fs *flag.FlagSet, d Sampler) {
	fs.StringVar(&f.name, "traces-sampler", d.Name, "trace sampler: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio")
	fs.StringVar(&f.arg, "traces-sampler-arg", "", "ratio (0..1) for the traceidratio samplers")
}

// apply copies the flag called name, if it is one of these, into s.
func (f *samplerFlags) apply(s *Sampler, name string) {
	switch name {
	case "traces-sampler":
		s.Name = f.name
	case "traces-sampler-arg":
		s.Arg = f.arg
	}
}
