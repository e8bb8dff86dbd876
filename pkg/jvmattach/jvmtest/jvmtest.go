// Package jvmtest builds tiny Java agents and starts real JVMs, for the
// tests of jvmattach and of the commands that use it.
package jvmtest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/testenv"
)

// JDK25Home is where the test machines have a second, newer JDK.
const JDK25Home = "/usr/lib/jvm/temurin-25-jdk-amd64"

// The classes: a program that idles, an agent that writes its arguments to
// the file named by its out= argument, and an agent whose agentmain throws.
const (
	sleeperSrc = `public class Sleeper {
    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
`
	writerSrc = `import java.lang.instrument.Instrumentation;
import java.nio.file.Files;
import java.nio.file.Path;

public class WriterAgent {
    public static void agentmain(String args, Instrumentation inst) throws Exception {
        String out = null;
        for (String kv : args.split(",")) {
            if (kv.startsWith("out=")) {
                out = kv.substring(4);
            }
        }
        Files.writeString(Path.of(out), args);
    }
}
`
	throwerSrc = `import java.lang.instrument.Instrumentation;

public class ThrowingAgent {
    public static void agentmain(String args, Instrumentation inst) {
        throw new IllegalStateException("agentmain fails on purpose");
    }
}
`
)

// Fixture is a compiled set of test classes and agent jars.
type Fixture struct {
	Dir         string // readable by every user
	ClassDir    string // Sleeper.class
	WriterJar   string // readable by every user
	ThrowingJar string
	PrivateJar  string // WriterJar again, in a directory only root may enter
	OutDir      string // writable by every user, for the agents' output
}

// RequireJava returns the path of java, skipping the test when there is no
// JDK, unless privileged tests are required (then the test fails).
func RequireJava(t testing.TB) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err == nil {
		_, err = exec.LookPath("javac")
	}
	if err != nil {
		if testenv.Required() {
			t.Fatalf("WEFT_REQUIRE_PRIVILEGED=1 but no JDK: %v", err)
		}
		t.Skipf("needs a JDK (java and javac): %v", err)
	}
	return java
}

// JDK25 returns the java of JDK25Home, skipping or failing like RequireJava.
func JDK25(t testing.TB) string {
	t.Helper()
	java := filepath.Join(JDK25Home, "bin", "java")
	if _, err := os.Stat(java); err != nil {
		if testenv.Required() {
			t.Fatalf("WEFT_REQUIRE_PRIVILEGED=1 but no JDK 25: %v", err)
		}
		t.Skipf("needs JDK 25 at %s", JDK25Home)
	}
	return java
}

