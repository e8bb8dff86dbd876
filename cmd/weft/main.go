// Command weft traces the HTTP traffic of the processes on this host from
// the kernel and exports it as OpenTelemetry spans.
package main

import (
	"fmt"
	"os"
)

var version = "dev"

const usage = `weft — zero-code HTTP tracing from the kernel

Usage:
  weft run [flags]      trace processes and export spans (needs root)
  weft java attach PID  load weft's Java agent into running JVMs
  weft node attach PID  load weft's Node.js companion into running Node.js
  weft node script      write the companion, for NODE_OPTIONS=--require
  weft python path      write the Python asyncio companion, for PYTHONPATH
  weft profile [flags]  flame graph and pprof of one span, trace or span name
  weft ps               list what a running weft traces, and why
  weft doctor           tell what this kernel supports and what weft will use
  weft version          print the version

Run "weft run -h" for the flags; docs/configuration.md lists every setting.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "java":
		err = javaCmd(os.Args[2:])
	case "node":
		err = nodeCmd(os.Args[2:])
	case "python":
		err = pythonCmd(os.Stdout, os.Args[2:])
	case "profile":
		err = profileCmd(os.Args[2:])
	case "ps":
		err = psCmd(os.Stdout, os.Args[2:])
	case "doctor":
		err = doctorCmd(os.Args[2:])
	case "version", "--version", "-v":
		fmt.Println("weft", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "weft: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "weft:", err)
		os.Exit(1)
	}
}
