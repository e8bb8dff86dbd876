package jvmattach_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/jvmattach"
	"github.com/weftdev/weft/pkg/jvmattach/jvmtest"
	"github.com/weftdev/weft/pkg/testenv"
)

// TestAttachRealJVM loads agents into real JVMs. The subtests share one
// build of the test classes.
func TestAttachRealJVM(t *testing.T) {
	f := jvmtest.Build(t)
	ctx := context.Background()

	attachWriter := func(t *testing.T, j *jvmtest.JVM, jar, out string) {
		t.Helper()
		args := fmt.Sprintf("out=%s,service=checkout,k=v", out)
		start := time.Now()
		err := jvmattach.AttachWithOptions(ctx, j.Pid, jvmattach.Options{JarPath: jar, AgentArgs: args, Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("attach: %v\nJVM output:\n%s", err, j.Output())
		}
		t.Logf("attached in %v", time.Since(start).Round(time.Millisecond))
		// agentmain has returned before the JVM replies: no waiting.
		got, err := os.ReadFile(j.Path(out))
		if err != nil {
			t.Fatalf("agent output: %v\nJVM output:\n%s", err, j.Output())
		}
		if string(got) != args {
			t.Errorf("agent got args %q, want %q", got, args)
		}
	}

	jdks := []struct {
		name string
		java func(testing.TB) string
	}{
		{"jdk17", jvmtest.RequireJava},
		{"jdk25", jvmtest.JDK25},
	}
	for _, jdk := range jdks {
		t.Run(jdk.name, func(t *testing.T) {
			j := jvmtest.Start(t, f, jvmtest.StartOptions{Java: jdk.java(t)})
			if ok, err := jvmattach.IsHotSpot(j.Pid); !ok || err != nil {
				t.Errorf("IsHotSpot(java) = %v, %v", ok, err)
			}
			attachWriter(t, j, f.WriterJar, filepath.Join(f.OutDir, jdk.name+"-1"))
			// The listener now runs: the second attach must do without
			// SIGQUIT, which would make the JVM print a thread dump.
			attachWriter(t, j, f.WriterJar, filepath.Join(f.OutDir, jdk.name+"-2"))
			if strings.Contains(j.Output(), "Full thread dump") {
				t.Errorf("the JVM printed a thread dump: a SIGQUIT went unused:\n%s", j.Output())
			}

			err := jvmattach.Attach(ctx, j.Pid, f.ThrowingJar, "x=1")
			var agentErr *jvmattach.AgentError
			if !errors.As(err, &agentErr) {
				t.Fatalf("throwing agentmain: got %v, want an *AgentError", err)
			}
			if !strings.Contains(err.Error(), "threw") || !strings.Contains(err.Error(), fmt.Sprintf("attach %d:", j.Pid)) {
				t.Errorf("unclear error: %v", err)
			}
			t.Logf("throwing agent: %v", err)

			err = jvmattach.Attach(ctx, j.Pid, filepath.Join(f.Dir, "missing.jar"), "")
			if err == nil || !strings.Contains(err.Error(), "missing.jar") {
				t.Errorf("missing jar: got %v", err)
			}
			// The JVM survived all of it.
			attachWriter(t, j, f.WriterJar, filepath.Join(f.OutDir, jdk.name+"-3"))
			for _, dir := range []string{f.ClassDir, "/tmp"} {
				if m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf(".attach_pid%d", j.Pid))); len(m) > 0 {
					t.Errorf("trigger file left: %v", m)
				}
			}
		})
	}

	t.Run("starting", func(t *testing.T) {
		// Attach as soon as libjvm.so is mapped: the JVM does not handle
		// SIGQUIT yet, and a SIGQUIT now would kill it.
		j := jvmtest.Start(t, f, jvmtest.StartOptions{NoWait: true})
		for {
			ok, err := jvmattach.IsHotSpot(j.Pid)
			if err != nil {
				t.Fatalf("%v\n%s", err, j.Output())
			}
			if ok {
				break
			}
			time.Sleep(time.Millisecond)
		}
		attachWriter(t, j, f.WriterJar, filepath.Join(f.OutDir, "starting"))
	})

	t.Run("other-user", func(t *testing.T) {
		testenv.RequirePrivileged(t)
		// The jar is in a directory nobody cannot enter, so it must be
		// copied for the JVM; the connect runs as nobody.
		j := jvmtest.Start(t, f, jvmtest.StartOptions{User: "nobody"})
		before := stagedJars(t)
		attachWriter(t, j, f.PrivateJar, filepath.Join(f.OutDir, "nobody"))
		attachWriter(t, j, f.WriterJar, filepath.Join(f.OutDir, "nobody-2"))
		if after := stagedJars(t); after > before {
			t.Errorf("%d staged jars left in /tmp", after-before)
		}
	})

	t.Run("container", func(t *testing.T) {
		// Own mount and pid namespaces: the JVM is pid 1 with its own /tmp,
		// where the jar gets copied.
		j := jvmtest.Start(t, f, jvmtest.StartOptions{Isolation: jvmtest.Container})
		attachWriter(t, j, f.WriterJar, "/tmp/out-1")
		attachWriter(t, j, f.WriterJar, "/tmp/out-2")
		leftovers(t, j)
	})

	t.Run("userns-container", func(t *testing.T) {
		// Inside a user namespace weft's root is nobody: only the thread
		// that switched to the JVM's host uid gets accepted.
		j := jvmtest.Start(t, f, jvmtest.StartOptions{Java: jvmtest.JDK25(t), Isolation: jvmtest.UserNSContainer})
		attachWriter(t, j, f.WriterJar, "/tmp/out")
		leftovers(t, j)
	})

	t.Run("dynamic-loading-disabled", func(t *testing.T) {
		j := jvmtest.Start(t, f, jvmtest.StartOptions{Java: jvmtest.JDK25(t), JVMArgs: []string{"-XX:-EnableDynamicAgentLoading"}})
		err := jvmattach.AttachWithOptions(ctx, j.Pid, jvmattach.Options{JarPath: f.WriterJar, AgentArgs: "out=/dev/null", Logger: testLogger(t)})
		if err == nil || !strings.Contains(err.Error(), "-XX:+EnableDynamicAgentLoading") {
			t.Fatalf("got %v, want the JVM's refusal", err)
		}
		t.Logf("refused: %v", err)
	})

	t.Run("attach-disabled", func(t *testing.T) {
		j := jvmtest.Start(t, f, jvmtest.StartOptions{JVMArgs: []string{"-XX:+DisableAttachMechanism"}})
		err := jvmattach.AttachWithOptions(ctx, j.Pid, jvmattach.Options{
			JarPath:       f.WriterJar,
			AgentArgs:     "out=/dev/null",
			SocketTimeout: time.Second,
		})
		if !errors.Is(err, jvmattach.ErrTimeout) || !strings.Contains(err.Error(), "DisableAttachMechanism") {
			t.Fatalf("got %v, want a timeout naming -XX:+DisableAttachMechanism", err)
		}
		t.Logf("attach disabled: %v", err)
	})

	t.Run("canceled", func(t *testing.T) {
		j := jvmtest.Start(t, f, jvmtest.StartOptions{JVMArgs: []string{"-XX:+DisableAttachMechanism"}})
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := jvmattach.Attach(cctx, j.Pid, f.WriterJar, "out=/dev/null")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
			t.Fatalf("got %v after %v, want the context's error at once", err, time.Since(start))
		}
	})
}

