package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProfileDefaults(t *testing.T) {
	p := Default().Profile
	if p.On() || p.Frequency != 19 || p.Dir != DefaultProfileDir || p.Interval != 30*time.Second || p.Pin != "" || p.OTLPEndpoint != "" || p.OTLPProtocol != "" {
		t.Errorf("defaults: %+v", p)
	}
}

// The YAML block, then the environment, then the flags.
func TestProfilePrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.yaml")
	yml := "profile:\n  mode: on\n  frequency: 99\n  dir: /yaml\n  interval: 10s\n  pin: /sys/fs/bpf/otel/traces_ctx_v1\n  otlp_protocol: grpc\n"
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"WEFT_PROFILE_DIR":                     "/env",
		"WEFT_PROFILE_INTERVAL":                "5s",
		"WEFT_PROFILE_OTLP_ENDPOINT":           "env:4317",
		"WEFT_PROFILE_RETENTION":               "1h",
		"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL": "http/protobuf",
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fl := RegisterFlags(fs)
	if err := fs.Parse([]string{"--profile-interval=2s", "--profile-frequency=49"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, func(k string) string { return env[k] }, fs, fl)
	if err != nil {
		t.Fatal(err)
	}
	want := Profile{Mode: "on", Frequency: 49, Dir: "/env", Interval: 2 * time.Second, Retention: time.Hour,
		Pin: "/sys/fs/bpf/otel/traces_ctx_v1", OTLPEndpoint: "env:4317", OTLPProtocol: "http/protobuf"}
	if c.Profile != want {
		t.Errorf("profile = %+v\nwant      %+v", c.Profile, want)
	}
}

func TestProfileEnvAndFlagsAlone(t *testing.T) {
	c, err := Load("", func(k string) string {
		return map[string]string{"WEFT_PROFILE": "on", "WEFT_PROFILE_FREQUENCY": "99", "WEFT_PROFILE_PIN": "/sys/fs/bpf/p"}[k]
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Profile.On() || c.Profile.Frequency != 99 || c.Profile.Pin != "/sys/fs/bpf/p" {
		t.Errorf("from env: %+v", c.Profile)
	}

	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fl := RegisterFlags(fs)
	if err := fs.Parse([]string{"--profile=on", "--profile-dir=/tmp/p", "--profile-pin=/sys/fs/bpf/x", "--profile-otlp-endpoint=h:4317", "--profile-retention=0"}); err != nil {
		t.Fatal(err)
	}
	c, err = Load("", func(string) string { return "" }, fs, fl)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Profile.On() || c.Profile.Dir != "/tmp/p" || c.Profile.Pin != "/sys/fs/bpf/x" || c.Profile.OTLPEndpoint != "h:4317" || c.Profile.Retention != 0 {
		t.Errorf("from flags: %+v", c.Profile)
	}
}

func TestProfileValidateRejects(t *testing.T) {
	for name, mut := range map[string]func(*Profile){
		"mode":           func(p *Profile) { p.Mode = "yes" },
		"zero frequency": func(p *Profile) { p.Frequency = 0 },
		"high frequency": func(p *Profile) { p.Frequency = 5000 },
		"interval":       func(p *Profile) { p.Interval = 100 * time.Millisecond },
		"retention":      func(p *Profile) { p.Retention = -time.Second },
		"dir":            func(p *Profile) { p.Mode, p.Dir = "on", "" },
		"relative pin":   func(p *Profile) { p.Pin = "otel/traces_ctx_v1" },
	} {
		c := Default()
		mut(&c.Profile)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: invalid profile config accepted", name)
		} else if !strings.Contains(err.Error(), "profile.") {
			t.Errorf("%s: error %q does not name the setting", name, err)
		}
	}
}

func TestProfileBadEnv(t *testing.T) {
	_, err := Load("", func(k string) string {
		if k == "WEFT_PROFILE_FREQUENCY" {
			return "fast"
		}
		return ""
	}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "WEFT_PROFILE_FREQUENCY") {
		t.Errorf("bad frequency: %v", err)
	}
}
