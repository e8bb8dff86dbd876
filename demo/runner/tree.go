package main

import (
	"fmt"
	"slices"
	"strings"
)

// renderTree draws a trace as an indented tree, one span a line: service,
// span name, kind and duration in aligned columns, children under their
// parent in start order.
func renderTree(t trace) string {
	children := map[string][]span{}
	for _, s := range t.spans {
		if _, ok := t.byID(s.parent); ok {
			children[s.parent] = append(children[s.parent], s)
		}
	}
	type line struct{ left, name, kind, dur string }
	var lines []line
	var walk func(s span, lead, branch string)
	walk = func(s span, lead, branch string) {
		lines = append(lines, line{lead + branch + s.service, s.name, s.kind, ms(s.dur)})
		kids := children[s.id]
		slices.SortStableFunc(kids, func(a, b span) int { return a.start.Compare(b.start) })
		next := lead
		switch branch {
		case "├─ ":
			next += "│  "
		case "└─ ":
			next += "   "
		}
		for i, k := range kids {
			if i == len(kids)-1 {
				walk(k, next, "└─ ")
			} else {
				walk(k, next, "├─ ")
			}
		}
	}
	for _, r := range roots(t) {
		walk(r, "", "")
	}
	var wl, wn, wk, wd int
	for _, l := range lines {
		wl = max(wl, width(l.left))
		wn = max(wn, width(l.name))
		wk = max(wk, width(l.kind))
		wd = max(wd, width(l.dur))
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s  %s  %s  %s\n", pad(l.left, wl), pad(l.name, wn), pad(l.kind, wk),
			strings.Repeat(" ", wd-width(l.dur))+l.dur)
	}
	return b.String()
}

// width counts runes: the tree's box-drawing characters are one column each.
func width(s string) int { return len([]rune(s)) }

func pad(s string, w int) string { return s + strings.Repeat(" ", w-width(s)) }

// slowest is the longest span of the traces.
func slowest(ts []trace) (span, bool) {
	var best span
	found := false
	for _, t := range ts {
		for _, s := range t.spans {
			if !found || s.dur > best.dur {
				best, found = s, true
			}
		}
	}
	return best, found
}
