package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// OTelSource reports cumulative OpenTelemetry metrics.
type OTelSource func() []metricdata.ResourceMetrics

// LabelsOf picks the resource attributes a source's series carry as
// labels: one endpoint serves many services, so the service must be on
// each series (OpenTelemetry's own exporter would put the resource in
// target_info, for one service per endpoint).
type LabelsOf func(*resource.Resource) []attribute.KeyValue

// otelCollector renders OpenTelemetry metrics the way the specification's
// Prometheus compatibility rules name them: dots become underscores, the
// unit becomes a suffix (_seconds, _bytes), monotonic sums get _total.
// Unchecked (it describes nothing): series differ in their labels.
type otelCollector struct {
	src    OTelSource
	labels LabelsOf
}

func (c otelCollector) Describe(chan<- *prometheus.Desc) {}

func (c otelCollector) Collect(ch chan<- prometheus.Metric) {
	for _, rm := range c.src() {
		resLabels := c.labels(rm.Resource)
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				collectOne(ch, m, resLabels)
			}
		}
	}
}

func collectOne(ch chan<- prometheus.Metric, m metricdata.Metrics, resLabels []attribute.KeyValue) {
	switch data := m.Data.(type) {
	case metricdata.Histogram[float64]:
		name := promName(m.Name, m.Unit, false)
		for _, dp := range data.DataPoints {
			names, values := promLabels(resLabels, dp.Attributes)
			buckets := make(map[float64]uint64, len(dp.Bounds))
			var cum uint64
			for i, b := range dp.Bounds {
				cum += dp.BucketCounts[i]
				buckets[b] = cum
			}
			desc := prometheus.NewDesc(name, m.Description, names, nil)
			h, err := prometheus.NewConstHistogramWithCreatedTimestamp(desc, dp.Count, dp.Sum, buckets, dp.StartTime, values...)
			sendOrInvalid(ch, desc, h, err)
		}
	case metricdata.Sum[int64]:
		name := promName(m.Name, m.Unit, data.IsMonotonic)
		vt := prometheus.GaugeValue
		if data.IsMonotonic {
			vt = prometheus.CounterValue
		}
		for _, dp := range data.DataPoints {
			names, values := promLabels(resLabels, dp.Attributes)
			desc := prometheus.NewDesc(name, m.Description, names, nil)
			var (
				mt  prometheus.Metric
				err error
			)
			if data.IsMonotonic {
				mt, err = prometheus.NewConstMetricWithCreatedTimestamp(desc, vt, float64(dp.Value), dp.StartTime, values...)
			} else {
				mt, err = prometheus.NewConstMetric(desc, vt, float64(dp.Value), values...)
			}
			sendOrInvalid(ch, desc, mt, err)
		}
	}
}

// sendOrInvalid hands a bad metric to the registry as an invalid one, so
// the scrape reports it instead of dropping it silently.
func sendOrInvalid(ch chan<- prometheus.Metric, desc *prometheus.Desc, m prometheus.Metric, err error) {
	if err != nil {
		ch <- prometheus.NewInvalidMetric(desc, err)
		return
	}
	ch <- m
}

var unitSuffixes = map[string]string{"s": "_seconds", "By": "_bytes", "ms": "_milliseconds"}

func promName(name, unit string, counter bool) string {
	n := sanitize(name)
	if suffix := unitSuffixes[unit]; suffix != "" && !strings.HasSuffix(n, suffix) {
		n += suffix
	}
	if counter && !strings.HasSuffix(n, "_total") {
		n += "_total"
	}
	return n
}

func promLabels(res []attribute.KeyValue, attrs attribute.Set) (names, values []string) {
	n := len(res) + attrs.Len()
	names, values = make([]string, 0, n), make([]string, 0, n)
	for _, kv := range res {
		names, values = append(names, sanitize(string(kv.Key))), append(values, kv.Value.Emit())
	}
	for it := attrs.Iter(); it.Next(); {
		kv := it.Attribute()
		names, values = append(names, sanitize(string(kv.Key))), append(values, kv.Value.Emit())
	}
	return names, values
}

// sanitize maps a name to Prometheus's classic character set.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == ':':
			return r
		}
		return '_'
	}, s)
}
