package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Load resolves the configuration: defaults, then the YAML file at path
// (when not empty), then the environment, then the flags that were set on
// fs (see RegisterFlags).
func Load(path string, getenv func(string) string, fs *flag.FlagSet, fl *Flags) (Config, error) {
	c := Default()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return c, fmt.Errorf("parse config %s: %w", path, err)
		}
	}
	if err := applyEnv(&c, getenv); err != nil {
		return c, err
	}
	if fs != nil && fl != nil {
		if err := fl.apply(&c, fs); err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// applyEnv reads the OpenTelemetry variables where the specification has
// one, WEFT_* otherwise.
func applyEnv(c *Config, getenv func(string) string) error {
	if err := applyOTLPEnv(&c.OTLP, getenv); err != nil {
		return err
	}
	var err error
	set := func(name string, f func(string) error) {
		if v := getenv(name); v != "" && err == nil {
			if e := f(v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	}
	set("WEFT_PROBES", func(v string) error { c.Probes = v; return nil })
	set("WEFT_IOCTL_PACKETS", func(v string) error { c.IoctlPackets = v; return nil })
	set("WEFT_PROPAGATION", func(v string) error { c.Propagation = v; return nil })
	set("WEFT_RUNTIME_HOOKS", func(v string) error { c.RuntimeHooks = v; return nil })
	set("WEFT_TLS", func(v string) error { c.TLS = v; return nil })
	set("WEFT_JAVA_AGENT", func(v string) error { c.JavaAgent = v; return nil })
	set("WEFT_JAVA_AGENT_ARGS", func(v string) error { c.JavaAgentArgs = v; return nil })
	set("WEFT_NODE_AGENT", func(v string) error { c.NodeAgent = v; return nil })
	set("WEFT_CAPTURE_BYTES", func(v string) (e error) { c.CaptureBytes, e = strconv.Atoi(v); return })
	set("WEFT_SOCKET_TABLE_SIZE", func(v string) (e error) { c.SocketTableSize, e = strconv.Atoi(v); return })
	set("WEFT_PIDS", func(v string) (e error) { c.Select.PIDs, e = parseInts(v); return })
	set("WEFT_PORTS", func(v string) (e error) { c.Select.Ports, e = parseInts(v); return })
	set("WEFT_EXE", func(v string) error { c.Select.Exe = v; return nil })
	set("WEFT_CGROUPS", func(v string) error { c.Select.Cgroups = splitList(v); return nil })
	set("WEFT_CONTAINERS", func(v string) error { c.Select.Containers = splitList(v); return nil })
	set("WEFT_REQUEST_TIMEOUT", func(v string) (e error) { c.RequestTimeout, e = time.ParseDuration(v); return })
	set("WEFT_KEEP_QUERY", func(v string) (e error) { c.KeepQuery, e = strconv.ParseBool(v); return })
	set("WEFT_METRICS_ADDR", func(v string) error { c.MetricsAddr = v; return nil })
	set("WEFT_STATS_INTERVAL", func(v string) (e error) { c.StatsInterval, e = time.ParseDuration(v); return })
	set("WEFT_LOG_LEVEL", func(v string) error { c.LogLevel = v; return nil })
	set("WEFT_MAX_PROCS", func(v string) (e error) { c.MaxProcs, e = strconv.Atoi(v); return })
	applyProfileEnv(&c.Profile, set)
	applySamplerEnv(&c.Sampler, set)
	applyMetricsEnv(&c.Metrics, set)
	set("WEFT_ROUTES", func(v string) error { c.Routes = splitList(v); return nil })
	applyKubernetesEnv(&c.Kubernetes, set)
	return err
}

// ParseHeaders reads the OTEL_EXPORTER_OTLP_HEADERS form: k=v pairs,
// comma-separated, values percent-encoded.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("header %q: want key=value", part)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
		out[strings.TrimSpace(k)] = dv
	}
	return out, nil
}

// splitList reads a comma-separated list, blanks dropped.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
