package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/config"
	"github.com/weftdev/weft/pkg/profiler"
	"github.com/weftdev/weft/pkg/profiler/store"
)

const profileUsage = `Usage:
  weft profile [--dir DIR] (--span ID | --trace ID | --span-name NAME)
               [--service NAME] [--since DURATION] [--out PREFIX]

Reads the pprof files "weft run --profile=on" wrote, keeps the samples of one
span, of every span of one trace, or of every span of one name (merged),
and writes PREFIX.svg, a flame graph to open in a browser, and
PREFIX.pb.gz, the pprof profile behind it (go tool pprof opens it). The
span id "none" selects the samples taken outside any span.
`

func profileCmd(args []string) error {
	return profileRun(os.Stdout, os.Getenv, args)
}

// profileOptions are the parsed flags of weft profile.
type profileOptions struct {
	dir, service, out string
	since             time.Duration
	sel               profiler.Selector
}

var (
	spanIDRe  = regexp.MustCompile(`^[0-9a-f]{16}$`)
	traceIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

func parseProfileArgs(getenv func(string) string, args []string) (profileOptions, error) {
	var o profileOptions
	fs := flag.NewFlagSet("weft profile", flag.ContinueOnError)
	dir := config.DefaultProfileDir
	if d := getenv("WEFT_PROFILE_DIR"); d != "" {
		dir = d
	}
	fs.StringVar(&o.dir, "dir", dir, "directory weft run writes its profiles to (--profile-dir)")
	fs.StringVar(&o.sel.SpanID, "span", "", "span id, 16 hex digits (or none: samples outside spans)")
	fs.StringVar(&o.sel.TraceID, "trace", "", "trace id, 32 hex digits")
	fs.StringVar(&o.sel.SpanName, "span-name", "", `span name, e.g. "GET /users/{id}": every such span, merged`)
	fs.StringVar(&o.service, "service", "", "only this service's profiles")
	fs.DurationVar(&o.since, "since", 0, "only profiles of the last DURATION (0: all that are kept)")
	fs.StringVar(&o.out, "out", "", "output prefix (default weft-<span|trace|name>-<value>)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), profileUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v (flags only)", fs.Args())
	}
	o.sel.SpanID = strings.ToLower(strings.TrimSpace(o.sel.SpanID))
	o.sel.TraceID = strings.ToLower(strings.TrimSpace(o.sel.TraceID))
	switch {
	case o.sel.SpanID == "" && o.sel.TraceID == "" && o.sel.SpanName == "":
		return o, errors.New("say which samples: --span, --trace or --span-name")
	case o.sel.SpanID != "" && o.sel.SpanID != profiler.NoSpan && !spanIDRe.MatchString(o.sel.SpanID):
		return o, fmt.Errorf("--span %q: want 16 hex digits", o.sel.SpanID)
	case o.sel.TraceID != "" && o.sel.TraceID != profiler.NoSpan && !traceIDRe.MatchString(o.sel.TraceID):
		return o, fmt.Errorf("--trace %q: want 32 hex digits", o.sel.TraceID)
	case o.since < 0:
		return o, fmt.Errorf("--since %v is negative", o.since)
	}
	if o.out == "" {
		switch {
		case o.sel.SpanID != "":
			o.out = "weft-span-" + o.sel.SpanID
		case o.sel.TraceID != "":
			o.out = "weft-trace-" + o.sel.TraceID
		default:
			o.out = "weft-name-" + store.ServiceDir(o.sel.SpanName)
		}
	}
	return o, nil
}

func profileRun(w io.Writer, getenv func(string) string, args []string) error {
	o, err := parseProfileArgs(getenv, args)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	var since time.Time
	if o.since > 0 {
		since = time.Now().Add(-o.since)
	}
	prof, files, err := collect(o.dir, o.service, since, o.sel)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if o.sel.SpanID == "" && o.sel.TraceID == "" {
		// A span name's profile: one flame graph for all its spans.
		prof = profiler.AggregateSpans(prof)
	}
	svg, pb := o.out+".svg", o.out+store.Ext
	if err := writeFile(pb, prof.Write); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	title := "weft: " + o.sel.String()
	if o.service != "" {
		title += " in " + o.service
	}
	if err := writeFile(svg, func(f io.Writer) error { return profiler.WriteFlameGraph(f, prof, title) }); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	n, cpu := totals(prof)
	fmt.Fprintf(w, "flame graph  %s\npprof        %s\nsamples      %d (%v of CPU) from %d of %d files\n",
		svg, pb, n, time.Duration(cpu).Round(time.Millisecond), files.matched, files.read)
	return nil
}

type fileCounts struct{ read, matched int }

// collect merges the selected samples of every stored profile.
func collect(dir, service string, since time.Time, sel profiler.Selector) (*profile.Profile, fileCounts, error) {
	var c fileCounts
	list, err := store.List(dir, since, service)
	if err != nil {
		return nil, c, err
	}
	if len(list) == 0 {
		what := "no profiles in " + dir
		if service != "" {
			what += " for service " + service
		}
		if !since.IsZero() {
			what += " since " + since.Format(time.RFC3339)
		}
		return nil, c, errors.New(what + ": is weft running with --profile=on and --profile-dir set to it?")
	}
	var parts []*profile.Profile
	for _, f := range list {
		p, err := store.Read(f.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) { // deleted by retention meanwhile
				continue
			}
			return nil, c, err
		}
		c.read++
		if p = profiler.Filter(p, sel); len(p.Sample) > 0 {
			c.matched++
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, c, fmt.Errorf("no samples of %s in %d profiles under %s (a span gets samples only while it is on a CPU; at 19 Hz a span needs ~50 ms of CPU to be sure of one)", sel, c.read, dir)
	}
	merged, err := profile.Merge(parts)
	if err != nil {
		return nil, c, fmt.Errorf("merge profiles: %w", err)
	}
	return merged, c, nil
}

// totals sums the sample counts and CPU nanoseconds.
func totals(p *profile.Profile) (n, cpu int64) {
	ci, ni := -1, -1
	for i, st := range p.SampleType {
		switch st.Type {
		case "cpu":
			ci = i
		case "samples":
			ni = i
		}
	}
	for _, s := range p.Sample {
		if ni >= 0 {
			n += s.Value[ni]
		}
		if ci >= 0 {
			cpu += s.Value[ci]
		}
	}
	return n, cpu
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create output: %w", err)
	}
	if err := errors.Join(write(f), f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
