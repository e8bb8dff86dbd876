package selector

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const tcpListen = "0A" // TCP_LISTEN in /proc/net/tcp's st column

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
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // no IPv6 on this host
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	want := map[int]bool{}
	for _, p := range ports {
		want[p] = true
	}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fl := strings.Fields(sc.Text())
		if len(fl) < 10 || fl[3] != tcpListen {
			continue
		}
		_, portHex, ok := strings.Cut(fl[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseInt(portHex, 16, 32)
		if err == nil && want[int(port)] {
			into[fl[9]] = true
		}
	}
	return sc.Err()
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
