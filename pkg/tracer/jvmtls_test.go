package tracer

import "testing"

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
