package procinfo

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseStat(t *testing.T) {
	line := "1234 (weird) (name) S 77 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.comm != "weird) (name" || st.ppid != 77 || st.startTime != 987654 {
		t.Fatalf("got %+v", st)
	}
	if _, err := parseStat([]byte("1234 (short) S 1 2")); err == nil {
		t.Fatal("truncated stat parsed")
	}
}

func TestJVMMainName(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"java", "-jar", "app.jar"}, "app"},
		{[]string{"java", "-classpath", "x:y", "Main"}, "Main"},
		{[]string{"java", "--class-path", "x", "org.acme.Server", "-jar", "no.jar"}, "Server"},
		{[]string{"java", "--class-path=x", "org.acme.Server"}, "Server"},
		{[]string{"java", "-p", "mods", "--add-modules", "a,b", "-m", "m/org.acme.Main"}, "Main"},
		{[]string{"java", "--module=m/org.acme.Main"}, "Main"},
		{[]string{"java", "-m", "org.acme.app"}, "org.acme.app"},
		{[]string{"java", "@opts.txt", "-javaagent:/a.jar", "com.example.FooKt"}, "FooKt"},
		{[]string{"java", "--source", "21", "/src/Hello.java"}, "Hello"},
		{[]string{"java", "-version"}, ""},
		{[]string{"java", "-cp"}, ""},
		{nil, ""},
	}
	for _, c := range cases {
		if got := jvmMainName(c.args); got != c.want {
			t.Errorf("jvmMainName(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestParseResourceAttrs(t *testing.T) {
	got := parseResourceAttrs(" a=1 ,b=x%3Dy,bad,=v,c=%zz, d = two words ")
	var flat []string
	for _, kv := range got {
		flat = append(flat, string(kv.Key)+"="+kv.Value.AsString())
	}
	want := []string{"a=1", "b=x=y", "c=%zz", "d=two words"}
	if !slices.Equal(flat, want) {
		t.Fatalf("got %q, want %q", flat, want)
	}
	if parseResourceAttrs("") != nil {
		t.Fatal("empty input gave attributes")
	}
}

func TestCommandArgs(t *testing.T) {
	args := []string{"app", "--password", "hunter2", "--api-key=abc", "--verbose", "TOKEN=xyz", "plain"}
	want := []string{"app", "--password", "REDACTED", "--api-key=REDACTED", "--verbose", "TOKEN=REDACTED", "plain"}
	if got := commandArgs(args); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}

	long := make([]string, 100)
	for i := range long {
		long[i] = strings.Repeat("é", 400) // 800 bytes
	}
	got := commandArgs(long)
	if len(got) != maxCommandArgs {
		t.Fatalf("%d args kept, want %d", len(got), maxCommandArgs)
	}
	if len(got[0]) > maxCommandArgLen || !utf8.ValidString(got[0]) {
		t.Fatalf("arg not truncated cleanly: %d bytes", len(got[0]))
	}
}

func TestInvalidUTF8IsReplaced(t *testing.T) {
	r, root := newTestResolver(t, Config{})
	writeProc(t, root, 5, fakeProc{comm: "x", start: 1, exe: "/bin/x", env: []string{"OTEL_SERVICE_NAME=bad\xffname"}, args: []string{"x", "\xfe"}})
	res, name := r.Resolve(5)
	if !utf8.ValidString(name) {
		t.Fatalf("invalid name %q", name)
	}
	for _, kv := range res.Attributes() {
		if !utf8.ValidString(kv.Value.Emit()) {
			t.Fatalf("attribute %s not UTF-8: %q", kv.Key, kv.Value.Emit())
		}
	}
}
