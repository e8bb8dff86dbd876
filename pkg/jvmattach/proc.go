package jvmattach

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// process is what the attach needs from /proc/<pid>/status. Ids are as seen
// from weft's own user namespace, which is also how the kernel compares them.
type process struct {
	pid        int
	nspid      int // pid inside the process's own pid namespace: HotSpot names its files after it
	uid        int // effective uid
	gid        int // effective gid
	groups     []int
	quitCaught bool // SIGQUIT has a handler; sending it otherwise would kill the process
	zombie     bool
}

// readProcess reads /proc/<pid>/status.
func readProcess(pid int) (process, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return process{}, ErrNoProcess
		}
		return process{}, fmt.Errorf("read status: %w", err)
	}
	p, err := parseStatus(pid, b)
	if err != nil {
		return process{}, fmt.Errorf("parse /proc/%d/status: %w", pid, err)
	}
	if p.zombie {
		return process{}, fmt.Errorf("%w (it has exited)", ErrNoProcess)
	}
	return p, nil
}

func parseStatus(pid int, b []byte) (process, error) {
	p := process{pid: pid, nspid: pid}
	var haveUID, haveGID bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		switch key {
		case "State":
			p.zombie = len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
		case "Uid", "Gid":
			// real, effective, saved, filesystem
			if len(fields) < 2 {
				return process{}, fmt.Errorf("%s line has %d fields", key, len(fields))
			}
			id, err := strconv.Atoi(fields[1])
			if err != nil {
				return process{}, fmt.Errorf("effective %s: %w", key, err)
			}
			if key == "Uid" {
				p.uid, haveUID = id, true
			} else {
				p.gid, haveGID = id, true
			}
		case "Groups":
			for _, f := range fields {
				g, err := strconv.Atoi(f)
				if err != nil {
					return process{}, fmt.Errorf("groups: %w", err)
				}
				p.groups = append(p.groups, g)
			}
		case "NSpid":
			// Outermost first; the last one is the pid the JVM sees itself as.
			// Kernels before 4.1 lack the line and the pid is then the same.
			if len(fields) == 0 {
				continue
			}
			n, err := strconv.Atoi(fields[len(fields)-1])
			if err != nil {
				return process{}, fmt.Errorf("NSpid: %w", err)
			}
			p.nspid = n
		case "SigCgt":
			if len(fields) == 0 {
				continue
			}
			mask, err := strconv.ParseUint(fields[0], 16, 64)
			if err != nil {
				return process{}, fmt.Errorf("SigCgt: %w", err)
			}
			p.quitCaught = mask&(1<<(uint(syscall.SIGQUIT)-1)) != 0
		}
	}
	if err := sc.Err(); err != nil {
		return process{}, err
	}
	if !haveUID || !haveGID {
		return process{}, errors.New("no Uid or Gid line")
	}
	return p, nil
}

type vmKind int

const (
	vmNone vmKind = iota
	vmHotSpot
	vmOpenJ9
)

// IsHotSpot reports whether pid is a HotSpot JVM (OpenJDK, Oracle, Temurin,
// Corretto, ...), the kind Attach can load an agent into. It fails with
// ErrNoProcess when there is no such process.
func IsHotSpot(pid int) (bool, error) {
	k, err := detectVM(pid)
	if err != nil {
		return false, fmt.Errorf("inspect %d: %w", pid, err)
	}
	return k == vmHotSpot, nil
}

// detectVM looks for the VM library among the process's mappings: it is
// there whatever the launcher (java, a custom binary embedding the JVM,
// jsvc) and whatever the executable is called.
func detectVM(pid int) (vmKind, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return vmNone, ErrNoProcess
		}
		return vmNone, fmt.Errorf("read maps: %w", err)
	}
	defer f.Close()
	return scanMaps(f)
}

func scanMaps(f io.Reader) (vmKind, error) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var jvm, j9 bool
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), " (deleted)") // the JDK was upgraded under a running JVM
		i := strings.LastIndexByte(line, '/')
		if i < 0 {
			continue
		}
		name := line[i+1:]
		switch {
		case name == "libjvm.so":
			jvm = true
		case strings.HasPrefix(name, "libj9vm"):
			j9 = true
		}
	}
	if err := sc.Err(); err != nil {
		return vmNone, fmt.Errorf("read maps: %w", err)
	}
	switch {
	case j9:
		// OpenJ9 ships a libjvm.so too, as a shim in front of libj9vm.
		return vmOpenJ9, nil
	case jvm:
		return vmHotSpot, nil
	}
	return vmNone, nil
}
