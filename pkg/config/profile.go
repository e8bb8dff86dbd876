package config

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// Profile configures the on-CPU profiler (docs/profiling.md).
type Profile struct {
	// Mode is "on" (sample the on-CPU stacks of traced processes, each
	// sample linked to the span it worked for) or "off".
	Mode string `yaml:"mode"`
	// Frequency is samples per second on each CPU: a prime, so sampling
	// does not run in lockstep with periodic work (19, or 99 for detail).
	Frequency int `yaml:"frequency"`
	// Dir receives one pprof file per service and interval:
	// <Dir>/<service>/<time>.pb.gz.
	Dir string `yaml:"dir"`
	// Interval is how often the files are written.
	Interval time.Duration `yaml:"interval"`
	// Retention deletes files older than this; 0 keeps them all.
	Retention time.Duration `yaml:"retention"`
	// Pin is a bpffs path at which traces_ctx_v1 (thread -> active span)
	// is pinned for other profilers; the OpenTelemetry eBPF profiler
	// reads <bpffs>/otel/traces_ctx_v1. Empty: not pinned. Independent
	// of Mode: another profiler may want weft's spans without weft's
	// samples.
	Pin string `yaml:"pin"`
	// OTLPEndpoint, when set, also sends every interval's profiles as
	// OTLP profiles (TLS, headers and compression as for otlp).
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// OTLPProtocol is grpc or http/protobuf; empty infers it from
	// OTLPEndpoint's port, as for spans (see ExportProtocol).
	OTLPProtocol string `yaml:"otlp_protocol"`
}

// DefaultProfileDir is where pprof files go unless told otherwise: weft
// runs as root, and the files should outlive a reboot like a log would.
const DefaultProfileDir = "/var/lib/weft/profiles"

// MaxProfileFrequency bounds Profile.Frequency; the kernel caps it lower
// still through kernel.perf_event_max_sample_rate.
const MaxProfileFrequency = 1000

func defaultProfile() Profile {
	return Profile{
		Mode:      "off",
		Frequency: 19,
		Dir:       DefaultProfileDir,
		Interval:  30 * time.Second,
		Retention: 24 * time.Hour,
	}
}

// On reports whether the profiler runs.
func (p Profile) On() bool { return p.Mode == "on" }

func (p Profile) validate() error {
	switch p.Mode {
	case "on", "off":
	default:
		return fmt.Errorf("profile.mode %q: want on or off", p.Mode)
	}
	if p.Frequency < 1 || p.Frequency > MaxProfileFrequency {
		return fmt.Errorf("profile.frequency %d: want 1..%d Hz", p.Frequency, MaxProfileFrequency)
	}
	if p.Interval < time.Second {
		return fmt.Errorf("profile.interval %v: want at least 1s", p.Interval)
	}
	if p.Retention < 0 {
		return fmt.Errorf("profile.retention %v: want 0 (keep) or a positive duration", p.Retention)
	}
	if p.On() && p.Dir == "" {
		return errors.New("profile.dir is empty")
	}
	if p.Pin != "" && !filepath.IsAbs(p.Pin) {
		return fmt.Errorf("profile.pin %q: want an absolute path on a bpf filesystem", p.Pin)
	}
	return p.validateOTLP()
}

// applyProfileEnv reads the WEFT_PROFILE* variables through set (see
// applyEnv).
func applyProfileEnv(p *Profile, set func(string, func(string) error)) {
	set("WEFT_PROFILE", func(v string) error { p.Mode = v; return nil })
	set("WEFT_PROFILE_FREQUENCY", func(v string) (e error) { p.Frequency, e = strconv.Atoi(v); return })
	set("WEFT_PROFILE_DIR", func(v string) error { p.Dir = v; return nil })
	set("WEFT_PROFILE_INTERVAL", func(v string) (e error) { p.Interval, e = time.ParseDuration(v); return })
	set("WEFT_PROFILE_RETENTION", func(v string) (e error) { p.Retention, e = time.ParseDuration(v); return })
	set("WEFT_PROFILE_PIN", func(v string) error { p.Pin = v; return nil })
	set("WEFT_PROFILE_OTLP_ENDPOINT", func(v string) error { p.OTLPEndpoint = v; return nil })
	// The specification's per-signal variable; the generic
	// OTEL_EXPORTER_OTLP_PROTOCOL is the spans' (otlp.protocol).
	set("OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", func(v string) error { p.OTLPProtocol = v; return nil })
}

// profileFlags are the --profile* flags.
type profileFlags struct {
	mode, dir, pin, otlp, otlpProtocol string
	frequency                          int
	interval, retention                time.Duration
}

func (f *profileFlags) register(fs *flag.FlagSet, d Profile) {
	fs.StringVar(&f.mode, "profile", d.Mode, "sample on-CPU stacks of traced processes, linked to spans: on or off")
	fs.IntVar(&f.frequency, "profile-frequency", d.Frequency, "samples per second per CPU (19; 99 for detail)")
	fs.StringVar(&f.dir, "profile-dir", d.Dir, "directory of the pprof files, one per service and interval")
	fs.DurationVar(&f.interval, "profile-interval", d.Interval, "how often a pprof file per service is written")
	fs.DurationVar(&f.retention, "profile-retention", d.Retention, "delete pprof files older than this (0: keep)")
	fs.StringVar(&f.pin, "profile-pin", "", "pin traces_ctx_v1 at this bpffs path for other profilers, e.g. /sys/fs/bpf/otel/traces_ctx_v1")
	fs.StringVar(&f.otlp, "profile-otlp-endpoint", "", "also export profiles over OTLP to this endpoint: host:port or URL (over HTTP, one without a path gets /v1development/profiles)")
	fs.StringVar(&f.otlpProtocol, "profile-otlp-protocol", "", "protocol of -profile-otlp-endpoint: grpc or http/protobuf (default: http/protobuf on port 4318, else grpc)")
}

// apply copies the flag called name, if it is one of these, into p.
func (f *profileFlags) apply(p *Profile, name string) {
	switch name {
	case "profile":
		p.Mode = f.mode
	case "profile-frequency":
		p.Frequency = f.frequency
	case "profile-dir":
		p.Dir = f.dir
	case "profile-interval":
		p.Interval = f.interval
	case "profile-retention":
		p.Retention = f.retention
	case "profile-pin":
		p.Pin = f.pin
	case "profile-otlp-endpoint":
		p.OTLPEndpoint = f.otlp
	case "profile-otlp-protocol":
		p.OTLPProtocol = f.otlpProtocol
	}
}
