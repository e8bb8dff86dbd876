package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// load runs Load with a YAML file (when yml is not empty), an environment
// and command-line arguments.
func load(t *testing.T, yml string, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	path := ""
	if yml != "" {
		path = filepath.Join(t.TempDir(), "weft.yaml")
		if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
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

func TestOTLPEndpointPrecedence(t *testing.T) {
	for name, tc := range map[string]struct {
		yml  string
		env  map[string]string
		args []string
		want string // the target's endpoint
	}{
		"yaml traces endpoint over yaml endpoint": {
			yml:  "otlp:\n  endpoint: http://generic:4318\n  traces_endpoint: http://traces:4318/t\n",
			want: "http://traces:4318/t",
		},
		"env traces endpoint over yaml endpoint": {
			yml:  "otlp:\n  endpoint: http://yaml:4318\n",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://env:4318/t"},
			want: "http://env:4318/t",
		},
		"env endpoint clears yaml traces endpoint": {
			yml:  "otlp:\n  traces_endpoint: http://yaml:4318/t\n",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"},
			want: "http://env:4318/v1/traces",
		},
		"env traces endpoint over env endpoint": {
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://generic:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318"},
			want: "http://traces:4318/",
		},
		"flag endpoint clears env traces endpoint": {
			env:  map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://env:4318/t"},
			args: []string{"--otlp-endpoint=http://flag:4318/base"},
			want: "http://flag:4318/base/v1/traces",
		},
		"flag traces endpoint over flag endpoint": {
			args: []string{"--otlp-traces-endpoint=http://traces:4318/t", "--otlp-endpoint=http://generic:4318"},
			want: "http://traces:4318/t",
		},
	} {
		c, err := load(t, tc.yml, tc.env, tc.args...)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if tg, err := c.OTLP.Target(); err != nil || tg.Endpoint != tc.want {
			t.Errorf("%s: endpoint %q (%v), want %q", name, tg.Endpoint, err, tc.want)
		}
	}
}

func TestOTLPTarget(t *testing.T) {
	for _, tc := range []struct {
		o                  OTLP
		protocol, endpoint string
		why                string
	}{
		{OTLP{Endpoint: "collector:4317"}, "grpc", "collector:4317", "no protocol set, and the port is not 4318 (OTLP/HTTP's)"},
		{OTLP{Endpoint: "collector"}, "grpc", "collector", "no protocol set, and the port is not 4318 (OTLP/HTTP's)"},
		{OTLP{Endpoint: "https://collector:4317"}, "grpc", "https://collector:4317", "no protocol set, and the port is not 4318 (OTLP/HTTP's)"},
		{OTLP{Endpoint: "collector:4318"}, "http/protobuf", "https://collector:4318/v1/traces", "no protocol set, and port 4318 is OTLP/HTTP's"},
		{OTLP{Endpoint: "collector:4318", Insecure: true}, "http/protobuf", "http://collector:4318/v1/traces", "no protocol set, and port 4318 is OTLP/HTTP's"},
		{OTLP{Endpoint: "https://collector:4318", Insecure: true}, "http/protobuf", "https://collector:4318/v1/traces", "no protocol set, and port 4318 is OTLP/HTTP's"},
		{OTLP{Endpoint: "http://collector:4318/base/"}, "http/protobuf", "http://collector:4318/base/v1/traces", "no protocol set, and port 4318 is OTLP/HTTP's"},
		{OTLP{TracesEndpoint: "http://collector:4318"}, "http/protobuf", "http://collector:4318/", "no protocol set, and port 4318 is OTLP/HTTP's"},
		{OTLP{TracesEndpoint: "https://collector:4318/custom/traces"}, "http/protobuf", "https://collector:4318/custom/traces", "no protocol set, and port 4318 is OTLP/HTTP's"},
		{OTLP{Endpoint: "https://otlp.example.com", Protocol: "http/protobuf"}, "http/protobuf", "https://otlp.example.com/v1/traces", "otlp.protocol is set"},
		{OTLP{Endpoint: "collector:4318", Protocol: "grpc"}, "grpc", "collector:4318", "otlp.protocol is set"},
	} {
		tg, err := tc.o.Target()
		if err != nil {
			t.Errorf("%+v: %v", tc.o, err)
			continue
		}
		if tg.Protocol != tc.protocol || tg.Endpoint != tc.endpoint || tg.Why != tc.why {
			t.Errorf("%+v: got %s %q (%s), want %s %q (%s)", tc.o, tg.Protocol, tg.Endpoint, tg.Why, tc.protocol, tc.endpoint, tc.why)
		}
	}
}

func TestOTLPSettingsPrecedence(t *testing.T) {
	yml := "otlp:\n  endpoint: collector:4317\n  protocol: http/protobuf\n  compression: gzip\n  certificate: /yaml/ca.pem\n  timeout: 3s\n"
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL":                  "http/protobuf",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL":           "grpc",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":               "/env/ca.pem",
		"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE":        "/env/traces-ca.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE":        "/env/client.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_KEY":                "/env/client-key.pem",
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY":         "/env/traces-client-key.pem",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT":            "1500",
		"OTEL_EXPORTER_OTLP_TRACES_INSECURE":           "true",
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": "",
	}
	c, err := load(t, yml, env)
	if err != nil {
		t.Fatal(err)
	}
	want := OTLP{
		Endpoint: "collector:4317", Protocol: "grpc", Compression: "gzip", Insecure: true, Timeout: 1500 * time.Millisecond,
		Certificate: "/env/traces-ca.pem", ClientCertificate: "/env/client.pem", ClientKey: "/env/traces-client-key.pem",
	}
	if c.OTLP.Endpoint != want.Endpoint || c.OTLP.Protocol != want.Protocol || c.OTLP.Compression != want.Compression ||
		c.OTLP.Insecure != want.Insecure || c.OTLP.Timeout != want.Timeout || c.OTLP.Certificate != want.Certificate ||
		c.OTLP.ClientCertificate != want.ClientCertificate || c.OTLP.ClientKey != want.ClientKey {
		t.Errorf("from YAML and environment:\n got %+v\nwant %+v", c.OTLP, want)
	}

	c, err = load(t, yml, env, "--otlp-protocol=http/protobuf", "--otlp-compression=none", "--otlp-certificate=/flag/ca.pem",
		"--otlp-client-certificate=/flag/c.pem", "--otlp-client-key=/flag/k.pem", "--otlp-timeout=4s", "--otlp-insecure=false")
	if err != nil {
		t.Fatal(err)
	}
	want = OTLP{
		Endpoint: "collector:4317", Protocol: "http/protobuf", Compression: "none", Insecure: false, Timeout: 4 * time.Second,
		Certificate: "/flag/ca.pem", ClientCertificate: "/flag/c.pem", ClientKey: "/flag/k.pem",
	}
	if c.OTLP.Protocol != want.Protocol || c.OTLP.Compression != want.Compression || c.OTLP.Insecure != want.Insecure ||
		c.OTLP.Timeout != want.Timeout || c.OTLP.Certificate != want.Certificate || c.OTLP.ClientCertificate != want.ClientCertificate ||
		c.OTLP.ClientKey != want.ClientKey {
		t.Errorf("with flags:\n got %+v\nwant %+v", c.OTLP, want)
	}
}

// The batch delay, whose variable is the batch span processor's, not the
// exporter's: defaults → YAML → OTEL_BSP_SCHEDULE_DELAY (ms) → flag.
func TestOTLPBatchDelayPrecedence(t *testing.T) {
	for _, tc := range []struct {
		yml  string
		env  map[string]string
		args []string
		want time.Duration
	}{
		{want: time.Second},
		{yml: "otlp:\n  batch_delay: 3s\n", want: 3 * time.Second},
		{yml: "otlp:\n  batch_delay: 3s\n", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "250"}, want: 250 * time.Millisecond},
		{yml: "otlp:\n  batch_delay: 3s\n", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "250"},
			args: []string{"--otlp-batch-delay=40ms"}, want: 40 * time.Millisecond},
	} {
		c, err := load(t, tc.yml, tc.env, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if c.OTLP.BatchDelay != tc.want {
			t.Errorf("yaml %q env %v args %v: batch delay %v, want %v", tc.yml, tc.env, tc.args, c.OTLP.BatchDelay, tc.want)
		}
	}
}

