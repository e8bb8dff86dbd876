package symbolize

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestKallsymsFixture(t *testing.T) {
	s := New(Options{KallsymsPath: "testdata/kallsyms"})
	cases := []struct {
		addr   uint64
		name   string
		module string
	}{
		{0xffffffff81000000, "startup_64", ""}, // not the _stext marker
		{0xffffffff81000150, "secondary_startup_64", ""},
		{0xffffffff81001900, "do_one_initcall", ""}, // data symbols do not end functions
		{0xffffffff81002010, "vfs_read", ""},
		{0xffffffff81003004, "weak_text_fn", ""},
		{0xffffffffc0a00210, "nf_ct_get_tuple", "[nf_conntrack]"},
		{0xffffffffc0b00040, "ext4_file_read_iter", "[ext4]"},
		{0xffffffff80000000, "", ""},         // below the first symbol
		{0xffffffff81003000 + 2<<20, "", ""}, // in the gap after the core kernel
	}
	for _, c := range cases {
		f := one(t, s.Symbolize(1, nil, []uint64{c.addr}))
		if f.Function != c.name || f.File != c.module || f.Kind != KindKernel || f.Address != c.addr {
			t.Errorf("%#x: got %+v, want %q %q", c.addr, f, c.name, c.module)
		}
		if c.name == "" && f.Name() != "[kernel] unknown" {
			t.Errorf("%#x: name %q", c.addr, f.Name())
		}
	}
}

func TestKallsymsReturnAddress(t *testing.T) {
	s := New(Options{KallsymsPath: "testdata/kallsyms"})
	// A caller frame at the first byte of vfs_write returns from a call at
	// the end of vfs_read.
	frames := s.Symbolize(1, nil, []uint64{0xffffffff81002400, 0xffffffff81002400})
	if frames[0].Function != "vfs_write" || frames[1].Function != "vfs_read" {
		t.Fatalf("got %q %q", frames[0].Function, frames[1].Function)
	}
}

func TestKallsymsHidden(t *testing.T) {
	for _, path := range []string{"testdata/kallsyms-hidden", "testdata/does-not-exist"} {
		s := New(Options{KallsymsPath: path})
		f := one(t, s.Symbolize(1, nil, []uint64{0xffffffff81002010}))
		if f.Resolved() || f.Name() != "[kernel] unknown" || f.Address != 0xffffffff81002010 {
			t.Errorf("%s: got %+v (%s)", path, f, f.Name())
		}
	}
}

// TestKallsymsReal resolves an address inside a function of the running
// kernel, as read from the real /proc/kallsyms.
func TestKallsymsReal(t *testing.T) {
	addr, name := realKernelFunction(t)
	s := New(Options{})
	f := one(t, s.Symbolize(1, nil, []uint64{addr + 1}))
	if f.Function != name {
		t.Fatalf("%#x: got %q, want %q", addr+1, f.Function, name)
	}
}

// realKernelFunction picks a well-known core kernel function.
func realKernelFunction(t *testing.T) (uint64, string) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Skipf("no kallsyms: %v", err)
	}
	defer f.Close()
	want := map[string]bool{"vfs_read": true, "do_sys_openat2": true, "schedule": true}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || !want[fields[2]] || (fields[1] != "T" && fields[1] != "t") {
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if addr == 0 {
			t.Skip("kernel addresses hidden (kptr_restrict); run as root")
		}
		return addr, fields[2]
	}
	t.Skip("no well-known function in kallsyms")
	return 0, ""
}
