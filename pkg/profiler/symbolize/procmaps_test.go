package symbolize

import (
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	in := `55d0c8a8d000-55d0c8a8f000 r--p 00000000 fd:01 1234                       /usr/bin/cat
55d0c8a8f000-55d0c8a94000 r-xp 00002000 fd:01 1234                       /usr/bin/cat
7f3a00000000-7f3a00001000 r-xp 00001000 103:02 99                        /opt/my app/lib x.so
7f3a00002000-7f3a00003000 r-xp 00000000 fd:01 77                         /usr/lib/old.so (deleted)
7f3a00004000-7f3a00005000 rwxp 00000000 00:00 0 
not a maps line
7ffd1000-7ffd0000 r-xp 00000000 00:00 0                                  [backwards]
`
	maps, err := parseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 4 {
		t.Fatalf("got %d mappings: %+v", len(maps), maps)
	}
	want := []mapping{
		{start: 0x55d0c8a8f000, end: 0x55d0c8a94000, offset: 0x2000, dev: 0xfd<<32 | 1, inode: 1234, path: "/usr/bin/cat"},
		{start: 0x7f3a00000000, end: 0x7f3a00001000, offset: 0x1000, dev: 0x103<<32 | 2, inode: 99, path: "/opt/my app/lib x.so"},
		{start: 0x7f3a00002000, end: 0x7f3a00003000, dev: 0xfd<<32 | 1, inode: 77, path: "/usr/lib/old.so", deleted: true},
		{start: 0x7f3a00004000, end: 0x7f3a00005000},
	}
	for i := range want {
		if maps[i] != want[i] {
			t.Errorf("mapping %d: got %+v, want %+v", i, maps[i], want[i])
		}
	}
	if !maps[0].fileBacked() || maps[3].fileBacked() || !maps[3].anonymous() {
		t.Error("mapping kinds wrong")
	}
	if m, ok := findMapping(maps, 0x7f3a00000fff); !ok || m.inode != 99 {
		t.Errorf("findMapping: %+v %v", m, ok)
	}
	if _, ok := findMapping(maps, 0x7f3a00001000); ok {
		t.Error("findMapping matched the end of a mapping")
	}
}