func TestOTLPDefaults(t *testing.T) {
	c, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.OTLP.Enabled() || c.OTLP.Protocol != "" || c.OTLP.Compression != "none" || c.OTLP.Timeout != 10*time.Second || c.OTLP.Insecure {
		t.Errorf("defaults %+v", c.OTLP)
	}
}

func TestOTLPValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			want: `otlp.protocol (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, --otlp-protocol) "http/json": OTLP/HTTP with JSON is not supported; want grpc or http/protobuf`},
		{args: []string{"--otlp-protocol=thrift"},
			want: `otlp.protocol (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, --otlp-protocol) "thrift": want grpc or http/protobuf`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"},
			want: `otlp.compression (OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION, --otlp-compression) "zstd": want gzip or none`},
		{args: []string{"--otlp-client-key=/k.pem"},
			want: "otlp.client_certificate (OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_CERTIFICATE, --otlp-client-certificate) and otlp.client_key (OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_KEY, --otlp-client-key): set both or neither"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/c.pem"},
			want: "set both or neither"},
		{args: []string{"--otlp-endpoint=ftp://collector:4317"},
			want: `otlp.endpoint (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, --otlp-endpoint) "ftp://collector:4317": want host:port, http:// or https://`},
		{args: []string{"--otlp-traces-endpoint=unix:///run/otlp.sock", "--otlp-protocol=http/protobuf"},
			want: `otlp.traces_endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, --otlp-traces-endpoint) "unix:///run/otlp.sock": want http://, https:// or host:port`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://[::1"},
			want: `otlp.endpoint (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, --otlp-endpoint) "http://[::1": parse "http://[::1": missing ']' in host`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "ten"},
			want: `OTEL_EXPORTER_OTLP_TIMEOUT: strconv.Atoi: parsing "ten": invalid syntax`},
		{env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "1s"},
			want: `OTEL_BSP_SCHEDULE_DELAY: strconv.Atoi: parsing "1s": invalid syntax`},
		{args: []string{"--otlp-batch-delay=0s"},
			want: "otlp.batch_delay (OTEL_BSP_SCHEDULE_DELAY, --otlp-batch-delay) 0s: want a positive duration"},
	} {
		_, err := load(t, "", tc.env, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("env %v args %v: error %v, want %q", tc.env, tc.args, err, tc.want)
		}
	}
}
