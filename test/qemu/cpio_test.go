package qemu

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"testing"
)

type cpioEntry struct {
	mode uint32
	rdev [2]uint32
	data string
}

// readNewc parses a newc archive independently of the writer, checking
// alignment along the way.
func readNewc(t *testing.T, b []byte) map[string]cpioEntry {
	t.Helper()
	out := map[string]cpioEntry{}
	var off int64
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+int64(i)*8:off+6+int64(i+1)*8]), 16, 32)
		if err != nil {
			t.Fatalf("offset %d field %d: %v", off, i, err)
		}
		return uint32(v)
	}
	align := func(n int64) int64 { return (n + 3) &^ 3 }
	for {
		if off%4 != 0 {
			t.Fatalf("entry at unaligned offset %d", off)
		}
		if string(b[off:off+6]) != "070701" {
			t.Fatalf("bad magic at %d: %q", off, b[off:off+6])
		}
		size, nameLen := int64(field(6)), int64(field(11))
		nameStart := off + newcHeaderLen
		name := string(b[nameStart : nameStart+nameLen-1])
		if b[nameStart+nameLen-1] != 0 {
			t.Fatalf("%s: name not NUL-terminated", name)
		}
		dataStart := align(nameStart + nameLen)
		if name == "TRAILER!!!" {
			return out
		}
		out[name] = cpioEntry{
			mode: field(1),
			rdev: [2]uint32{field(9), field(10)},
			data: string(b[dataStart : dataStart+size]),
		}
		off = align(dataStart + size)
	}
}

func TestCPIORoundTrip(t *testing.T) {
	var buf bytes.Buffer
	cw := newCPIOWriter(&buf)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cw.Dir("dev", 0o755))
	must(cw.CharDev("dev/console", 0o600, 5, 1))
	// Sizes 0..4 exercise every padding length.
	for i := 0; i <= 4; i++ {
		data := bytes.Repeat([]byte("x"), i)
		must(cw.File(fmt.Sprintf("f%d", i), 0o644, int64(i), bytes.NewReader(data)))
	}
	must(cw.Symlink("bin/sh", "busybox"))
	must(cw.Close())

	got := readNewc(t, buf.Bytes())
	if e := got["dev"]; e.mode != syscall.S_IFDIR|0o755 {
		t.Errorf("dev mode %o", e.mode)
	}
	if e := got["dev/console"]; e.mode != syscall.S_IFCHR|0o600 || e.rdev != [2]uint32{5, 1} {
		t.Errorf("dev/console mode %o rdev %v", e.mode, e.rdev)
	}
	for i := 0; i <= 4; i++ {
		e := got[fmt.Sprintf("f%d", i)]
		if e.mode != syscall.S_IFREG|0o644 || len(e.data) != i {
			t.Errorf("f%d: mode %o, %d bytes", i, e.mode, len(e.data))
		}
	}
	if e := got["bin/sh"]; e.mode != syscall.S_IFLNK|0o777 || e.data != "busybox" {
		t.Errorf("bin/sh: mode %o target %q", e.mode, e.data)
	}
}

func TestCPIOShortFile(t *testing.T) {
	cw := newCPIOWriter(io.Discard)
	if err := cw.File("short", 0o644, 10, bytes.NewReader([]byte("abc"))); err == nil {
		t.Fatal("a reader shorter than the declared size was accepted")
	}
}
