package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/weftdev/weft/pkg/nodeagent"
)

const nodeUsage = `Usage:
  weft node script [--out path]           write weft's Node.js companion
  weft node attach [--timeout 10s] <pid>...  load it into running Node.js processes

The companion tells weft which incoming request each outgoing HTTP request
of a Node.js process works for; without it weft gives those client spans
no parent. Load it at start with
  NODE_OPTIONS="--require /path/weft-node.js" node app.js
or into a running process with "weft node attach" (through Node's
inspector, opened with SIGUSR1 on 127.0.0.1 and closed again), or let
"weft run --node-agent=attach" do that for every Node.js process it traces.
`

func nodeCmd(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, nodeUsage)
		return errors.New("node: missing subcommand (script, attach)")
	}
	switch args[0] {
	case "script":
		return nodeScript(os.Stdout, args[1:])
	case "attach":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return nodeAttach(ctx, os.Stdout, args[1:])
	case "help", "-h", "--help":
		fmt.Print(nodeUsage)
		return nil
	default:
		return fmt.Errorf("node: unknown subcommand %q (want script or attach)", args[0])
	}
}

func nodeFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("weft node "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), nodeUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// nodeScript writes the companion to --out (reporting the path) or to w.
func nodeScript(w io.Writer, args []string) error {
	fs := nodeFlags("script")
	out := fs.String("out", "", "file to write (default: standard output)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *out == "" {
		_, err := w.Write(nodeagent.Script())
		return err
	}
	if err := os.WriteFile(*out, nodeagent.Script(), 0o644); err != nil {
		return fmt.Errorf("node script: %w", err)
	}
	fmt.Fprintln(w, *out)
	return nil
}

// nodeAttach loads the companion into every pid given, going on after a
// failure, and reports each success on w.
func nodeAttach(ctx context.Context, w io.Writer, args []string) error {
	fs := nodeFlags("attach")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for each process's inspector")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	pids, err := parsePIDs("node attach", fs.Args())
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		actx, cancel := context.WithTimeout(ctx, *timeout)
		err := nodeagent.Attach(actx, pid)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("node attach %d: %w", pid, err))
			continue
		}
		fmt.Fprintf(w, "companion loaded into %d\n", pid)
	}
	return errors.Join(errs...)
}
