package e2e

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// profileReceiver is an OTLP profiles endpoint that keeps what it gets.
type profileReceiver struct {
	pprofileotlp.UnimplementedGRPCServer
	mu  sync.Mutex
	got []pprofile.Profiles
}

func (r *profileReceiver) Export(_ context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	p := pprofile.NewProfiles()
	req.Profiles().CopyTo(p)
	r.mu.Lock()
	r.got = append(r.got, p)
	r.mu.Unlock()
	return pprofileotlp.NewExportResponse(), nil
}

// linked counts, in what was received, the samples of service whose stack
// holds fn, and those linked to span id.
func (r *profileReceiver) linked(service, fn, id string) (all, inSpan int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.got {
		dict := p.Dictionary()
		str := func(i int32) string { return dict.StringTable().At(int(i)) }
		for i := range p.ResourceProfiles().Len() {
			rp := p.ResourceProfiles().At(i)
			if v, _ := rp.Resource().Attributes().Get("service.name"); v.Str() != service {
				continue
			}
			for j := range rp.ScopeProfiles().Len() {
				for k := range rp.ScopeProfiles().At(j).Profiles().Len() {
					samples := rp.ScopeProfiles().At(j).Profiles().At(k).Samples()
					for s := range samples.Len() {
						smp := samples.At(s)
						hit := false
						for _, li := range dict.StackTable().At(int(smp.StackIndex())).LocationIndices().All() {
							lines := dict.LocationTable().At(int(li)).Lines()
							for l := range lines.Len() {
								hit = hit || strings.Contains(str(dict.FunctionTable().At(int(lines.At(l).FunctionIndex())).NameStrindex()), fn)
							}
						}
						if !hit {
							continue
						}
						n := smp.Values().At(0)
						all += n
						if smp.LinkIndex() != 0 && dict.LinkTable().At(int(smp.LinkIndex())).SpanID().String() == id {
							inSpan += n
						}
					}
				}
			}
		}
	}
	return all, inSpan
}

// With --profile-otlp-endpoint the same samples reach an OTLP profiles
// endpoint, under the service's resource and linked to their span.
func TestProfileOTLPExport(t *testing.T) {
	setup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	prcv := &profileReceiver{}
	pprofileotlp.RegisterGRPCServer(gs, prcv)
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)

	rcv := otlptest.Start(t)
	srv, addr := startServer(t, "-mode=nethttp")
	dir := t.TempDir()
	args := append([]string{"--pid=" + strconv.Itoa(srv.Pid()), "--profile-otlp-endpoint=" + ln.Addr().String()}, profileArgs(dir, time.Second)...)
	w := startWeft(t, rcv, args...)
	defer func() {
		if t.Failed() {
			t.Logf("weft:\n%s", w.Output())
		}
	}()
	get(t, "http://"+addr+"/burn?cpums=200")
	done := time.Now()
	id := waitSpans(t, rcv, 1, 20*time.Second, func(s span) bool { return s.service == "websrv" })[0].id
	waitProfiles(done, time.Second)
	// The files and the OTLP export come from the same intervals: the
	// same samples, linked the same way. weft keys Go by goroutine, so
	// every sample of the burn is in the span.
	fileAll, fileIn := burnShare(loadSamples(t, dir, time.Time{}), srv.Pid(), "main.weftBurnCPUHotLoop", id)
	if fileAll < minBurnSamples || fileIn != fileAll {
		t.Errorf("files: %d samples of the burn, %d in its span; want ≥ %d, all", fileAll, fileIn, minBurnSamples)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		all, inSpan := prcv.linked("websrv", "weftBurnCPUHotLoop", id)
		if all >= fileAll {
			t.Logf("OTLP: %d samples in weftBurnCPUHotLoop, %d linked to span %s; files: %d, %d", all, inSpan, id, fileAll, fileIn)
			if all != fileAll || inSpan != fileIn || inSpan == 0 {
				t.Errorf("OTLP has %d samples, %d linked to the span; the files %d and %d", all, inSpan, fileAll, fileIn)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("OTLP endpoint got %d samples of the burn within 20 s, the files %d", all, fileAll)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
