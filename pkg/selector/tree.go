package selector

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// parents maps every process of a /proc tree to its parent.
func parents(proc string) (map[int]int, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := make(map[int]int, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(proc, pid); ok {
			out[pid] = pp
		}
	}
	return out, nil
}

// parentOf reads the parent pid from /proc/PID/stat: the fourth field,
// counted after the command name's closing parenthesis (the name may hold
// spaces and parentheses itself).
func parentOf(proc string, pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // state ppid ...
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(string(f[1]))
	return pp, err == nil
}

// descendants lists the processes below root in the tree parent describes.
func descendants(parent map[int]int, root int) []int {
	children := map[int][]int{}
	for p, pp := range parent {
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
