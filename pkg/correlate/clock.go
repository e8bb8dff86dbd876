package correlate

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Clock maps the kernel's monotonic timestamps (bpf_ktime_get_ns) to wall
// time. The offset is re-read on Refresh so that NTP steps are followed.
type Clock struct {
	offset atomic.Int64 // wall ns minus monotonic ns
}

// NewClock returns a clock with a fresh offset.
func NewClock() *Clock {
	c := &Clock{}
	c.Refresh()
	return c
}

// Refresh re-reads both clocks.
func (c *Clock) Refresh() {
	var ts unix.Timespec
	before := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return // keep the previous offset; CLOCK_MONOTONIC cannot fail on Linux
	}
	after := time.Now()
	mid := before.UnixNano() + after.Sub(before).Nanoseconds()/2
	c.offset.Store(mid - ts.Nano())
}

// Wall converts a monotonic timestamp.
func (c *Clock) Wall(mono uint64) time.Time {
	return time.Unix(0, int64(mono)+c.offset.Load())
}

// Monotonic returns the current monotonic time in nanoseconds.
func Monotonic() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// fixedClock is for tests: wall = epoch + mono.
func fixedClock(epoch time.Time) *Clock {
	c := &Clock{}
	c.offset.Store(epoch.UnixNano())
	return c
}