// Build compiles the classes (for Java 17, so every JDK from 17 runs them)
// and packs the agent jars.
func Build(t testing.TB) *Fixture {
	t.Helper()
	RequireJava(t)
	// Not t.TempDir: its parents are private to root, and JVMs running as
	// other users must read the classes and write their output.
	dir, err := os.MkdirTemp("", "jvmtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &Fixture{
		Dir:      dir,
		ClassDir: filepath.Join(dir, "classes"),
		OutDir:   filepath.Join(dir, "out"),
	}
	src := filepath.Join(dir, "src")
	private := filepath.Join(dir, "private")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o755}, {f.ClassDir, 0o755}, {f.OutDir, 0o777}, {src, 0o755}, {private, 0o700}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil { // not subject to umask
			t.Fatal(err)
		}
	}
	files := map[string]string{"Sleeper.java": sleeperSrc, "WriterAgent.java": writerSrc, "ThrowingAgent.java": throwerSrc}
	args := []string{"--release", "17", "-d", f.ClassDir}
	for name, text := range files {
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	if out, err := exec.Command("javac", args...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	f.WriterJar = filepath.Join(dir, "writer.jar")
	f.ThrowingJar = filepath.Join(dir, "throwing.jar")
	f.PrivateJar = filepath.Join(private, "writer.jar")
	writeAgentJar(t, f.WriterJar, f.ClassDir, "WriterAgent")
	writeAgentJar(t, f.ThrowingJar, f.ClassDir, "ThrowingAgent")
	writeAgentJar(t, f.PrivateJar, f.ClassDir, "WriterAgent")
	return f
}

// AgentJar returns the bytes of a jar holding class (from classDir) as its
// Agent-Class.
func AgentJar(t testing.TB, classDir, class string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	manifest := "Manifest-Version: 1.0\r\nAgent-Class: " + class + "\r\n\r\n"
	for _, e := range []struct{ name, from string }{
		{"META-INF/MANIFEST.MF", ""},
		{class + ".class", filepath.Join(classDir, class+".class")},
	} {
		data := []byte(manifest)
		if e.from != "" {
			var err error
			if data, err = os.ReadFile(e.from); err != nil {
				t.Fatal(err)
			}
		}
		w, err := z.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeAgentJar(t testing.TB, path, classDir, class string) {
	t.Helper()
	if err := os.WriteFile(path, AgentJar(t, classDir, class), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Isolation puts a JVM into namespaces of its own, like a container.
type Isolation int

const (
	// Host: the JVM shares everything with the test.
	Host Isolation = iota
	// Container: own mount and pid namespaces, with a private /tmp.
	Container
	// UserNSContainer: Container plus a user namespace in which the JVM is
	// root, mapped to host uid and gid UserNSBase.
	UserNSContainer
)

// UserNSBase is the first host id of UserNSContainer's mapping.
const UserNSBase = 100000

// StartOptions describe a JVM to start.
type StartOptions struct {
	Java      string // java binary; "" means java from PATH
	User      string // run as this user (via runuser); "" means the test's
	JVMArgs   []string
	Isolation Isolation
	NoWait    bool // return right after the start, before main runs
}

// JVM is a running Sleeper.
type JVM struct {
	Pid    int
	stdout string
}

// Start starts Sleeper and waits until its main method runs. The JVM is
// killed when the test ends.
func Start(t testing.TB, f *Fixture, o StartOptions) *JVM {
	t.Helper()
	java := o.Java
	if java == "" {
		java = "java"
	}
	argv := append(append([]string{java}, o.JVMArgs...), "-cp", ".", "Sleeper")
	if o.User != "" {
		argv = append([]string{"runuser", "-u", o.User, "--"}, argv...)
	}
	var attr *syscall.SysProcAttr
	if o.Isolation != Host {
		testenv.RequirePrivileged(t)
		// Mounts first turn private so nothing reaches the host. The class
		// directory, under the host's /tmp, is reached through the working
		// directory once /tmp is covered and bound into the new one.
		script := `mount --make-rprivate / && mount -t tmpfs -o mode=1777 tmpfs /tmp &&
			mkdir /tmp/app && mount --no-canonicalize --bind . /tmp/app && cd /tmp/app && exec "$@"`
		argv = append([]string{"sh", "-c", script, "sh"}, argv...)
		attr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID}
		if o.Isolation == UserNSContainer {
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: UserNSBase, Size: 65536}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: UserNSBase, Size: 65536}}
			attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}
		}
	}
	stdout := filepath.Join(t.TempDir(), "stdout")
	out, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = f.ClassDir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	j := &JVM{Pid: cmd.Process.Pid, stdout: stdout}
	t.Cleanup(func() {
		// SIGTERM to the JVM itself (runuser does not pass SIGKILL on), so
		// that it exits normally and removes its attach socket.
		syscall.Kill(j.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(j.Pid, syscall.SIGKILL)
			cmd.Process.Kill()
			<-exited
		}
	})
	if o.NoWait {
		if o.User != "" {
			t.Fatal("NoWait with User: the JVM's pid is not known yet")
		}
		return j
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(j.Output(), "ready") {
		select {
		case <-exited:
			t.Fatalf("%v exited:\n%s", argv, j.Output())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v not ready after 30s:\n%s", argv, j.Output())
		}
	}
	if o.User != "" {
		// runuser forks: the JVM is its child.
		j.Pid = childOf(t, cmd.Process.Pid)
	}
	return j
}

// Output returns what the JVM printed so far (stdout and stderr).
func (j *JVM) Output() string {
	b, _ := os.ReadFile(j.stdout)
	return string(b)
}

// Path returns a path of the JVM's filesystem as the test reaches it.
func (j *JVM) Path(p string) string {
	return fmt.Sprintf("/proc/%d/root%s", j.Pid, p)
}

func childOf(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Sscan(string(b), &child); err != nil {
		t.Fatalf("no child of %d: %q", pid, b)
	}
	return child
}
