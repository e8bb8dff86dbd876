package otlpprofile

import (
	"context"
	"encoding/hex"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/profiler"
	"github.com/weftdev/weft/pkg/profiler/symbolize"
	"github.com/weftdev/weft/pkg/spans"
)

type fakeSymbols map[uint64]string

func (f fakeSymbols) Symbolize(_ uint32, user, _ []uint64) []symbolize.Frame {
	var out []symbolize.Frame
	for _, ip := range user {
		out = append(out, symbolize.Frame{Address: ip, Function: f[ip], Module: "/srv/shop"})
	}
	return out
}

type resolver struct{}

func (resolver) Resolve(pid uint32) (*resource.Resource, string) {
	return resource.NewSchemaless(attribute.String("service.name", "shop"), attribute.Int("process.pid", int(pid))), "shop"
}

// receiver is an OTLP profiles endpoint keeping what it gets.
type receiver struct {
	pprofileotlp.UnimplementedGRPCServer
	mu      sync.Mutex
	got     []pprofile.Profiles
	headers []string
}

func (r *receiver) Export(ctx context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	p := pprofile.NewProfiles()
	req.Profiles().CopyTo(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p)
	r.headers = append(r.headers, md.Get("api-key")...)
	return pprofileotlp.NewExportResponse(), nil
}

var (
	trace = spans.TraceID{0x4b, 0xf9, 15: 0x36}
	span  = spans.SpanID{0, 0xf0, 7: 0xb7}
)

// testProfile is one service's interval: two processes, one span.
func testProfile(t *testing.T) *profile.Profile {
	agg, err := profiler.NewAggregator(profiler.Config{
		Symbolizer: fakeSymbols{1: "main.main", 2: "main.burn", 3: "runtime.gcBgMarkWorker"},
		SampleRate: 99,
		SpanName:   func(spans.TraceID, spans.SpanID) string { return "GET /burn" },
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		agg.Add(&profiler.RawSample{PID: 10, TID: 11, UserStack: []uint64{2, 1}, TraceID: trace, SpanID: span, Thread: "shop"})
	}
	agg.Add(&profiler.RawSample{PID: 10, TID: 12, UserStack: []uint64{3}, Thread: "gc"})
	agg.Add(&profiler.RawSample{PID: 20, TID: 21, UserStack: []uint64{2, 1}, Thread: "shop"})
	return agg.Flush()[profiler.DefaultService]
}

func TestExportLinksSamplesToSpans(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rcv := &receiver{}
	pprofileotlp.RegisterGRPCServer(srv, rcv)
	go srv.Serve(ln)
	defer srv.Stop()

	c, err := New(Config{Endpoint: "http://" + ln.Addr().String(), Headers: map[string]string{"api-key": "k"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Target() != ln.Addr().String() {
		t.Errorf("target %q, want %q", c.Target(), ln.Addr().String())
	}

	profiles, prof := testProfiles(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Export(ctx, profiles); err != nil {
		t.Fatal(err)
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.got) != 1 || !slices.Equal(rcv.headers, []string{"k"}) {
		t.Fatalf("received %d requests, headers %v", len(rcv.got), rcv.headers)
	}
	checkProfiles(t, rcv.got[0], prof)
}

// testProfiles is testProfile converted, with the profile it came from.
func testProfiles(t *testing.T) (pprofile.Profiles, *profile.Profile) {
	t.Helper()
	b := NewBuilder("v1")
	prof := testProfile(t)
	if err := b.Add(prof, resolver{}); err != nil {
		t.Fatal(err)
	}
	return b.Profiles(), prof
}

// checkProfiles checks that got is testProfiles' whole: every process,
// sample, stack, link and attribute of prof.
func checkProfiles(t *testing.T, got pprofile.Profiles, prof *profile.Profile) {
	t.Helper()
	dict := got.Dictionary()
	str := func(i int32) string { return dict.StringTable().At(int(i)) }
	if got.ResourceProfiles().Len() != 2 {
		t.Fatalf("%d resources, want one per process", got.ResourceProfiles().Len())
	}
	type flat struct {
		pid          int64
		stack        string
		count        int64
		span, thread string
		spanName     string
	}
	var samples []flat
	for i := range got.ResourceProfiles().Len() {
		rp := got.ResourceProfiles().At(i)
		pidV, _ := rp.Resource().Attributes().Get("process.pid")
		svc, _ := rp.Resource().Attributes().Get("service.name")
		if svc.Str() != "shop" {
			t.Errorf("resource %v", rp.Resource().Attributes().AsRaw())
		}
		sp := rp.ScopeProfiles().At(0)
		if sp.Scope().Name() != ScopeName || sp.Scope().Version() != "v1" {
			t.Errorf("scope %s %s", sp.Scope().Name(), sp.Scope().Version())
		}
		p := sp.Profiles().At(0)
		if str(p.SampleType().TypeStrindex()) != "samples" || str(p.PeriodType().TypeStrindex()) != "cpu" || p.Period() != prof.Period {
			t.Errorf("types %s/%s period %d", str(p.SampleType().TypeStrindex()), str(p.PeriodType().TypeStrindex()), p.Period())
		}
		for j := range p.Samples().Len() {
			s := p.Samples().At(j)
			f := flat{pid: pidV.Int(), count: s.Values().At(0)}
			var names []string
			for _, li := range dict.StackTable().At(int(s.StackIndex())).LocationIndices().All() {
				loc := dict.LocationTable().At(int(li))
				names = append(names, str(dict.FunctionTable().At(int(loc.Lines().At(0).FunctionIndex())).NameStrindex()))
			}
			f.stack = strings.Join(names, ";")
			if s.LinkIndex() != 0 {
				l := dict.LinkTable().At(int(s.LinkIndex()))
				if tid := l.TraceID(); hex.EncodeToString(tid[:]) != trace.String() {
					t.Errorf("link trace %s", l.TraceID())
				}
				f.span = l.SpanID().String()
			}
			attrs, err := pprofile.FromAttributeIndices(dict.AttributeTable(), s, dict)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := attrs.Get("thread.name"); ok {
				f.thread = v.Str()
			}
			if v, ok := attrs.Get("weft.span.name"); ok {
				f.spanName = v.Str()
			}
			samples = append(samples, f)
		}
	}
	want := []flat{
		{10, "main.burn;main.main", 5, span.String(), "shop", "GET /burn"},
		{10, "runtime.gcBgMarkWorker", 1, "", "gc", ""},
		{20, "main.burn;main.main", 1, "", "shop", ""},
	}
	if !slices.Equal(samples, want) {
		t.Errorf("samples\n%v\nwant\n%v", samples, want)
	}
}

func TestNewRejectsBadEndpoints(t *testing.T) {
	for _, ep := range []string{"", "ftp://x:1", "http://"} {
		if _, err := New(Config{Endpoint: ep}); err == nil {
			t.Errorf("%q accepted", ep)
		}
	}
}
