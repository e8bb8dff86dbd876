package export

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/procinfo"
)

var _ Resolver = (*procinfo.Resolver)(nil)

// weft's configuration reads the OTEL_EXPORTER_OTLP_* variables in its
// own precedence; the SDK must not read them again behind its back.
func TestOTLPIgnoresEnvironment(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-env=yes")
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", filepath.Join(t.TempDir(), "missing.pem"))
	cfg := testOTLPConfig(rcv.Endpoint())
	cfg.Headers = map[string]string{"x-cfg": "yes"}
	exp := newTestOTLP(t, cfg)

	exp.Export(serverSpan())
	waitRecords(t, rcv, 1)
	md := rcv.Metadata()[0]
	if len(md.Get("x-env")) != 0 || len(md.Get("x-cfg")) != 1 {
		t.Fatalf("headers %v: want the config's x-cfg and not the environment's x-env", md)
	}
}

func TestOTLPWithProcessResolver(t *testing.T) {
	rcv := otlptest.Start(t)
	res, err := procinfo.NewResolver(procinfo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := NewOTLP(context.Background(), testOTLPConfig(rcv.Endpoint()), res)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })

	s := serverSpan()
	s.PID = uint32(os.Getpid())
	exp.Export(s)
	r := waitRecords(t, rcv, 1)[0]

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Base(self)
	if n := os.Getenv("OTEL_SERVICE_NAME"); n != "" {
		want = n
	}
	if r.ServiceName != want || r.Resource["process.pid"] != int64(os.Getpid()) || r.Resource["telemetry.distro.name"] != "weft" {
		t.Fatalf("service %q resource %v", r.ServiceName, r.Resource)
	}
}
