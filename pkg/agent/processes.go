package agent

import (
	"encoding/json"
	"net/http"

	"github.com/weftdev/weft/pkg/procinfo"
	"github.com/weftdev/weft/pkg/selector"
)

// ProcessesPath serves the traced processes as JSON on the self-metrics
// address (`weft ps` reads it).
const ProcessesPath = "/processes"

// TracedProcess is one entry of ProcessesPath.
type TracedProcess struct {
	selector.Process
	Service string `json:"service"`
}

func processesHandler(sel *selector.Selector, res *procinfo.Resolver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		procs := sel.Processes()
		out := make([]TracedProcess, 0, len(procs))
		for _, p := range procs {
			_, service := res.Resolve(uint32(p.PID))
			out = append(out, TracedProcess{Process: p, Service: service})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}
