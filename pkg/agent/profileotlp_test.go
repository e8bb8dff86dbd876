package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/weftdev/weft/pkg/config"
	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/procinfo"
	"github.com/weftdev/weft/pkg/profiler"
)

// The profile sink takes its protocol from the profile settings and its
// headers and compression from the trace export's.
func TestProfileSinkOverHTTP(t *testing.T) {
	type request struct {
		path, encoding, apiKey string
		resources              int
	}
	var (
		mu  sync.Mutex
		got []request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := otlptest.ReadBody(r)
		req := pprofileotlp.NewExportRequest()
		if err == nil {
			err = req.UnmarshalProto(b)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, request{r.URL.Path, r.Header.Get("Content-Encoding"), r.Header.Get("Api-Key"), req.Profiles().ResourceProfiles().Len()})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()

	cfg := config.Default()
	cfg.Profile.OTLPEndpoint, cfg.Profile.OTLPProtocol = srv.URL, config.ProtocolHTTPProtobuf
	cfg.OTLP.Headers, cfg.OTLP.Compression = map[string]string{"api-key": "k"}, "gzip"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	resolver, err := procinfo.NewResolver(procinfo.Config{Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := newProfileSink(cfg, resolver, "v1")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Shutdown(context.Background())

	agg, err := profiler.NewAggregator(profiler.Config{Symbolizer: namedFrames{1: "main.main"}, SampleRate: 99})
	if err != nil {
		t.Fatal(err)
	}
	agg.Add(&profiler.RawSample{PID: uint32(os.Getpid()), TID: uint32(os.Getpid()), UserStack: []uint64{1}, Thread: "main"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sink.Export(ctx, agg.Flush()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := request{path: "/v1development/profiles", encoding: "gzip", apiKey: "k", resources: 1}
	if len(got) != 1 || got[0] != want {
		t.Errorf("requests %+v, want [%+v]", got, want)
	}
}

func TestNoProfileSinkWithoutEndpoint(t *testing.T) {
	sink, err := newProfileSink(config.Default(), nil, "v1")
	if sink != nil || err != nil {
		t.Errorf("sink %v, error %v: want none", sink, err)
	}
}
