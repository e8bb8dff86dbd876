package tracer

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// maxLoadGroups bounds the groups: each keeps its own copy of the
// object's BTF in the kernel, and past a few the largest program alone
// sets the time.
const maxLoadGroups = 4

// newCollection loads spec as ebpf.NewCollectionWithOptions does, but
// verifies its programs side by side, a group per CPU (up to
// maxLoadGroups): verification is most of weft's start-up (a few programs
// inline the whole data path), and the kernel runs a privileged load's
// verifier without a global lock. The maps are created first, once;
// every group links against them.
func newCollection(spec *ebpf.CollectionSpec, replace map[string]*ebpf.Map) (*ebpf.Collection, error) {
	cache := btf.NewCache()
	mapsOnly := spec.Copy()
	mapsOnly.Programs = map[string]*ebpf.ProgramSpec{}
	coll, err := ebpf.NewCollectionWithOptions(mapsOnly, ebpf.CollectionOptions{MapReplacements: replace, Cache: cache})
	if err != nil {
		return nil, fmt.Errorf("create maps: %w", err)
	}
	coll.Programs = map[string]*ebpf.Program{}
	groups := programGroups(spec, min(runtime.NumCPU(), maxLoadGroups))
	loaded := make([]*ebpf.Collection, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, names := range groups {
		wg.Go(func() {
			sub := spec.Copy()
			for name := range sub.Programs {
				if !slices.Contains(names, name) {
					delete(sub.Programs, name)
				}
			}
			loaded[i], errs[i] = ebpf.NewCollectionWithOptions(sub, ebpf.CollectionOptions{MapReplacements: coll.Maps, Cache: cache})
		})
	}
	wg.Wait()
	for _, c := range loaded {
		if c == nil {
			continue
		}
		for name, p := range c.Programs {
			coll.Programs[name] = p
		}
		c.Programs = nil
		c.Close() // its clones of the maps
	}
	if err := errors.Join(errs...); err != nil {
		coll.Close()
		return nil, err
	}
	return coll, nil
}

// programGroups splits spec's programs into at most n groups of about
// equal size (instructions, a rough measure of verification time),
// largest first.
func programGroups(spec *ebpf.CollectionSpec, n int) [][]string {
	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		names = append(names, name)
	}
	size := func(name string) int { return len(spec.Programs[name].Instructions) }
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(size(b), size(a)), cmp.Compare(a, b))
	})
	n = max(1, min(n, len(names)))
	groups := make([][]string, n)
	totals := make([]int, n)
	for _, name := range names {
		i := slices.Index(totals, slices.Min(totals))
		groups[i] = append(groups[i], name)
		totals[i] += size(name)
	}
	return groups
}
