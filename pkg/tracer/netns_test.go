package tracer

import (
	"os"
	"syscall"
	"testing"
)

// This process's namespace is the one /proc/self names; a pid that does
// not exist has none.
func TestNetNSOf(t *testing.T) {
	var self syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &self); err != nil {
		t.Fatal(err)
	}
	if got, ok := netNSOf(uint32(os.Getpid())); !ok || got != self.Ino || got == 0 {
		t.Errorf("netNSOf(self) = %d, %v; want %d", got, ok, self.Ino)
	}
	if got, ok := netNSOf(1 << 30); ok {
		t.Errorf("netNSOf of no process = %d, want none", got)
	}
}
