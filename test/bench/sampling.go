package main

import (
	"fmt"
	"log"
	"strconv"
	"strings"
)

// samplerArgs are weft's flags for a ratio<R> mode: weft on with the
// traceidratio sampler at R (ratio0 samples nothing, ratio1 everything).
func samplerArgs(mode string) []string {
	r, ok := strings.CutPrefix(mode, "ratio")
	if !ok {
		return nil
	}
	if f, err := strconv.ParseFloat(r, 64); err != nil || f < 0 || f > 1 {
		log.Fatalf("mode %s: want ratio<R> with R from 0 to 1, e.g. ratio0.1", mode)
	}
	return []string{"--traces-sampler=traceidratio", "--traces-sampler-arg=" + r}
}

// reportSampling prints what an unsampled request costs weft next to a
// sampled one, from the on (every trace sampled) and ratio<R> modes of the
// same rounds: with C(R) weft's CPU per request at ratio R, an unsampled
// request costs u = (C(R) - R·C(1)) / (1 - R).
func reportSampling(runs []run, order []string) {
	weftPerReq := func(r run) float64 { return float64(r.weftCPU.Microseconds()) / r.requests }
	byRound := map[int]map[string]float64{}
	for _, r := range runs {
		if byRound[r.round] == nil {
			byRound[r.round] = map[string]float64{}
		}
		byRound[r.round][r.mode] = weftPerReq(r)
	}
	header := false
	for _, m := range order {
		rs, ok := strings.CutPrefix(m, "ratio")
		if !ok {
			continue
		}
		ratio, _ := strconv.ParseFloat(rs, 64)
		if ratio >= 1 {
			continue
		}
		var shares []float64
		for _, modes := range byRound {
			on, at := modes["on"], modes[m]
			if on > 0 && at > 0 {
				shares = append(shares, (at-ratio*on)/(1-ratio)/on)
			}
		}
		if len(shares) == 0 {
			continue
		}
		if !header {
			fmt.Printf("\nAn unsampled request's weft CPU as a share of a sampled one's, per round (mean ± standard error):\n\n| mode | unsampled / sampled |\n|---|---|\n")
			header = true
		}
		mean, se := meanSE(shares)
		fmt.Printf("| %s | %.3f ± %.3f |\n", m, mean, se)
	}
}
