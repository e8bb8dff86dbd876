package procinfo

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TCP states as /proc/net/tcp's st column writes them.
const (
	TCPEstablished = "01"
	TCPListen      = "0A"
)

// TCPSocket is one line of /proc/net/tcp or tcp6.
type TCPSocket struct {
	LocalPort int
	State     string // TCPListen, TCPEstablished, ...
	Inode     string
}

// TCPTable reads a /proc net/tcp or net/tcp6 file; a missing one (no IPv6
// on the host) is empty.
func TCPTable(path string) ([]TCPSocket, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	var out []TCPSocket
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fl := strings.Fields(sc.Text())
		if len(fl) < 10 {
			continue
		}
		i := strings.LastIndexByte(fl[1], ':')
		if i < 0 {
			continue
		}
		port, err := strconv.ParseInt(fl[1][i+1:], 16, 32)
		if err != nil {
			continue
		}
		out = append(out, TCPSocket{LocalPort: int(port), State: fl[3], Inode: fl[9]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// SocketInodes are the inodes of the sockets process pid holds open.
func SocketInodes(pid int) (map[string]bool, error) {
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	return inodes, nil
}

// NetTCP is every TCP socket of process pid's network namespace (IPv4
// and IPv6), whoever holds it.
func NetTCP(pid int) ([]TCPSocket, error) {
	var all []TCPSocket
	for _, table := range []string{"tcp", "tcp6"} {
		socks, err := TCPTable(filepath.Join("/proc", strconv.Itoa(pid), "net", table))
		if err != nil {
			return nil, err
		}
		all = append(all, socks...)
	}
	return all, nil
}

// ConnectedOut says whether process pid holds an established TCP
// connection it did not accept: one whose local port no socket of its
// network namespace listens on (an accepted one has its listener's).
func ConnectedOut(pid int) (bool, error) {
	inodes, err := SocketInodes(pid)
	if err != nil || len(inodes) == 0 {
		return false, err
	}
	socks, err := NetTCP(pid)
	if err != nil {
		return false, err
	}
	listening := map[int]bool{}
	for _, s := range socks {
		if s.State == TCPListen {
			listening[s.LocalPort] = true
		}
	}
	for _, s := range socks {
		if s.State == TCPEstablished && inodes[s.Inode] && !listening[s.LocalPort] {
			return true, nil
		}
	}
	return false, nil
}
