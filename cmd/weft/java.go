package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/weftdev/weft/pkg/javaagent"
	"github.com/weftdev/weft/pkg/jvmattach"
)

// embeddedAgentJar returns weft's Java agent jar built into this binary
// (tests replace it).
var embeddedAgentJar = func() ([]byte, error) { return javaagent.Jar(), nil }

const javaUsage = `Usage:
  weft java attach [--args k=v,...] [--jar path] [--timeout 10s] <pid>...

Loads weft's Java agent into running HotSpot JVMs (OpenJDK and its builds),
through the JVM's attach mechanism as jcmd does; no restart, no JDK needed.
JVMs in containers work. Needs root, or to run as the JVMs' user.
`

func javaCmd(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, javaUsage)
		return errors.New("java: missing subcommand (attach)")
	}
	switch args[0] {
	case "attach":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return javaAttach(ctx, os.Stdout, args[1:])
	case "help", "-h", "--help":
		fmt.Print(javaUsage)
		return nil
	default:
		return fmt.Errorf("java: unknown subcommand %q (want attach)", args[0])
	}
}

// javaAttach loads the agent into every pid given, going on after a
// failure, and reports each success on w.
func javaAttach(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("weft java attach", flag.ContinueOnError)
	agentArgs := fs.String("args", "", "arguments for the agent, handed to its agentmain as is (k=v,...)")
	jar := fs.String("jar", "", "agent jar to load instead of the one built into weft")
	timeout := fs.Duration("timeout", jvmattach.DefaultSocketTimeout, "how long to wait for each JVM to open its attach socket")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), javaUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // usage already printed
		}
		return err
	}
	pids, err := parsePIDs("java attach", fs.Args())
	if err != nil {
		return err
	}

	jarPath := *jar
	if jarPath == "" {
		path, cleanup, err := writeEmbeddedAgent()
		if err != nil {
			return fmt.Errorf("java attach: %w", err)
		}
		// Each JVM keeps the jar open once loaded, so it can go afterwards.
		defer cleanup()
		jarPath = path
	}

	var errs []error
	for _, pid := range pids {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("attach %d: %w", pid, ctx.Err()))
			continue
		}
		err := jvmattach.AttachWithOptions(ctx, pid, jvmattach.Options{
			JarPath:       jarPath,
			AgentArgs:     *agentArgs,
			SocketTimeout: *timeout,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(w, "attached to %d\n", pid)
	}
	return errors.Join(errs...)
}

// writeEmbeddedAgent writes the built-in agent to a file of its own that
// every user can read: the JVMs open it as their own users.
func writeEmbeddedAgent() (path string, cleanup func(), err error) {
	if embeddedAgentJar == nil {
		return "", nil, errors.New("this weft binary has no Java agent built in; pass --jar")
	}
	data, err := embeddedAgentJar()
	if err != nil {
		return "", nil, fmt.Errorf("built-in Java agent: %w; pass --jar", err)
	}
	if len(data) == 0 {
		return "", nil, errors.New("built-in Java agent is empty; pass --jar")
	}
	dir, err := os.MkdirTemp("", "weft-java-")
	if err != nil {
		return "", nil, fmt.Errorf("write built-in Java agent: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "weft-agent.jar")
	// Explicit modes: MkdirTemp makes 0700 and the umask may strip more.
	err = os.Chmod(dir, 0o755)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err == nil {
		err = os.Chmod(path, 0o644)
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("write built-in Java agent: %w", err)
	}
	return path, cleanup, nil
}

// parsePIDs reads the pid arguments of an attach command.
func parsePIDs(cmd string, args []string) ([]int, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%s: no pid given", cmd)
	}
	pids := make([]int, 0, len(args))
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("%s: flag %s after the pids; flags go first", cmd, a)
		}
		pid, err := strconv.Atoi(a)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("%s: %q is not a pid", cmd, a)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
