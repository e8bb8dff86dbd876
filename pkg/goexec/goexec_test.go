package goexec

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/weftdev/weft/pkg/probesite"
)

// buildClient builds testdata/client with the go command, with extra flags.
func buildClient(t *testing.T, flags ...string) string {
	t.Helper()
	return buildClientWith(t, "go", nil, flags...)
}

func buildClientWith(t *testing.T, gocmd string, env []string, flags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "client")
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command(gocmd, append(args, ".")...)
	cmd.Dir = filepath.Join("testdata", "client")
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s build: %v\n%s", gocmd, err, b)
	}
	return out
}

// The table of runtime.g offsets (for stripped binaries) agrees with the
// DWARF of every Go this machine can get, and a stripped build finds the
// same offsets through it.
func TestGOffsetsTable(t *testing.T) {
	for _, tc := range []struct {
		name, gocmd string
		env         []string
		hook        NewProcHook
	}{
		{"default", "go", nil, HookCasg},
		{"go1.27", "go", []string{"GOTOOLCHAIN=go1.27.3"}, HookCasg},
		{"go1.23", "go", []string{"GOTOOLCHAIN=go1.23.12"}, HookReturn},
		{"go1.19", "/usr/lib/go-1.19/bin/go", []string{"GOTOOLCHAIN=local"}, HookEntryReturn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fullPath := buildClientWith(t, tc.gocmd, tc.env)
			full, err := Open(fullPath)
			if err != nil {
				t.Fatal(err)
			}
			strippedPath := buildClientWith(t, tc.gocmd, tc.env, "-ldflags=-s -w")
			stripped, err := Open(strippedPath)
			if err != nil {
				t.Fatal(err)
			}
			if full.G.From != "DWARF" || stripped.G.From != "table" {
				t.Fatalf("offsets from %q and %q, want DWARF and table", full.G.From, stripped.G.From)
			}
			want, got := full.G, stripped.G
			want.From, got.From = "", ""
			if want != got {
				t.Errorf("%s: DWARF says %+v, the table %+v", full.GoVersion, want, got)
			}
			if why := stripped.Unsupported(); why != "" {
				t.Errorf("%s stripped: %s", full.GoVersion, why)
			}
			if h := stripped.NewProc(); h != tc.hook {
				t.Errorf("%s: newproc1 hooked as %d, want %d", full.GoVersion, h, tc.hook)
			}
			// Before Go 1.24, newproc1 is probed once the new g has its
			// goid, at an instruction uprobes emulate, not at its RETs.
			for path, b := range map[string]*Binary{fullPath: full, strippedPath: stripped} {
				if tc.hook == HookCasg {
					continue
				}
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				fn := b.Funcs[NewProc1]
				if fn.NewG <= fn.Entry || !probesite.Emulated(data[fn.NewG:]) {
					t.Errorf("%s (stripped %v): newproc1's new-g site %#x (entry %#x)", b.GoVersion, b.Stripped, fn.NewG, fn.Entry)
				}
			}
			// crypto/tls is probed at its copy and record calls in every
			// Go weft is tested with, not at RETs (two traps each).
			for _, b := range []*Binary{full, stripped} {
				if _, ok := b.TLSReadCopy(); !ok || len(b.Funcs[TLSWrite].Calls) == 0 || b.Funcs[TLSRead].RecvSlot == 0 {
					t.Errorf("%s (stripped %v): Read's copy %v, its receiver's slot %d, Write's record calls %v",
						b.GoVersion, b.Stripped, b.Funcs[TLSRead].Calls, b.Funcs[TLSRead].RecvSlot,
						b.Funcs[TLSWrite].Calls)
				}
			}
		})
	}
}

func TestStrippedBinaryHasTheSameFunctions(t *testing.T) {
	full, err := Open(buildClient(t))
	if err != nil {
		t.Fatal(err)
	}
	stripped, err := Open(buildClient(t, "-ldflags=-s -w"))
	if err != nil {
		t.Fatal(err)
	}
	if full.Stripped || !stripped.Stripped {
		t.Errorf("stripped flags: full %v, stripped %v", full.Stripped, stripped.Stripped)
	}
	if full.GoVersion != runtime.Version() || full.Arch != runtime.GOARCH {
		t.Errorf("version %s/%s, want %s/%s", full.GoVersion, full.Arch, runtime.Version(), runtime.GOARCH)
	}
	for _, b := range []*Binary{full, stripped} {
		if why := b.Unsupported(); why != "" {
			t.Fatalf("unsupported: %s", why)
		}
		if !b.NetHTTPClient() {
			t.Fatal("net/http client not found")
		}
		if !b.CryptoTLS() {
			t.Fatal("crypto/tls's Read, Write and handshake not found")
		}
		if h2 := b.H2Clients(); len(h2) != 1 || h2[0] != H2WriteHeaders {
			t.Fatalf("HTTP/2 clients %q, want net/http's", h2)
		}
	}
	// Both builds link the same code at the same addresses; only symbols
	// and DWARF differ, after the code in the file.
	for _, name := range []string{NewProc1, RoundTrip, WriteLoop, H2WriteHeaders, TLSRead, TLSWrite, TLSClientHandshake} {
		f, s := full.Funcs[name], stripped.Funcs[name]
		if f.Entry == 0 || f.Entry != s.Entry || f.Probe != s.Probe || len(f.Returns) != len(s.Returns) ||
			len(f.Calls) != len(s.Calls) {
			t.Errorf("%s: full %+v, stripped %+v", name, f, s)
		}
		if f.Probe <= f.Entry {
			t.Errorf("%s: no jump to probe after the entry", name)
		}
	}
	if full.NewProc() != HookCasg || len(full.Funcs[NewProc1].Calls) == 0 {
		t.Errorf("this Go (%s) should be probed at casgstatus calls: %v", full.GoVersion, full.Funcs[NewProc1])
	}
}

