package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// The mount protocol, driven by hand with packets built as OBI's agent
// builds them (and through weft's slot extension): a call made by a worker
// thread joins the request's trace exactly while the request's logical id
// is mounted on it.
func TestMountProtocolInterop(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	downCmd := exec.Command(bins.websr, "-mode=thread")
	downCmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=down")
	down, downAddr := startListener(t, downCmd)
	svcCmd := exec.Command(bins.websr, "-mode=mounter", "-downstream="+downAddr)
	svcCmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=mounter")
	svc, svcAddr := startListener(t, svcCmd)
	// OBI's packets are read only where asked for on the socket-only path.
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", svc.Pid(), down.Pid()), "--ioctl-packets=on")

	find := func(spans []span, service string, kind tracepb.Span_SpanKind, path string) span {
		t.Helper()
		for _, s := range spans {
			if s.service == service && s.kind == kind && s.attrs["url.path"] == path {
				return s
			}
		}
		t.Fatalf("no %s %v %s span in:\n%s", service, kind, path, dump(spans))
		return span{}
	}

	for _, via := range []string{"ioctl", "slot"} {
		t.Run(via, func(t *testing.T) {
			rcv.Reset()
			if out := get(t, "http://"+svcAddr+"/job?via="+via); out != "/first 200 | /second 200\n" {
				t.Fatalf("service answered %q", out)
			}
			// SERVER /job, CLIENT /first, down /first, CLIENT /second, down /second.
			got := waitSpans(t, rcv, 5, 30*time.Second, func(span) bool { return true })
			srv := find(got, "mounter", tracepb.Span_SPAN_KIND_SERVER, "/job")
			first := find(got, "mounter", tracepb.Span_SPAN_KIND_CLIENT, "/first")
			downFirst := find(got, "down", tracepb.Span_SPAN_KIND_SERVER, "/first")
			second := find(got, "mounter", tracepb.Span_SPAN_KIND_CLIENT, "/second")
			downSecond := find(got, "down", tracepb.Span_SPAN_KIND_SERVER, "/second")
			if first.trace != srv.trace || first.parent != srv.id || downFirst.parent != first.id {
				t.Errorf("the call made while mounted is not the request's child:\n%s", dump(got))
			}
			if second.trace == srv.trace || second.parent != "" || downSecond.parent != second.id {
				t.Errorf("the call made after unmounting still joined the request:\n%s", dump(got))
			}
		})
	}

	t.Run("none", func(t *testing.T) {
		rcv.Reset()
		if out := get(t, "http://"+svcAddr+"/job?via=none"); out != "/first 200\n" {
			t.Fatalf("service answered %q", out)
		}
		got := waitSpans(t, rcv, 3, 30*time.Second, func(span) bool { return true })
		srv := find(got, "mounter", tracepb.Span_SPAN_KIND_SERVER, "/job")
		first := find(got, "mounter", tracepb.Span_SPAN_KIND_CLIENT, "/first")
		if first.trace == srv.trace {
			t.Errorf("without a mount the worker's call cannot know its request, yet joined it:\n%s", dump(got))
		}
	})

	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	// Per request: accept-thread mount+unmount; ioctl job mount+unmount; one slot registration.
	if m["agent_packets"] < 7 {
		t.Errorf("agent packets counted %d, want ≥ 7 (metrics %v)", m["agent_packets"], m)
	}
	if m["agent_packets_ignored"] != 0 {
		t.Errorf("well-formed packets were ignored: %d", m["agent_packets_ignored"])
	}
}
