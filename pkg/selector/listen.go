package selector

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weftdev/weft/pkg/procinfo"
)

// ListeningPIDs returns the processes that own a listening TCP socket
// (IPv4 or IPv6) on one of the ports.
func ListeningPIDs(procRoot string, ports []int) ([]int, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		if err := listenInodes(filepath.Join(procRoot, f), ports, inodes); err != nil {
			return nil, err
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ownsSocket(filepath.Join(procRoot, e.Name(), "fd"), inodes) {
			out = append(out, pid)
		}
	}
	return out, nil
}

func listenInodes(path string, ports []int, into map[string]bool) error {
	socks, err := procinfo.TCPTable(path)
	if err != nil {
		return err
	}
	want := map[int]bool{}
	for _, p := range ports {
		want[p] = true
	}
	for _, s := range socks {
		if s.State == procinfo.TCPListen && want[s.LocalPort] {
			into[s.Inode] = true
		}
	}
	return nil
}

func ownsSocket(fdDir string, inodes map[string]bool) bool {
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false // gone, or not ours to read
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true
		}
	}
	return false
}
