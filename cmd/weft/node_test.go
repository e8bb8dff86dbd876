package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/nodeagent"
)

func TestNodeScript(t *testing.T) {
	var stdout bytes.Buffer
	if err := nodeScript(&stdout, nil); err != nil || !bytes.Equal(stdout.Bytes(), nodeagent.Script()) {
		t.Fatalf("to stdout: %v, %d bytes", err, stdout.Len())
	}
	out := filepath.Join(t.TempDir(), "weft-node.js")
	stdout.Reset()
	if err := nodeScript(&stdout, []string{"--out", out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(b, nodeagent.Script()) || strings.TrimSpace(stdout.String()) != out {
		t.Fatalf("--out: %v; %q", err, stdout.String())
	}
}

func TestNodeAttachBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no pid given"},
		{[]string{"abc"}, `"abc" is not a pid`},
		{[]string{"1", "--timeout=1s"}, "flags go first"},
		{[]string{"999999999"}, "node attach 999999999"},
	} {
		err := nodeAttach(context.Background(), &bytes.Buffer{}, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
