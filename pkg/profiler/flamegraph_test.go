package profiler

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// svgDoc is the part of a flame graph the tests read.
type svgDoc struct {
	Title  string     `xml:"title"`
	Texts  []string   `xml:"text"`
	Frames []svgFrame `xml:"g"`
}

type svgFrame struct {
	Title string `xml:"title"`
	Rect  struct {
		Width string `xml:"width,attr"`
		Fill  string `xml:"fill,attr"`
	} `xml:"rect"`
	Label string `xml:"text"`
}

func flameGraph(t *testing.T, p *profile.Profile, title string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteFlameGraph(&buf, p, title); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// parseSVG checks the output is well-formed XML and reads it.
func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not XML: %v\n%s", err, b)
		}
	}
	var doc svgDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func frameTitles(doc svgDoc) map[string]svgFrame {
	out := map[string]svgFrame{}
	for _, f := range doc.Frames {
		out[f.Title] = f
	}
	return out
}

func TestFlameGraph(t *testing.T) {
	p := testProfiles(t)["checkout"]
	b := flameGraph(t, p, "checkout: all samples")
	doc := parseSVG(t, b)
	if doc.Title != "checkout: all samples" {
		t.Errorf("title %q", doc.Title)
	}
	frames := frameTitles(doc)
	for _, want := range []string{
		"all (6 samples, 100.00%)",
		"main.main (5 samples, 83.33%)",
		"main.handleA (3 samples, 50.00%)",
		"main.compute (3 samples, 50.00%)",
		"libc.so.6+0x1234 (2 samples, 33.33%)",
		"vfs_read (2 samples, 33.33%)",
		"runtime.gcBgMarkWorker (1 sample, 16.67%)",
	} {
		if _, ok := frames[want]; !ok {
			t.Errorf("no frame %q in %v", want, frames)
		}
	}
	if f := frames["main.main (5 samples, 83.33%)"]; f.Label != "main.main" || f.Rect.Width != "983.33" {
		t.Errorf("main.main frame %+v", f)
	}
	// Kernel, user and unresolved frames are told apart by colour.
	kernel := frames["vfs_read (2 samples, 33.33%)"].Rect.Fill
	user := frames["main.compute (3 samples, 50.00%)"].Rect.Fill
	unresolved := frames["libc.so.6+0x1234 (2 samples, 33.33%)"].Rect.Fill
	if kernel == user || unresolved == user || unresolved == kernel {
		t.Errorf("fills kernel %s user %s unresolved %s", kernel, user, unresolved)
	}
	if c := frameColour(&flameNode{name: "vfs_read", class: classKernel}); c != kernel {
		t.Errorf("kernel fill %s, want %s", kernel, c)
	}
}

func TestFlameGraphOfOneSpan(t *testing.T) {
	p := testProfiles(t)["checkout"]
	sel := BySpan(spanB.String())
	doc := parseSVG(t, flameGraph(t, Filter(p, sel), "checkout: "+sel.String()))
	frames := frameTitles(doc)
	if len(frames) != 7 { // all, main.main … vfs_read
		t.Errorf("%d frames: %v", len(frames), frames)
	}
	if _, ok := frames["vfs_read (2 samples, 100.00%)"]; !ok {
		t.Errorf("frames %v", frames)
	}
	if !strings.Contains(doc.Title, "53995c3f42cd8ad8") {
		t.Errorf("title %q", doc.Title)
	}
}

func TestFlameGraphDeterministic(t *testing.T) {
	a := flameGraph(t, testProfiles(t)["checkout"], "x")
	b := flameGraph(t, testProfiles(t)["checkout"], "x")
	c := flameGraph(t, roundTrip(t, testProfiles(t)["checkout"]), "x")
	if !bytes.Equal(a, b) || !bytes.Equal(a, c) {
		t.Fatal("same profile, different flame graphs")
	}
}

// TestFlameGraphNames covers names that need escaping and frames too
// narrow for their names.
func TestFlameGraphNames(t *testing.T) {
	long := "github.com/example/service/internal/handlers.(*UserHandler).ServeHTTPWithAVeryLongName"
	odd := `operator<<(std::ostream&, "x")` + "\x01"
	fn := func(id uint64, name string) *profile.Location {
		f := &profile.Function{ID: id, Name: name}
		return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	}
	wide, narrow, escaped := fn(1, "wide"), fn(2, long), fn(3, odd)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{wide}, Value: []int64{970}},
			{Location: []*profile.Location{narrow}, Value: []int64{20}},
			{Location: []*profile.Location{escaped}, Value: []int64{10}},
		},
		Location: []*profile.Location{wide, narrow, escaped},
		Function: []*profile.Function{wide.Line[0].Function, narrow.Line[0].Function, escaped.Line[0].Function},
	}
	doc := parseSVG(t, flameGraph(t, p, `<script>alert("t")</script> & more`))
	if doc.Title != `<script>alert("t")</script> & more` {
		t.Errorf("title %q", doc.Title)
	}
	var sawNarrow, sawOdd bool
	for _, f := range doc.Frames {
		switch {
		case strings.HasPrefix(f.Title, long):
			sawNarrow = true
			// 20 of 1000 samples: 23.6 px, room for two characters plus "..".
			if f.Label != "" && (!strings.HasSuffix(f.Label, "..") || len(f.Label) >= len(long)) {
				t.Errorf("narrow label %q", f.Label)
			}
		case strings.HasPrefix(f.Title, "operator<<"):
			sawOdd = true
		}
	}
	if !sawNarrow || !sawOdd {
		t.Errorf("frames missing: %+v", doc.Frames)
	}
}

func TestFlameGraphEmpty(t *testing.T) {
	p := Filter(testProfiles(t)["checkout"], BySpan("0000000000000001"))
	doc := parseSVG(t, flameGraph(t, p, "nothing"))
	if len(doc.Frames) != 0 || !strings.Contains(strings.Join(doc.Texts, " "), "no samples") {
		t.Errorf("got %+v", doc)
	}
}

func TestFitLabel(t *testing.T) {
	cases := []struct {
		name string
		w    float64
		want string
	}{
		{"main.main", 500, "main.main"},
		{"main.main", 40, "ma.."}, // room for 4 characters
		{"main.main", 20, ""},
		{"éèêëàâ", 45, "éèê.."}, // runes, not bytes
	}
	for _, c := range cases {
		if got := fitLabel(c.name, c.w); got != c.want {
			t.Errorf("fitLabel(%q, %v) = %q, want %q", c.name, c.w, got, c.want)
		}
	}
}

func TestShortName(t *testing.T) {
	cases := map[string]string{
		"github.com/weftdev/weft/pkg/profiler.e2eCapture": "profiler.e2eCapture",
		"encoding/json.(*encodeState).marshal":            "json.(*encodeState).marshal",
		"main.F[go.shape.struct{ a/b }]":                  "main.F[go.shape.struct{ a/b }]",
		"Lcom/example/Hot;::run":                          "Hot;::run",
		"main.main":                                       "main.main",
	}
	for in, want := range cases {
		if got := shortName(&flameNode{name: in}); got != want {
			t.Errorf("shortName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := shortName(&flameNode{name: "a/b", class: classUnresolved}); got != "a/b" {
		t.Errorf("unresolved name shortened to %q", got)
	}
}
