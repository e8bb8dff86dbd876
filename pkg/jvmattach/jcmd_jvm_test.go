package jvmattach_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/jvmattach"
	"github.com/weftdev/weft/pkg/jvmattach/jvmtest"
)

// Compiler.perfmap makes the JVM write /tmp/perf-<pid>.map, what the
// profiler names JIT frames with.
func TestJcmdPerfMapRealJVM(t *testing.T) {
	f := jvmtest.Build(t)
	for _, jdk := range []struct {
		name string
		java func(testing.TB) string
	}{{"jdk17", jvmtest.RequireJava}, {"jdk25", jvmtest.JDK25}} {
		t.Run(jdk.name, func(t *testing.T) {
			j := jvmtest.Start(t, f, jvmtest.StartOptions{Java: jdk.java(t)})
			path := fmt.Sprintf("/tmp/perf-%d.map", j.Pid)
			os.Remove(path)
			t.Cleanup(func() { os.Remove(path) })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := jvmattach.Jcmd(ctx, j.Pid, "Compiler.perfmap", 0); err != nil {
				t.Fatalf("%v\nJVM output:\n%s", err, j.Output())
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Stubs and the interpreter are there even before any method
			// is compiled.
			if lines := strings.Count(string(b), "\n"); lines < 10 {
				t.Errorf("perf map has %d lines:\n%s", lines, b)
			}
			_, err = jvmattach.Jcmd(ctx, j.Pid, "No.such_command", 0)
			if err == nil || !strings.Contains(err.Error(), "No.such_command") {
				t.Errorf("unknown command: %v", err)
			}
		})
	}
	t.Run("not-a-jvm", func(t *testing.T) {
		_, err := jvmattach.Jcmd(context.Background(), os.Getpid(), "VM.version", time.Second)
		if !errors.Is(err, jvmattach.ErrNotJVM) {
			t.Errorf("got %v, want ErrNotJVM", err)
		}
	})
}
