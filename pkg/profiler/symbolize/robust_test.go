package symbolize

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestVanishedProcess: nothing about the pid can be read, yet every
// address yields a frame that keeps it.
func TestVanishedProcess(t *testing.T) {
	s := newTestSymbolizer("")
	const pid = 0x3ffffff0 // above any pid_max
	frames := s.Symbolize(pid, []uint64{0x401000, 0x402000, 0, 0}, nil)
	if len(frames) != 2 {
		t.Fatalf("got %d frames: %+v", len(frames), frames)
	}
	if f := frames[0]; f.Resolved() || f.Address != 0x401000 || f.Name() != "[unknown] 0x401000" {
		t.Fatalf("got %+v (%s)", f, f.Name())
	}
}

// TestUnreadableBinaries covers files that are missing, not ELF, or cut
// short: the frame keeps the mapping's name and the file offset.
func TestUnreadableBinaries(t *testing.T) {
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 8192)
	_, _ = rand.Read(junk)
	copy(junk, "\x7fELF\x02\x01\x01")

	root := fakeProc(t, "77", `00400000-00500000 r-xp 00001000 08:01 11 /opt/app/libgone.so
00600000-00700000 r-xp 00002000 08:01 12 /opt/app/libjunk.so
00800000-00900000 r-xp 00000000 08:01 13 /opt/app/truncated
00a00000-00b00000 r-xp 00000000 08:01 14 /opt/app/replaced (deleted)
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
`)
	fs := filepath.Join(root, "77", "root", "opt", "app")
	writeFile(t, filepath.Join(fs, "libjunk.so"), string(junk))
	writeFile(t, filepath.Join(fs, "truncated"), string(self[:len(self)/3]))
	writeFile(t, filepath.Join(fs, "replaced"), string(self)) // must not be read: not what was mapped

	s := newTestSymbolizer(root)
	cases := map[uint64]string{
		0x400010:           "libgone.so+0x1010",
		0x600020:           "libjunk.so+0x2020",
		0xa00000:           "replaced+0x0",
		0xffffffffff600400: "[vsyscall] 0xffffffffff600400",
	}
	for addr, want := range cases {
		f := one(t, s.Symbolize(77, []uint64{addr}, nil))
		if f.Resolved() || f.Name() != want || f.Address != addr {
			t.Errorf("%#x: got %+v (%s), want %s", addr, f, f.Name(), want)
		}
	}
	// A truncated binary may or may not still name things; it must not
	// take the symbolizer down.
	f := one(t, s.Symbolize(77, []uint64{0x800000 + 0x1000}, nil))
	if f.Address != 0x801000 || f.Module != "/opt/app/truncated" {
		t.Errorf("truncated: got %+v", f)
	}
}

// TestOwnVDSO resolves a vDSO function of this test process.
func TestOwnVDSO(t *testing.T) {
	vdso, err := readOwnVDSO()
	if err != nil {
		t.Skipf("no vdso: %v", err)
	}
	if len(vdso.syms) == 0 {
		t.Skip("vdso exports no functions")
	}
	want := vdso.syms[0]
	maps := readOwnMaps(t)
	var start uint64
	for _, m := range maps {
		if m.path == vdsoPath {
			start = m.start
		}
	}
	// The vDSO links at 0, so its load address plus a symbol's value is
	// where the function runs.
	addr := start + want.start + 1
	f := one(t, newTestSymbolizer("").Symbolize(uint32(os.Getpid()), []uint64{addr}, nil))
	if f.Function != want.name || f.Module != vdsoPath {
		t.Fatalf("got %+v, want %s", f, want.name)
	}
}

func readOwnMaps(t *testing.T) []mapping {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	maps, err := parseMaps(f)
	if err != nil {
		t.Fatal(err)
	}
	return maps
}
