package jvmattach

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReleaseMajor(t *testing.T) {
	for _, c := range []struct {
		release string
		want    int
		ok      bool
	}{
		{"IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"17.0.15\"\n", 17, true},
		{"JAVA_VERSION=\"25\"\n", 25, true},
		{"JAVA_VERSION=\"11.0.2\"\n", 11, true},
		{"JAVA_VERSION=\"1.8.0_392\"\n", 8, true},
		{"JAVA_VERSION=\"21-ea\"\n", 21, true},
		{"JAVA_RUNTIME_VERSION=\"17\"\n", 0, false},
		{"JAVA_VERSION=\"\"\n", 0, false},
	} {
		got, ok := releaseMajor([]byte(c.release))
		if got != c.want || ok != c.ok {
			t.Errorf("releaseMajor(%q) = %d, %v; want %d, %v", c.release, got, ok, c.want, c.ok)
		}
	}
}

func TestFindRelease(t *testing.T) {
	home := t.TempDir()
	for _, dir := range []string{"lib/server", "jre/lib/amd64/server"} {
		if err := os.MkdirAll(filepath.Join(home, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := findRelease(filepath.Join(home, "lib/server")); err == nil {
		t.Fatal("found a release file where there is none")
	}
	if err := os.WriteFile(filepath.Join(home, "release"), []byte(`JAVA_VERSION="1.8.0_392"`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"lib/server", "jre/lib/amd64/server"} {
		b, err := findRelease(filepath.Join(home, dir))
		if err != nil || string(b) != `JAVA_VERSION="1.8.0_392"` {
			t.Errorf("from %s: %q, %v", dir, b, err)
		}
	}
}

// weft itself is no JVM.
func TestRetriesEAGAINNotAJVM(t *testing.T) {
	if ok, err := RetriesEAGAIN(os.Getpid()); ok || err != nil {
		t.Errorf("RetriesEAGAIN(self) = %v, %v", ok, err)
	}
}
