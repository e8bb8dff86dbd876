package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"text/tabwriter"
	"time"

	"github.com/weftdev/weft/pkg/agent"
)

// psCmd lists what a running weft traces, from its self-metrics address.
func psCmd(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("ps", flag.ContinueOnError)
	def := os.Getenv("WEFT_METRICS_ADDR")
	if def == "" {
		def = "127.0.0.1:9464"
	}
	addr := fs.String("metrics-addr", def, "the self-metrics address of the running weft (its --metrics-addr)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	procs, err := fetchProcesses(*addr)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tSERVICE\tSELECTOR\tEXE")
	for _, p := range procs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.PID, p.Service, p.Selector, p.Exe)
	}
	return tw.Flush()
}

func fetchProcesses(addr string) ([]agent.TracedProcess, error) {
	c := http.Client{Timeout: 5 * time.Second}
	url := "http://" + addr + agent.ProcessesPath
	resp, err := c.Get(url)
	if err != nil {
		return nil, fmt.Errorf("ask the running weft (is it started with --metrics-addr=%s?): %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	var procs []agent.TracedProcess
	if err := json.NewDecoder(resp.Body).Decode(&procs); err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return procs, nil
}
