package profiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// frameClass decides a flame graph frame's colour.
type frameClass uint8

const (
	classUser frameClass = iota
	classKernel
	classJIT
	classUnresolved
)

// flameNode is one frame of the merged call tree: all samples that share
// the path from the root to it.
type flameNode struct {
	name     string
	class    frameClass
	value    int64
	children map[string]*flameNode
}

// sortedChildren returns children by name, as classic flame graphs order
// them; it is what makes the output deterministic.
func (n *flameNode) sortedChildren() []*flameNode {
	out := make([]*flameNode, 0, len(n.children))
	for _, c := range n.children {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *flameNode) int { return strings.Compare(a.name, b.name) })
	return out
}

func (n *flameNode) child(name string, class frameClass) *flameNode {
	c, ok := n.children[name]
	if !ok {
		c = &flameNode{name: name, class: class, children: map[string]*flameNode{}}
		n.children[name] = c
	}
	return c
}

// valueIndex picks the sample value to size frames by: the sample count
// when there is one, else the profile's default type.
func valueIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "samples" {
			return i
		}
	}
	for i, st := range p.SampleType {
		if st.Type == p.DefaultSampleType {
			return i
		}
	}
	return 0
}

// flameTree merges p's samples into a call tree rooted at "all".
func flameTree(p *profile.Profile) *flameNode {
	root := &flameNode{name: "all", class: classUnresolved, children: map[string]*flameNode{}}
	vi := valueIndex(p)
	for _, s := range p.Sample {
		if vi >= len(s.Value) || s.Value[vi] <= 0 {
			continue
		}
		v := s.Value[vi]
		root.value += v
		n := root
		// Samples list locations leaf first, and a location's lines
		// innermost (inlined) first; the tree grows from the root.
		for i := len(s.Location) - 1; i >= 0; i-- {
			loc := s.Location[i]
			if len(loc.Line) == 0 {
				n = n.child(fmt.Sprintf("%#x", loc.Address), classUnresolved)
				n.value += v
				continue
			}
			for j := len(loc.Line) - 1; j >= 0; j-- {
				name := "?"
				if fn := loc.Line[j].Function; fn != nil {
					name = fn.Name
				}
				n = n.child(name, classify(loc, name))
				n.value += v
			}
		}
	}
	return root
}

func classify(loc *profile.Location, name string) frameClass {
	mapping := ""
	if loc.Mapping != nil {
		mapping = loc.Mapping.File
	}
	switch {
	case mapping == MappingKernel:
		return classKernel
	case mapping == MappingJIT:
		return classJIT
	case unresolvedName(name):
		return classUnresolved
	default:
		return classUser
	}
}

// unresolvedName recognises the names symbolize gives frames it could
// not resolve: "[anon] 0x…", "[unknown] 0x…", "libfoo.so+0x1234".
func unresolvedName(name string) bool {
	if strings.HasPrefix(name, "[") {
		return true
	}
	i := strings.LastIndex(name, "+0x")
	if i <= 0 || i+3 == len(name) {
		return false
	}
	return strings.Trim(name[i+3:], "0123456789abcdef") == ""
}
