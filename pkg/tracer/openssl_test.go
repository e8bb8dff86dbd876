package tracer

import (
	"os"
	"os/exec"
	"testing"

	"github.com/weftdev/weft/pkg/probesite"
)

// On the OpenSSL builds of this machine (Debian's libssl 3 and
// libcrypto, nginx's and Python's; the OpenSSL linked into Node.js),
// every TLS probe sits on an instruction the kernel emulates: none pays
// a single-step trap. Each read and write keeps one probe with its
// return, under the cookie of the function it stands for, and the
// entry-only functions keep theirs without one.
func TestSSLPlanEmulatesEveryProbe(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	for _, c := range []struct {
		path   string
		memBIO bool
		want   []string // functions that must be probed
	}{
		{"/usr/lib/x86_64-linux-gnu/libssl.so.3", false, []string{"SSL_read_ex", "SSL_write_ex", "SSL_do_handshake", sslFree, sslShutdown}},
		{"/usr/lib/x86_64-linux-gnu/libcrypto.so.3", true, []string{bioWrite}},
		{node, true, sslFuncs},
	} {
		file, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatalf("%v", err)
		}
		probes, err := sslPlan(c.path, c.memBIO)
		if err != nil {
			t.Fatalf("sslPlan(%s): %v", c.path, err)
		}
		probed := map[string]bool{}
		for _, p := range probes {
			name := sslFuncs[p.fn]
			if probed[name] {
				t.Errorf("%s: %s probed twice", c.path, name)
			}
			probed[name] = true
			if !probesite.Emulated(file[p.at:]) || p.stepped {
				t.Errorf("%s: %v is on an instruction the kernel single-steps (% x)", c.path, p, file[p.at:p.at+4])
			}
			if _, entryOnly := sslEntryArgs[name]; p.ret == entryOnly {
				t.Errorf("%s: %v: return probed = %v", c.path, p, p.ret)
			}
		}
		for _, name := range c.want {
			if !probed[name] {
				t.Errorf("%s: %s not probed (plan %v)", c.path, name, probes)
			}
		}
	}
}

// A library that is not OpenSSL's (no SSL_write) gets no probes, and
// libcrypto gets none unless memory BIOs are wanted.
func TestSSLPlanSkipsOtherLibraries(t *testing.T) {
	for _, c := range []struct {
		path   string
		memBIO bool
	}{
		{"/usr/lib/x86_64-linux-gnu/libcrypto.so.3", false},
		{"/usr/lib/x86_64-linux-gnu/libz.so.1", true},
	} {
		probes, err := sslPlan(c.path, c.memBIO)
		if err != nil || len(probes) != 0 {
			t.Errorf("sslPlan(%s, memBIO %v) = %v, %v; want none", c.path, c.memBIO, probes, err)
		}
	}
}

// The log names the functions whose probes single-step, and only those.
func TestSteppedFuncs(t *testing.T) {
	if got := steppedFuncs([]sslProbe{{fn: 0}, {fn: 2, ret: true}}); got != "" {
		t.Errorf("no probe single-stepped: %q", got)
	}
	got := steppedFuncs([]sslProbe{{fn: sslFuncIndex("SSL_do_handshake"), stepped: true}, {fn: 0}, {fn: sslFuncIndex(sslFree), stepped: true}})
	if want := " (single-stepped, a second trap per call: SSL_do_handshake, SSL_free)"; got != want {
		t.Errorf("steppedFuncs = %q, want %q", got, want)
	}
}
