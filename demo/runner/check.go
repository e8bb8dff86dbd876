package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// verdict is what a group's traces say.
type verdict struct {
	group    group
	traces   []trace // every trace in the group's window
	mine     []trace // each request's own trace (its SERVER span's), by request; empty when not found
	summary  string  // one line: what was seen
	problems []string
}

func (v verdict) ok() bool { return len(v.problems) == 0 }

// uaKey is the attribute weft puts the request's User-Agent in.
const uaKey = "user_agent.original"

// judge compares the traces in a group's window with the shape its
// requests should make.
func judge(g group, traces []trace) verdict {
	v := verdict{group: g, traces: traces, mine: make([]trace, len(g.reqs))}
	ep := g.ep
	own := map[string]bool{}
	for i, r := range g.reqs {
		var found []trace
		for _, t := range traces {
			if slices.ContainsFunc(t.spans, func(s span) bool {
				return s.kind == "server" && s.service == ep.service && s.tags[uaKey] == r.ua
			}) {
				found = append(found, t)
			}
		}
		switch len(found) {
		case 0:
			v.problems = append(v.problems, fmt.Sprintf("request #%d: no trace holds its %s SERVER span", i+1, ep.service))
			continue
		case 1:
		default:
			v.problems = append(v.problems, fmt.Sprintf("request #%d: its SERVER span is in %d traces", i+1, len(found)))
		}
		v.mine[i] = found[0]
		own[found[0].id] = true
		var err error
		switch ep.want {
		case shapeWhole:
			err = wholeTree(found[0], ep.service, ep.path, ep.calls)
		case shapeSplit:
			err = aloneTree(found[0], ep.service, ep.path)
		case shapeSingle:
			err = aloneTree(found[0], ep.service, ep.path)
		}
		if err != nil {
			v.problems = append(v.problems, fmt.Sprintf("request #%d: %v:\n%s", i+1, err, indent(renderTree(found[0]), "      ")))
		}
	}
	// What else is in the window: nothing when requests are whole; each
	// backend call's own trace when they split.
	var others []trace
	for _, t := range traces {
		if !own[t.id] {
			others = append(others, t)
		}
	}
	n := len(g.reqs)
	switch ep.want {
	case shapeWhole, shapeSingle:
		for _, t := range others {
			v.problems = append(v.problems, fmt.Sprintf("a trace of no request (%d spans):\n%s", len(t.spans), indent(renderTree(t), "      ")))
		}
	case shapeSplit:
		if len(others) != n*ep.calls {
			v.problems = append(v.problems, fmt.Sprintf("%d traces besides the requests' own, want %d (one per backend call)", len(others), n*ep.calls))
		}
		for _, t := range others {
			if err := callTree(t, ep.service); err != nil {
				v.problems = append(v.problems, fmt.Sprintf("%v:\n%s", err, indent(renderTree(t), "      ")))
			}
		}
	}
	v.summary = fmt.Sprintf("%d requests → %d traces", n, len(traces))
	switch {
	case !v.ok():
	case ep.want == shapeWhole:
		v.summary += ", each one whole tree"
	case ep.want == shapeSplit:
		v.summary += fmt.Sprintf(": each request split in %d", 1+ep.calls)
	}
	return v
}

// roots are the spans whose parent is not in the trace.
func roots(t trace) []span {
	var r []span
	for _, s := range t.spans {
		if _, ok := t.byID(s.parent); s.parent == "" || !ok {
			r = append(r, s)
		}
	}
	return r
}

func isServer(s span, service, path string) bool {
	return s.service == service && s.kind == "server" && (path == "" || s.tags["url.path"] == path)
}

// wholeTree checks one request's trace: front SERVER at the root, `calls`
// front CLIENT spans under it, one backend SERVER under each, nothing else.
func wholeTree(t trace, front, path string, calls int) error {
	rs := roots(t)
	if len(rs) != 1 || !isServer(rs[0], front, path) {
		return fmt.Errorf("want one root, the %s SERVER span of %s; the trace has %d roots", front, path, len(rs))
	}
	root := rs[0]
	clients := map[string]int{} // CLIENT span id → backend SERVER spans under it
	for _, s := range t.spans {
		if s.service == front && s.kind == "client" {
			if s.parent != root.id {
				return fmt.Errorf("%s CLIENT span %s is not under the request's SERVER span", front, s.id)
			}
			clients[s.id] = 0
		}
	}
	for _, s := range t.spans {
		if s.service == "backend" && s.kind == "server" {
			if _, ok := clients[s.parent]; !ok {
				return fmt.Errorf("backend SERVER span %s is not under a %s CLIENT span", s.id, front)
			}
			clients[s.parent]++
		}
	}
	if len(clients) != calls {
		return fmt.Errorf("%d %s CLIENT spans, want %d", len(clients), front, calls)
	}
	for id, n := range clients {
		if n != 1 {
			return fmt.Errorf("%d backend SERVER spans under CLIENT span %s, want 1", n, id)
		}
	}
	if want := 1 + 2*calls; len(t.spans) != want {
		return fmt.Errorf("%d spans, want %d", len(t.spans), want)
	}
	return nil
}

// aloneTree checks a trace of one SERVER span.
func aloneTree(t trace, service, path string) error {
	if len(t.spans) != 1 || !isServer(t.spans[0], service, path) {
		return fmt.Errorf("want the %s SERVER span of %s alone, the trace has %d spans", service, path, len(t.spans))
	}
	return nil
}

// callTree checks the trace of a backend call made outside any request:
// the front's CLIENT span at the root, the backend's SERVER span under it.
func callTree(t trace, front string) error {
	rs := roots(t)
	if len(t.spans) != 2 || len(rs) != 1 || rs[0].service != front || rs[0].kind != "client" {
		return fmt.Errorf("want a %s CLIENT span with the backend's SERVER span under it", front)
	}
	for _, s := range t.spans {
		if s.id != rs[0].id && (s.service != "backend" || s.kind != "server" || s.parent != rs[0].id) {
			return fmt.Errorf("want the backend's SERVER span under the %s CLIENT span", front)
		}
	}
	return nil
}

// expectedSpans is how many spans a group's requests make, however they
// are split into traces.
func expectedSpans(g group) int {
	if g.ep.want == shapeSingle {
		return len(g.reqs)
	}
	return len(g.reqs) * (1 + 2*g.ep.calls)
}

func countSpans(ts []trace) int {
	n := 0
	for _, t := range ts {
		n += len(t.spans)
	}
	return n
}

// splitFor picks the traces of one request of a split group: its own, and
// the call traces that began while it ran.
func splitFor(v verdict, i int) []trace {
	r := v.group.reqs[i]
	out := []trace{v.mine[i]}
	for _, t := range v.traces {
		b := t.begin()
		if t.id != v.mine[i].id && !b.Before(r.start.Add(-windowMargin)) && !b.After(r.end.Add(windowMargin)) {
			out = append(out, t)
		}
	}
	return out
}

// failures joins the problems of the asserted groups that failed.
func failures(vs []verdict) error {
	var errs []error
	for _, v := range vs {
		if v.group.ep.assert && !v.ok() {
			errs = append(errs, fmt.Errorf("%s: %s", v.group.ep.title(), strings.Join(v.problems, "\n    ")))
		}
	}
	return errors.Join(errs...)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
