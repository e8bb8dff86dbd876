package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func loadMetrics(t *testing.T, yaml string, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	path := ""
	if yaml != "" {
		path = filepath.Join(t.TempDir(), "weft.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fl := RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return Load(path, func(k string) string { return env[k] }, fs, fl)
}

func TestMetricsExportersByDefault(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		args       []string
		prom, otlp bool
	}{
		{nil, nil, false, false},
		{nil, []string{"--metrics-addr=127.0.0.1:9464"}, true, false},
		// A trace endpoint alone sends no metrics: trace-only backends refuse them.
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"}, nil, false, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "collector:4317"}, nil, false, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_METRICS_EXPORTER": "otlp"}, []string{"--metrics-addr=:9464"}, false, true},
		{map[string]string{"OTEL_METRICS_EXPORTER": "none"}, []string{"--metrics-addr=:9464"}, false, false},
	} {
		c, err := loadMetrics(t, "", tc.env, tc.args...)
		if err != nil {
			t.Fatalf("%v %v: %v", tc.env, tc.args, err)
		}
		if prom, otlp := c.MetricsOn(); prom != tc.prom || otlp != tc.otlp {
			t.Errorf("%v %v: prometheus %v otlp %v, want %v %v", tc.env, tc.args, prom, otlp, tc.prom, tc.otlp)
		}
	}
}

func TestMetricsTargetAndPrecedence(t *testing.T) {
	yaml := "otlp:\n  endpoint: http://collector:4318\nmetrics:\n  exporters: [otlp]\n  interval: 30s\n  temporality: delta\n"
	c, err := loadMetrics(t, yaml, nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := c.MetricsTarget()
	if err != nil || tg.Protocol != ProtocolHTTPProtobuf || tg.Endpoint != "http://collector:4318/v1/metrics" {
		t.Errorf("target %+v %v", tg, err)
	}
	if c.Metrics.Interval != 30*time.Second || !c.Metrics.Delta() {
		t.Errorf("file: %+v", c.Metrics)
	}
	c, err = loadMetrics(t, yaml, map[string]string{
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT":               "http://metrics:4318/custom",
		"OTEL_METRIC_EXPORT_INTERVAL":                       "5000",
		"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "cumulative",
	}, "--metrics-interval=2s", "--metrics-route-limit=7", "--route=/a/{id},/b/**")
	if err != nil {
		t.Fatal(err)
	}
	tg, _ = c.MetricsTarget()
	if tg.Endpoint != "http://metrics:4318/custom" || c.Metrics.Interval != 2*time.Second || c.Metrics.Delta() ||
		c.Metrics.RouteLimit != 7 || strings.Join(c.Routes, " ") != "/a/{id} /b/**" {
		t.Errorf("env and flags: %+v %+v routes %v", tg, c.Metrics, c.Routes)
	}
	c, _ = loadMetrics(t, yaml, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "lowmemory"})
	if !c.Metrics.Delta() {
		t.Error("lowmemory is not delta")
	}
	c, _ = loadMetrics(t, yaml+"  histogram: exponential\n", nil)
	if !c.Metrics.Exponential() {
		t.Error("file: not exponential")
	}
	c, _ = loadMetrics(t, yaml+"  histogram: exponential\n", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": "explicit_bucket_histogram"})
	if c.Metrics.Exponential() {
		t.Error("env: not explicit")
	}
	c, _ = loadMetrics(t, yaml, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": "explicit_bucket_histogram"}, "--metrics-histogram=exponential")
	if !c.Metrics.Exponential() {
		t.Error("flag: not exponential")
	}
}

func TestMetricsValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"OTEL_METRICS_EXPORTER": "statsd"}, nil, `"statsd": want otlp, prometheus or none`},
		{map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, nil, "metrics_addr is not set"},
		{map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, nil, "neither metrics.endpoint nor otlp.endpoint"},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "sometimes"}, nil, "want cumulative or delta"},
		{nil, []string{"--route=users/{id}"}, "want a path starting with /"},
		{nil, []string{"--metrics-route-limit=0"}, "want 1 or more"},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": "drop"}, nil, "want explicit_bucket_histogram or base2_exponential_bucket_histogram"},
		{nil, []string{"--metrics-histogram=log"}, "want explicit or exponential"},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"}, nil, "JSON is not supported"},
	} {
		_, err := loadMetrics(t, "", tc.env, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want %q", tc.env, tc.args, err, tc.want)
		}
	}
}

func TestMetricsOTLPSettingsOverTraces(t *testing.T) {
	yaml := "otlp:\n  endpoint: collector:4317\n  headers: {a: \"1\", b: \"2\"}\n  compression: gzip\n  certificate: /ca.pem\nmetrics:\n  exporters: [otlp]\n  headers: {b: \"3\"}\n"
	c, err := loadMetrics(t, yaml, map[string]string{
		"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "none",
		"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT":     "2500",
		"OTEL_EXPORTER_OTLP_METRICS_INSECURE":    "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	o := c.MetricsOTLP()
	if o.Headers["a"] != "1" || o.Headers["b"] != "3" || o.Compression != "none" || o.Timeout != 2500*time.Millisecond ||
		!o.Insecure || o.Certificate != "/ca.pem" {
		t.Errorf("metrics OTLP %+v", o)
	}
	if c.OTLP.Headers["b"] != "2" || c.OTLP.Compression != "gzip" || c.OTLP.Insecure {
		t.Errorf("the spans' settings changed: %+v", c.OTLP)
	}
	if _, err := loadMetrics(t, yaml, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY": "/k.pem"}); err == nil ||
		!strings.Contains(err.Error(), "set both or neither") {
		t.Errorf("a key without a certificate: %v", err)
	}
}
