package tracer

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/javaagent"
	"github.com/weftdev/weft/pkg/probesite"
)

// The agent's library is found under the names it is mapped with: its
// private copy (unlinked once loaded) and the file -Dweft.agent.native
// names; nothing else is probed.
func TestIsJNILib(t *testing.T) {
	for name, want := range map[string]bool{
		"weft-jni-1234567890.so": true,
		"libweft_jni.so":         true,
		"libssl.so.3":            false,
		"weft-jni-notes.txt":     false,
		"libjli.so":              false,
	} {
		if got := isJNILib(name); got != want {
			t.Errorf("isJNILib(%q) = %v, want %v", name, got, want)
		}
	}
}

// The functions of the agent's library that weft probes (as embedded in
// the agent jar weft attaches) begin with an instruction the kernel
// emulates under a uprobe: one trap per TLS call, not two.
func TestJNILibProbesAreEmulated(t *testing.T) {
	jar := javaagent.Jar()
	zr, err := zip.NewReader(bytes.NewReader(jar), int64(len(jar)))
	if err != nil {
		t.Fatalf("agent jar: %v", err)
	}
	var lib []byte
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/linux-x86_64/libweft_jni.so") {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			lib, err = io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if lib == nil {
		t.Fatal("no linux-x86_64/libweft_jni.so in the agent jar")
	}
	path := filepath.Join(t.TempDir(), "libweft_jni.so")
	if err := os.WriteFile(path, lib, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := probesite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, name := range []string{jvmTLSFunc, jvmTLSReqFunc, jvmH2Func} {
		fn, ok := f.Func(name)
		if !ok {
			t.Errorf("%s not exported", name)
			continue
		}
		if !probesite.Emulated(fn.Code) {
			t.Errorf("%s begins with % x, which the kernel single-steps under a uprobe", name, fn.Code[:min(4, len(fn.Code))])
		}
	}
}
