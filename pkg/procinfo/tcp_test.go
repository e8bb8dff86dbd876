package procinfo

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// A process that accepted a connection has not connected out; one that
// dialed one has, whatever else it holds.
func TestConnectedOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	want := func(what string, out bool) {
		t.Helper()
		got, err := ConnectedOut(os.Getpid())
		if err != nil || got != out {
			t.Fatalf("%s: ConnectedOut = %v, %v; want %v", what, got, err, out)
		}
	}
	want("listening", false)

	// A peer in another process: this one holds only the accepted end.
	peer := exec.Command("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+"; read -r _")
	stdin, err := peer.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); peer.Wait() }()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	want("an accepted connection", false)
	if out, err := ConnectedOut(peer.Process.Pid); err != nil || !out {
		t.Errorf("the peer that connected: ConnectedOut = %v, %v", out, err)
	}

	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	want("a dialed connection", true)
}
