package jvmattach

import "testing"

func TestParseJcmdReply(t *testing.T) {
	out, err := parseJcmdReply([]byte("0\n"))
	if err != nil || out != "" {
		t.Errorf("empty success: %q %v", out, err)
	}
	out, err = parseJcmdReply([]byte("0\nline one\nline two\n"))
	if err != nil || out != "line one\nline two\n" {
		t.Errorf("success: %q %v", out, err)
	}
	for _, bad := range []string{"", "x\n", "1\njava.lang.IllegalArgumentException: Unknown diagnostic command\n", "1\n"} {
		if _, err := parseJcmdReply([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
