package correlate

import (
	"errors"
	"fmt"
	"strings"
)

// Router names a path's route: by the first user pattern that matches it,
// else by Route's heuristics. Patterns are what the service's framework
// would call its routes, e.g. "/api/users/{id}/orders" or "/static/**":
// "{name}" or "*" matches one path segment, "**" as the last segment any
// rest (none included); other segments match themselves.
type Router struct {
	patterns []routePattern
}

type routePattern struct {
	text string
	segs []string
	rest bool // ends in "**"
}

// NewRouter checks and compiles patterns.
func NewRouter(patterns []string) (*Router, error) {
	r := &Router{}
	for _, p := range patterns {
		rp, err := compileRoute(p)
		if err != nil {
			return nil, fmt.Errorf("route pattern %q: %w", p, err)
		}
		r.patterns = append(r.patterns, rp)
	}
	return r, nil
}

func compileRoute(p string) (routePattern, error) {
	if !strings.HasPrefix(p, "/") {
		return routePattern{}, errors.New("want a path starting with /")
	}
	segs := strings.Split(p[1:], "/")
	rp := routePattern{text: p}
	for i, s := range segs {
		if s == "**" {
			if i != len(segs)-1 {
				return routePattern{}, errors.New(`"**" only as the last segment`)
			}
			rp.rest = true
			segs = segs[:i]
			break
		}
		if strings.Contains(s, "*") && s != "*" {
			return routePattern{}, fmt.Errorf("segment %q: \"*\" only as a whole segment", s)
		}
	}
	rp.segs = segs
	return rp, nil
}

// Route returns the route of path.
func (r *Router) Route(path string) string {
	if r != nil && len(r.patterns) > 0 && strings.HasPrefix(path, "/") {
		for i := range r.patterns {
			if r.patterns[i].match(path[1:]) {
				return r.patterns[i].text
			}
		}
	}
	return Route(path)
}

func (p *routePattern) match(path string) bool {
	segs := strings.Split(path, "/")
	if len(segs) < len(p.segs) || !p.rest && len(segs) != len(p.segs) {
		return false
	}
	for i, want := range p.segs {
		switch {
		case want == "*", len(want) > 2 && want[0] == '{' && want[len(want)-1] == '}':
			if segs[i] == "" {
				return false
			}
		case want != segs[i]:
			return false
		}
	}
	return true
}
