package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/weftdev/weft/pkg/pyagent"
)

const pythonUsage = `Usage:
  weft python path --out DIR    write weft's Python asyncio companion into DIR

The companion tells weft which incoming request each outgoing HTTP request
of an asyncio service (aiohttp or uvicorn servers; aiohttp and httpx
clients) works for; without it weft follows Python by thread, and an
asyncio server's calls get no parent while it serves two requests at once.
Load it at start:
  PYTHONPATH=DIR python app.py
(DIR holds a sitecustomize.py that loads the companion, then any
sitecustomize it shadows.)
`

func pythonCmd(w io.Writer, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, pythonUsage)
		return errors.New("python: missing subcommand (path)")
	}
	switch args[0] {
	case "path":
		fs := flag.NewFlagSet("weft python path", flag.ContinueOnError)
		out := fs.String("out", "", "directory to write the companion into (required)")
		fs.Usage = func() {
			fmt.Fprint(fs.Output(), pythonUsage+"\nFlags:\n")
			fs.PrintDefaults()
		}
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
		if *out == "" {
			return errors.New("python path: --out DIR is required")
		}
		if err := pyagent.WriteDir(*out); err != nil {
			return err
		}
		fmt.Fprintln(w, *out)
		return nil
	case "help", "-h", "--help":
		fmt.Print(pythonUsage)
		return nil
	default:
		return fmt.Errorf("python: unknown subcommand %q (want path)", args[0])
	}
}
