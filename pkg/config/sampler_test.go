package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/sampling"
)

func TestSamplerPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.yaml")
	if err := os.WriteFile(path, []byte("sampler:\n  name: traceidratio\n  arg: 0.25\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string, args ...string) (Config, error) {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fl := RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return Load(path, func(k string) string { return env[k] }, fs, fl)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		name string
		root sampling.Root
		frac float64
	}{
		{nil, nil, "traceidratio", sampling.Ratio, 0.25}, // the file, its number read as the argument
		{map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.2"}, nil,
			"parentbased_traceidratio", sampling.Ratio, 0.2},
		{map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, []string{"--traces-sampler=always_on"}, "always_on", sampling.Always, 1},
		{map[string]string{"OTEL_TRACES_SAMPLER_ARG": "0.5"}, []string{"--traces-sampler-arg=0.1"}, "traceidratio", sampling.Ratio, 0.1},
	} {
		c, err := load(tc.env, tc.args...)
		if err != nil {
			t.Fatalf("env %v, flags %v: %v", tc.env, tc.args, err)
		}
		s := c.Sampler.Parsed()
		if s.Name != tc.name || s.Root != tc.root || s.Fraction != tc.frac {
			t.Errorf("env %v, flags %v: sampler %+v, want %s root %d ratio %g", tc.env, tc.args, s, tc.name, tc.root, tc.frac)
		}
	}
	if d := Default().Sampler.Parsed(); d.Name != "parentbased_always_on" || !d.ParentBased || d.Root != sampling.Always {
		t.Errorf("default sampler %+v, want parentbased_always_on", d)
	}
	for _, env := range []map[string]string{
		{"OTEL_TRACES_SAMPLER": "ratio"},
		{"OTEL_TRACES_SAMPLER_ARG": "25%"},
		{"OTEL_TRACES_SAMPLER_ARG": "2"},
	} {
		if _, err := load(env); err == nil || !strings.Contains(err.Error(), "sampler") {
			t.Errorf("env %v: error %v, want one naming the sampler", env, err)
		}
	}
}
