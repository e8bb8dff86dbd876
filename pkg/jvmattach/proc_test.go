package jvmattach

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const statusInContainer = `Name:	java
Umask:	0022
State:	S (sleeping)
Tgid:	4711
Ngid:	0
Pid:	4711
PPid:	4700
TracerPid:	0
Uid:	1000	1001	1001	1001
Gid:	2000	2001	2001	2001
FDSize:	256
Groups:	2001 3000 
NStgid:	4711	7
NSpid:	4711	7
NSpgid:	4711	7
SigPnd:	0000000000000000
ShdPnd:	0000000000000000
SigBlk:	0000000000000000
SigIgn:	0000000000000000
SigCgt:	0000000181005ccf
`

func TestParseStatus(t *testing.T) {
	p, err := parseStatus(4711, []byte(statusInContainer))
	if err != nil {
		t.Fatal(err)
	}
	if p.pid != 4711 || p.nspid != 7 || p.uid != 1001 || p.gid != 2001 || !p.quitCaught || p.zombie {
		t.Errorf("got %+v", p)
	}
	if !slices.Equal(p.groups, []int{2001, 3000}) {
		t.Errorf("groups %v", p.groups)
	}

	// Old kernel (no NSpid), SIGQUIT not caught yet, zombie.
	old := strings.NewReplacer("NSpid:\t4711\t7\n", "", "SigCgt:\t0000000181005ccf", "SigCgt:\t0000000000000000", "S (sleeping)", "Z (zombie)").Replace(statusInContainer)
	p, err = parseStatus(4711, []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if p.nspid != 4711 || p.quitCaught || !p.zombie {
		t.Errorf("got %+v", p)
	}

	if _, err := parseStatus(1, []byte("Name:\tx\n")); err == nil {
		t.Error("status without Uid: no error")
	}
}

func TestScanMaps(t *testing.T) {
	const libc = "7f0a1c000000-7f0a1c022000 r--p 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	for _, c := range []struct {
		name, maps string
		want       vmKind
	}{
		{"hotspot", libc + "7f0a1d000000-7f0a1d3f1000 r-xp 00000000 08:01 99 /usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so\n", vmHotSpot},
		{"hotspot, JDK replaced", libc + "7f0a1d000000-7f0a1d3f1000 r-xp 00000000 08:01 99 /opt/jdk/lib/server/libjvm.so (deleted)\n", vmHotSpot},
		{"openj9", libc + "7f00-7f01 r-xp 0 08:01 9 /opt/j9/lib/server/libjvm.so\n7f02-7f03 r-xp 0 08:01 9 /opt/j9/lib/default/libj9vm29.so\n", vmOpenJ9},
		{"not a jvm", libc + "7ffd-7ffe rw-p 00000000 00:00 0 [stack]\n", vmNone},
		{"lookalike", libc + "7f00-7f01 r-xp 0 08:01 9 /opt/x/libjvm.so.bak\n", vmNone},
	} {
		got, err := scanMaps(strings.NewReader(c.maps))
		if err != nil || got != c.want {
			t.Errorf("%s: got %v, %v, want %v", c.name, got, err, c.want)
		}
	}
}

func TestReadableBy(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	jar := filepath.Join(dir, "a.jar")
	if err := os.WriteFile(jar, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	me := os.Geteuid()
	stranger := process{uid: me + 4242, gid: os.Getegid() + 4242}
	owner := process{uid: me, gid: os.Getegid() + 4242}

	// t.TempDir's parent is private to its owner.
	if readableBy(jar, stranger) {
		t.Error("readable through a private parent directory")
	}
	if !readableBy(jar, owner) {
		t.Error("owner cannot read")
	}
	if !readableBy(jar, process{uid: 0, gid: 0}) {
		t.Error("root cannot read")
	}

	if !readableBy("/etc/passwd", stranger) {
		t.Error("/etc/passwd not readable")
	}
	if err := os.Chmod(jar, 0o600); err != nil {
		t.Fatal(err)
	}
	if !readableBy(jar, owner) {
		t.Error("owner cannot read a 0600 file")
	}
	group := process{uid: me + 4242, gid: me + 4242, groups: []int{os.Getegid()}}
	if err := os.Chmod(jar, 0o640); err != nil {
		t.Fatal(err)
	}
	if !permits(jar, group, 4) {
		t.Error("supplementary group cannot read a 0640 file")
	}
	if permits(jar, stranger, 4) {
		t.Error("stranger can read a 0640 file")
	}
}
