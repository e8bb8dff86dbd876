package export

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/procinfo"
)

var _ Resolver = (*procinfo.Resolver)(nil)

func TestOTLPHonoursEnvironment(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"+rcv.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-env=yes")
	exp, err := NewOTLP(context.Background(), OTLPConfig{BatchTimeout: 20 * time.Millisecond}, fakeResolver{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })

	exp.Export(serverSpan())
	waitRecords(t, rcv, 1)
	if md := rcv.Metadata(); len(md[0].Get("x-env")) == 0 {
		t.Fatalf("OTEL_EXPORTER_OTLP_HEADERS not sent: %v", md[0])
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
