package tracer

import (
	"strconv"
	"syscall"
)

// netNSOf is process pid's network namespace, by the inode of its
// /proc/PID/ns/net; false when it cannot be read (the process is gone).
func netNSOf(pid uint32) (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.FormatUint(uint64(pid), 10)+"/ns/net", &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// NetNS is a process's network namespace: as read when weft set the
// process up, so that a process that has exited by the time its events
// are read still has one; else read now.
func (t *Tracer) NetNS(pid uint32) (uint64, bool) {
	t.rtMu.Lock()
	ns, ok := t.netns[pid]
	t.rtMu.Unlock()
	if ok {
		return ns, true
	}
	return netNSOf(pid)
}
