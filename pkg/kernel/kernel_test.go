package kernel

import (
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/testenv"
)

func TestMounts(t *testing.T) {
	in := "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n" +
		"tracefs /sys/kernel/tracing tracefs rw 0 0\n" +
		"/dev/vda /mnt/with\\040space ext4 rw 0 0\n"
	ms, err := Mounts(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0].FSType != "cgroup2" || ms[0].Target != "/sys/fs/cgroup/unified" {
		t.Fatalf("mounts %+v", ms)
	}
	if ms[2].Target != "/mnt/with space" {
		t.Errorf("octal escape not undone: %q", ms[2].Target)
	}
}

func TestParseLockdown(t *testing.T) {
	for in, want := range map[string]string{
		"none [integrity] confidentiality\n": "integrity",
		"[none] integrity confidentiality":   "none",
		"garbage":                            "unknown",
	} {
		if got := ParseLockdown(in); got != want {
			t.Errorf("ParseLockdown(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChoosePath(t *testing.T) {
	withKprobes := Features{Kprobes: true, Tracefs: "/t", SockLengthTracepoints: true, SkMsgReadsRegs: true}
	without := Features{Tracefs: "/t", SockLengthTracepoints: true, SkMsgReadsRegs: true}
	noRegs := Features{Tracefs: "/t", SockLengthTracepoints: true}
	old := Features{Tracefs: "/t"}
	cases := []struct {
		f       Features
		want    string
		path    Path
		wantErr bool
	}{
		{withKprobes, "auto", PathKprobe, false},
		{without, "auto", PathTracepoint, false},
		{without, "kprobe", "", true},
		{withKprobes, "tracepoint", PathTracepoint, false},
		{noRegs, "auto", PathSyscalls, false},
		{noRegs, "tracepoint", "", true},
		{noRegs, "syscalls", PathSyscalls, false},
		{without, "syscalls", PathSyscalls, false},
		{old, "syscalls", "", true},
		{old, "auto", "", true},
		{withKprobes, "fentry", "", true},
	}
	for _, c := range cases {
		p, err := c.f.ChoosePath(c.want)
		if (err != nil) != c.wantErr || p != c.path {
			t.Errorf("%+v ChoosePath(%q) = %q, %v", c.f, c.want, p, err)
		}
	}
}

// Every kernel weft is tested on has what its programs need; the QEMU
// guests (6.1, 6.12) run this check through weft's start-up.
func TestBPFFloor(t *testing.T) {
	testenv.RequirePrivileged(t)
	if err := CheckBPFFloor(); err != nil {
		t.Fatal(err)
	}
}
