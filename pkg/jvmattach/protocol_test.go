package jvmattach

import (
	"errors"
	"strings"
	"testing"
)

func TestEncodeRequest(t *testing.T) {
	got, err := encodeRequest("load", "instrument", "false", "/tmp/a.jar=k=v,x=y")
	if err != nil {
		t.Fatal(err)
	}
	if want := "1\x00load\x00instrument\x00false\x00/tmp/a.jar=k=v,x=y\x00"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Always three arguments: missing ones are empty strings.
	got, err = encodeRequest("properties")
	if err != nil {
		t.Fatal(err)
	}
	if want := "1\x00properties\x00\x00\x00\x00"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for name, args := range map[string][]string{
		"too long": {"instrument", "false", strings.Repeat("a", maxArgLen+1)},
		"NUL":      {"instrument", "false", "a\x00b"},
		"4 args":   {"a", "b", "c", "d"},
	} {
		if _, err := encodeRequest("load", args...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := encodeRequest("load", "instrument", "false", strings.Repeat("a", maxArgLen)); err != nil {
		t.Errorf("argument of exactly %d bytes: %v", maxArgLen, err)
	}
}

func TestParseLoadReply(t *testing.T) {
	for _, c := range []struct {
		name, reply string
		code        int    // want an *AgentError with this code
		errPart     string // else want an error containing this; "" for success
	}{
		{name: "jdk9+ ok", reply: "0\nreturn code: 0\n"},
		{name: "jdk8 ok", reply: "0\n0"},
		{name: "agentmain threw", reply: "0\nreturn code: 102\n", code: 102},
		{name: "jdk8 no Agent-Class", reply: "0\n100", code: 100},
		{name: "not on class path", reply: "0\nreturn code: 101\n", code: 101},
		{name: "enomem", reply: "0\nreturn code: -4\n", code: -4},
		{name: "library not loaded", reply: "-1\ninstrument was not loaded.\nsome dlerror\n", errPart: "status -1): instrument was not loaded."},
		{name: "dynamic loading disabled", reply: "0\nDynamic agent loading is not enabled. Use -XX:+EnableDynamicAgentLoading to launch target VM.", errPart: "could not load the agent: Dynamic agent loading is not enabled"},
		{name: "jvm still starting", reply: "-1\njava.lang.NullPointerException\n", errPart: "status -1): java.lang.NullPointerException"},
		{name: "bad version", reply: "101\n", errPart: "protocol version"},
		{name: "empty", reply: "", errPart: "without a reply"},
		{name: "garbage", reply: "HTTP/1.1 400", errPart: "malformed"},
		{name: "garbage status", reply: "x\n", errPart: "malformed reply status"},
		{name: "status only", reply: "0\n", errPart: "empty reply"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := parseLoadReply([]byte(c.reply))
			var ae *AgentError
			switch {
			case c.code != 0:
				if !errors.As(err, &ae) || ae.Code != c.code {
					t.Fatalf("got %v, want AgentError %d", err, c.code)
				}
			case c.errPart != "":
				if err == nil || !strings.Contains(err.Error(), c.errPart) {
					t.Fatalf("got %v, want an error with %q", err, c.errPart)
				}
				if errors.As(err, &ae) {
					t.Errorf("%v is an AgentError", err)
				}
			default:
				if err != nil {
					t.Fatalf("got %v", err)
				}
			}
		})
	}
}

func TestAgentErrorText(t *testing.T) {
	for code, part := range map[int]string{
		102: "agentmain is missing or threw",
		100: "no Agent-Class",
		101: "system class path",
		-4:  "memory",
		7:   "unknown reason",
	} {
		if got := (&AgentError{Code: code}).Error(); !strings.Contains(got, part) {
			t.Errorf("code %d: %q lacks %q", code, got, part)
		}
	}
}

// Only the bare NullPointerException of a JVM still starting is worth a
// second load.
func TestLoadRefusedTooEarly(t *testing.T) {
	for reply, want := range map[string]bool{
		"-1\njava.lang.NullPointerException\n": true,
		"-1\ninstrument was not loaded.\n":     false,
		"0\nreturn code: 102\n":                false,
	} {
		var refused *loadRefused
		got := errors.As(parseLoadReply([]byte(reply)), &refused) && refused.tooEarly()
		if got != want {
			t.Errorf("%q: too early %v, want %v", reply, got, want)
		}
	}
}