func TestAttachNotAJVM(t *testing.T) {
	sleep := exec.Command("sleep", "100")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	jar := filepath.Join(t.TempDir(), "a.jar")
	os.WriteFile(jar, []byte("not read"), 0o644)

	err := jvmattach.Attach(context.Background(), sleep.Process.Pid, jar, "")
	if !errors.Is(err, jvmattach.ErrNotJVM) {
		t.Fatalf("got %v, want ErrNotJVM", err)
	}
	if want := fmt.Sprintf("attach %d: not a HotSpot JVM", sleep.Process.Pid); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	if ok, err := jvmattach.IsHotSpot(sleep.Process.Pid); ok || err != nil {
		t.Errorf("IsHotSpot(sleep) = %v, %v", ok, err)
	}
	// sleep ignores nothing: had it been sent SIGQUIT, it would be gone.
	if sleep.ProcessState != nil {
		t.Error("sleep exited")
	}

	sleep.Process.Kill()
	sleep.Wait()
	err = jvmattach.Attach(context.Background(), sleep.Process.Pid, jar, "")
	if !errors.Is(err, jvmattach.ErrNoProcess) {
		t.Fatalf("exited process: got %v, want ErrNoProcess", err)
	}
	if _, err := jvmattach.IsHotSpot(sleep.Process.Pid); !errors.Is(err, jvmattach.ErrNoProcess) {
		t.Errorf("IsHotSpot(exited) error = %v, want ErrNoProcess", err)
	}
}

// testLogger shows the attach's debug log in the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// stagedJars counts the copies placeJar may leave in the host's /tmp.
func stagedJars(t *testing.T) int {
	m, err := filepath.Glob("/tmp/weft-agent-*.jar")
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// leftovers fails when a trigger file or a jar copy remains in the JVM's
// /tmp.
func leftovers(t *testing.T, j *jvmtest.JVM) {
	t.Helper()
	entries, err := os.ReadDir(j.Path("/tmp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "weft-agent-") || strings.HasPrefix(e.Name(), ".attach_pid") {
			t.Errorf("left in the JVM's /tmp: %s", e.Name())
		}
	}
}
