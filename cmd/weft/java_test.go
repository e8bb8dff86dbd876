package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/jvmattach"
	"github.com/weftdev/weft/pkg/jvmattach/jvmtest"
	"github.com/weftdev/weft/pkg/testenv"
)

// withEmbeddedJar sets the built-in agent for one test.
func withEmbeddedJar(t *testing.T, f func() ([]byte, error)) {
	old := embeddedAgentJar
	embeddedAgentJar = f
	t.Cleanup(func() { embeddedAgentJar = old })
}

func TestJavaAttachUsageErrors(t *testing.T) {
	withEmbeddedJar(t, nil)
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no pid given"},
		{[]string{"--args", "a=b"}, "no pid given"},
		{[]string{"12x"}, `"12x" is not a pid`},
		{[]string{"0"}, `"0" is not a pid`},
		{[]string{"1", "--jar", "x.jar"}, "flags go first"},
		{[]string{"1"}, "no Java agent built in; pass --jar"},
	} {
		var out strings.Builder
		err := javaAttach(ctx, &out, c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error with %q", c.args, err, c.want)
		}
	}
	if err := javaCmd([]string{"detach"}); err == nil || !strings.Contains(err.Error(), `unknown subcommand "detach"`) {
		t.Errorf("unknown subcommand: %v", err)
	}

	withEmbeddedJar(t, func() ([]byte, error) { return nil, errors.New("not embedded") })
	if err := javaAttach(ctx, &strings.Builder{}, []string{"1"}); err == nil || !strings.Contains(err.Error(), "not embedded; pass --jar") {
		t.Errorf("failing embed: %v", err)
	}
}

func TestJavaAttach(t *testing.T) {
	f := jvmtest.Build(t)
	j := jvmtest.Start(t, f, jvmtest.StartOptions{})
	sleep := exec.Command("sleep", "100")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	ctx := context.Background()

	// The built-in jar, to a JVM and to a process that is none.
	withEmbeddedJar(t, func() ([]byte, error) { return jvmtest.AgentJar(t, f.ClassDir, "WriterAgent"), nil })
	before := agentTempDirs(t)
	out1 := filepath.Join(f.OutDir, "embedded")
	var out strings.Builder
	err := javaAttach(ctx, &out, []string{"--args", "out=" + out1 + ",a=b", strconv.Itoa(j.Pid), strconv.Itoa(sleep.Process.Pid)})
	if !errors.Is(err, jvmattach.ErrNotJVM) || !strings.Contains(err.Error(), fmt.Sprintf("attach %d", sleep.Process.Pid)) {
		t.Errorf("got %v, want the sleep's ErrNotJVM", err)
	}
	if want := fmt.Sprintf("attached to %d\n", j.Pid); out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if got, err := os.ReadFile(out1); err != nil || string(got) != "out="+out1+",a=b" {
		t.Errorf("agent output %q, %v", got, err)
	}
	if after := agentTempDirs(t); after != before {
		t.Errorf("the built-in jar's temporary directory was not removed (%d before, %d after)", before, after)
	}

	t.Run("other-user", func(t *testing.T) {
		testenv.RequirePrivileged(t)
		// The built-in jar's file must be readable as it is by other users.
		nobody := jvmtest.Start(t, f, jvmtest.StartOptions{User: "nobody"})
		out3 := filepath.Join(f.OutDir, "nobody")
		if err := javaAttach(ctx, &strings.Builder{}, []string{"--args", "out=" + out3, strconv.Itoa(nobody.Pid)}); err != nil {
			t.Fatalf("%v\n%s", err, nobody.Output())
		}
		if got, err := os.ReadFile(out3); err != nil || string(got) != "out="+out3 {
			t.Errorf("agent output %q, %v", got, err)
		}
	})

	// --jar, for a second load into the same JVM.
	out2 := filepath.Join(f.OutDir, "flag")
	out.Reset()
	if err := javaAttach(ctx, &out, []string{"--jar", f.WriterJar, "--args", "out=" + out2, strconv.Itoa(j.Pid)}); err != nil {
		t.Fatalf("--jar: %v\n%s", err, j.Output())
	}
	if got, err := os.ReadFile(out2); err != nil || string(got) != "out="+out2 {
		t.Errorf("agent output %q, %v", got, err)
	}
}

func agentTempDirs(t *testing.T) int {
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "weft-java-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}
