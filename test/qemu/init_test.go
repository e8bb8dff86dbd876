package qemu

import (
	"strings"
	"testing"
)

func TestInitScriptQuoting(t *testing.T) {
	s, err := initScript([]string{"/bin/x", "it's", "$HOME"}, []string{"A=b c'd"}, "n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`'/bin/x' 'it'\''s' '$HOME' </dev/null`,
		`export 'A=b c'\''d'`,
		"mount -t",
		"poweroff -f",
	} {
		if !strings.Contains(string(s), want) {
			t.Errorf("init script lacks %q:\n%s", want, s)
		}
	}
	if _, err := initScript([]string{"x"}, []string{"1BAD=x"}, "n"); err == nil {
		t.Error("invalid env name accepted")
	}
}
