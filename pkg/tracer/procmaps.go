package tracer

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// mapping is a file process pid mapped, named two ways from here: through
// the process's root (its mount namespace), and through its map_files
// entry, which opens the file even once it was unlinked.
type mapping struct {
	root, mapFile string
	// start is where the mapping begins in the process, offset the file
	// offset mapped there.
	start, offset uint64
}

// findMapping is the first file in /proc/pid/maps whose base name matches;
// ok is false when none does.
func findMapping(pid int, match func(base string) bool) (m mapping, ok bool, err error) {
	proc := "/proc/" + strconv.Itoa(pid)
	f, err := os.Open(proc + "/maps")
	if err != nil {
		return mapping{}, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && match(filepath.Base(fields[5])) {
			m := mapping{root: proc + "/root" + fields[5], mapFile: proc + "/map_files/" + fields[0]}
			start, _, _ := strings.Cut(fields[0], "-")
			var err1, err2 error
			m.start, err1 = strconv.ParseUint(start, 16, 64)
			m.offset, err2 = strconv.ParseUint(fields[2], 16, 64)
			if err := errors.Join(err1, err2); err != nil {
				return mapping{}, false, fmt.Errorf("%s/maps: %q: %w", proc, sc.Text(), err)
			}
			return m, true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return mapping{}, false, fmt.Errorf("read %s/maps: %w", proc, err)
	}
	return mapping{}, false, nil
}

// statFileID is the device and inode of the regular file at path: one
// name for a file however a process reaches it (its root, map_files,
// /proc/pid/exe).
func statFileID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fileID{}, fmt.Errorf("stat %s: not a regular file with an inode", path)
	}
	return fileID{st.Dev, st.Ino}, nil
}
