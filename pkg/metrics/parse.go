package metrics

import (
	"fmt"
	"io"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ParseText reads the Prometheus text format, as Prometheus would.
func ParseText(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse prometheus text: %w", err)
	}
	return mfs, nil
}

// SelfMetrics picks the self-metrics out of ParseText's result, by the
// names the sources gave them (without weft_).
func SelfMetrics(mfs map[string]*dto.MetricFamily) map[string]uint64 {
	out := map[string]uint64{}
	for name, mf := range mfs {
		k, ok := strings.CutPrefix(name, "weft_")
		if !ok || mf.GetType() != dto.MetricType_UNTYPED || len(mf.GetMetric()) != 1 {
			continue
		}
		out[k] = uint64(mf.GetMetric()[0].GetUntyped().GetValue())
	}
	return out
}
