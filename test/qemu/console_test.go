package qemu

import "testing"

func TestParseConsole(t *testing.T) {
	const nonce = "0123abcd"
	console := "[    1.0] kernel noise\n" +
		startMarker + nonce + "\n" +
		"hello\n" +
		"fake " + exitMarker + "ffff=0\n" + // another nonce must be ignored
		"no newline" + "\n" + exitMarker + nonce + "=42\n" +
		"reboot: Power down\n"
	code, out, ok := parseConsole(console, nonce)
	if !ok || code != 42 {
		t.Fatalf("got code %d ok %v", code, ok)
	}
	if want := "hello\nfake " + exitMarker + "ffff=0\nno newline"; out != want {
		t.Errorf("command output %q, want %q", out, want)
	}
	if _, _, ok := parseConsole("Kernel panic - not syncing\n", nonce); ok {
		t.Error("marker found in a console without one")
	}
}