// Every offset found for a return holds a RET opcode, every probed call
// a CALL, and the entry of each function is a function start as the Go
// table records it.
func TestReturnsAreRETInstructions(t *testing.T) {
	path := buildClient(t)
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fn := b.Funcs[NewProc1]
	if len(fn.Returns) == 0 || len(fn.Calls) == 0 {
		t.Fatal("no returns or no casgstatus calls")
	}
	for _, name := range []string{NewProc1, TLSClientHandshake} {
		f := b.Funcs[name]
		if len(f.Returns) == 0 {
			t.Errorf("%s: no returns", name)
		}
		for _, off := range f.Returns {
			if op := data[off]; op != 0xc3 && op != 0xc2 {
				t.Errorf("%s: byte at %#x is %#x, not RET", name, off, op)
			}
			if off <= f.Entry {
				t.Errorf("%s: return %#x before entry %#x", name, off, f.Entry)
			}
		}
	}
	for _, name := range []string{NewProc1, TLSRead, TLSWrite} {
		calls := b.Funcs[name].Calls
		if len(calls) == 0 {
			t.Errorf("%s: no probed calls", name)
		}
		for _, off := range calls {
			if data[off] != 0xe8 || off <= b.Funcs[name].Entry {
				t.Errorf("%s: byte at %#x is %#x, not a CALL in the function", name, off, data[off])
			}
		}
	}
	for _, name := range []string{NewProc1, RoundTrip, WriteLoop, H2WriteHeaders, TLSRead, TLSWrite, TLSClientHandshake} {
		p := b.Funcs[name].Probe
		if op := data[p]; !(op >= 0x70 && op <= 0x7f) && !(op == 0x0f && data[p+1] >= 0x80 && data[p+1] <= 0x8f) {
			t.Errorf("%s: probe at %#x is %#x, not a conditional jump", name, p, op)
		}
	}
}

func TestNotGo(t *testing.T) {
	if _, err := Open("/bin/sh"); !errors.Is(err, ErrNotGo) {
		t.Fatalf("sh: %v, want ErrNotGo", err)
	}
	if _, err := Read(bytes.NewReader([]byte("\x7fELF garbage"))); err == nil {
		t.Fatal("garbage parsed")
	}
}

func TestVersions(t *testing.T) {
	for v, want := range map[string]bool{"go1.16.15": false, "go1.17": true, "go1.19.8": true, "go1.27rc1": true, "go2.0": true, "devel": false} {
		if atLeast(v, 1, 17) != want {
			t.Errorf("atLeast(%q, 1, 17) = %v", v, !want)
		}
	}
	for v, want := range map[string]string{"go1.26.8": "go1.26", "go1.27rc1": "go1.27", "go1.19": "go1.19"} {
		if got := minorVersion(v); got != want {
			t.Errorf("minorVersion(%q) = %q", v, got)
		}
	}
	if why := (&Binary{Arch: "arm64", GoVersion: "go1.26"}).Unsupported(); why == "" {
		t.Error("arm64 taken as supported")
	}
}

// grpc-go's client, in full and stripped builds of the e2e tests' gRPC
// program, against grpc-go 1.85 (the module's) and 1.81 (its own go.mod):
// NewStream's one call of executeAndPut (a CALL at the offset), and the
// stack-check jump of the function where the loopy takes the item.
func TestGRPCClient(t *testing.T) {
	for _, tc := range []struct {
		name, modfile string
		take          GRPCLoopyTake
	}{
		{"grpc-1.85", "", GRPCLoopyTake{Func: GRPCClientHeaders}},
		{"grpc-1.81", "test/e2e/testdata/h2app/grpc-1.81.mod", GRPCLoopyTake{Func: GRPCOriginateStream, InRCX: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bins []*Binary
			for _, flags := range [][]string{nil, {"-ldflags=-s -w"}} {
				out := filepath.Join(t.TempDir(), "h2app")
				args := append([]string{"build", "-o", out}, flags...)
				if tc.modfile != "" {
					args = append(args, "-modfile="+tc.modfile)
				}
				cmd := exec.Command("go", append(args, "./test/e2e/testdata/h2app")...)
				cmd.Dir = filepath.Join("..", "..")
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("go build: %v\n%s", err, b)
				}
				b, err := Open(out)
				if err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				take, ok := b.GRPCClient()
				if !ok || take != tc.take {
					t.Fatalf("stripped %v: grpc-go's client %+v (%v), want %+v", b.Stripped, take, ok, tc.take)
				}
				calls := b.Funcs[GRPCNewStream].Calls
				if len(calls) != 1 || data[calls[0]] != 0xe8 {
					t.Errorf("stripped %v: NewStream's calls of executeAndPut at %#x", b.Stripped, calls)
				}
				p := b.Funcs[take.Func].Probe
				if op := data[p]; op != 0x76 && !(op == 0x0f && data[p+1] == 0x86) {
					t.Errorf("stripped %v: %s probed at %#x, whose %#x is no JBE", b.Stripped, take.Func, p, op)
				}
				bins = append(bins, b)
			}
			for _, name := range []string{GRPCNewStream, tc.take.Func} {
				if f, s := bins[0].Funcs[name], bins[1].Funcs[name]; f.Probe != s.Probe || !slices.Equal(f.Calls, s.Calls) {
					t.Errorf("%s: full %+v, stripped %+v", name, f, s)
				}
			}
		})
	}
}
