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

// The JDKs weft runs on use the NIO socket implementation, which retries
// EAGAIN; the old one, brought back by a property, does not.
func TestRetriesEAGAINRealJVM(t *testing.T) {
	f := jvmtest.Build(t)
	for _, c := range []struct {
		name string
		java func(testing.TB) string
		args []string
		want bool
	}{
		{"jdk17", jvmtest.RequireJava, nil, true},
		{"jdk25", jvmtest.JDK25, nil, true},
		{"jdk17-plain-sockets", jvmtest.RequireJava, []string{"-Djdk.net.usePlainSocketImpl=true"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := jvmtest.Start(t, f, jvmtest.StartOptions{Java: c.java(t), JVMArgs: c.args})
			got, err := jvmattach.RetriesEAGAIN(j.Pid)
			if err != nil || got != c.want {
				t.Errorf("RetriesEAGAIN = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}
