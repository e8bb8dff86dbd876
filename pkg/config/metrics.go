package config

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/weftdev/weft/pkg/correlate"
)

// The metric exporters, by OTEL_METRICS_EXPORTER's names.
const (
	MetricsExporterOTLP       = "otlp"
	MetricsExporterPrometheus = "prometheus"
	MetricsExporterNone       = "none"
)

// Metrics are the metrics weft derives from spans (docs/metrics.md).
type Metrics struct {
	// RED is the HTTP request duration and body size histograms per
	// service and route.
	RED bool `yaml:"red"`
	// ServiceGraph is the traces_service_graph_* metrics.
	ServiceGraph bool `yaml:"service_graph"`
	// Exporters are prometheus (served at metrics_addr), otlp, or none.
	// Empty: prometheus when metrics_addr is set, otlp when
	// metrics.endpoint is.
	Exporters []string `yaml:"exporters"`
	// Endpoint is where OTLP metrics go, used as it is
	// (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT); empty with otlp among the
	// exporters: otlp.endpoint, to which OTLP/HTTP appends /v1/metrics.
	// Headers, TLS, compression and timeout are otlp's.
	Endpoint string `yaml:"endpoint"`
	// Protocol is grpc or http/protobuf; empty: otlp.protocol, else by
	// the endpoint's port.
	Protocol string `yaml:"protocol"`
	// Temporality is cumulative or delta (for OTLP; Prometheus is always
	// cumulative).
	Temporality string `yaml:"temporality"`
	// Interval is how often OTLP metrics are pushed.
	Interval time.Duration `yaml:"interval"`
	// RouteLimit bounds the distinct routes per service.
	RouteLimit int `yaml:"route_limit"`
}

func defaultMetrics() Metrics {
	return Metrics{RED: true, ServiceGraph: true, Temporality: "cumulative", Interval: time.Minute, RouteLimit: 100}
}

// MetricsOn reports which metric exporters run.
func (c Config) MetricsOn() (prometheus, otlp bool) {
	if len(c.Metrics.Exporters) == 0 {
		return c.MetricsAddr != "", c.Metrics.Endpoint != ""
	}
	return slices.Contains(c.Metrics.Exporters, MetricsExporterPrometheus), slices.Contains(c.Metrics.Exporters, MetricsExporterOTLP)
}

// MetricsTarget is where OTLP metrics go: metrics.endpoint as it is, else
// the generic otlp.endpoint with /v1/metrics for OTLP/HTTP.
func (c Config) MetricsTarget() (OTLPTarget, error) {
	endpoint, generic, setting := c.Metrics.Endpoint, false, "metrics.endpoint (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, --otlp-metrics-endpoint)"
	if endpoint == "" {
		endpoint, generic, setting = c.OTLP.Endpoint, true, otlpSetting("endpoint")
	}
	if endpoint == "" {
		return OTLPTarget{}, fmt.Errorf("metrics.exporters has otlp, but neither metrics.endpoint nor otlp.endpoint is set")
	}
	protocol := protocolChoice{c.Metrics.Protocol, "metrics.protocol", "metrics.protocol (OTEL_EXPORTER_OTLP_METRICS_PROTOCOL, --otlp-metrics-protocol)"}
	if protocol.value == "" && c.OTLP.Protocol != "" {
		protocol = protocolChoice{c.OTLP.Protocol, "otlp.protocol", otlpSetting("protocol")}
	}
	return c.OTLP.target(endpoint, generic, "v1/metrics", setting, protocol)
}

// Delta reports whether OTLP metrics are deltas.
func (m Metrics) Delta() bool { return m.Temporality == "delta" }

func (c Config) validateMetrics() error {
	m := c.Metrics
	for _, e := range m.Exporters {
		switch e {
		case MetricsExporterOTLP, MetricsExporterPrometheus:
		case MetricsExporterNone:
			if len(m.Exporters) > 1 {
				return fmt.Errorf("metrics.exporters (OTEL_METRICS_EXPORTER) %v: none with others", m.Exporters)
			}
		default:
			return fmt.Errorf("metrics.exporters (OTEL_METRICS_EXPORTER) %q: want otlp, prometheus or none", e)
		}
	}
	if err := checkProtocol("metrics.protocol (OTEL_EXPORTER_OTLP_METRICS_PROTOCOL, --otlp-metrics-protocol)", m.Protocol); err != nil {
		return err
	}
	switch m.Temporality {
	case "cumulative", "delta":
	default:
		return fmt.Errorf("metrics.temporality (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE) %q: want cumulative or delta", m.Temporality)
	}
	if m.Interval <= 0 {
		return fmt.Errorf("metrics.interval (OTEL_METRIC_EXPORT_INTERVAL) %v: want a positive duration", m.Interval)
	}
	if m.RouteLimit < 1 {
		return fmt.Errorf("metrics.route_limit %d: want 1 or more", m.RouteLimit)
	}
	if _, err := correlate.NewRouter(c.Routes); err != nil {
		return fmt.Errorf("routes: %w", err)
	}
	prom, otlp := c.MetricsOn()
	if prom && c.MetricsAddr == "" {
		return fmt.Errorf("metrics.exporters has prometheus, but metrics_addr is not set")
	}
	if otlp {
		if _, err := c.MetricsTarget(); err != nil {
			return err
		}
	}
	return nil
}

func applyMetricsEnv(m *Metrics, set func(string, func(string) error)) {
	set("OTEL_METRICS_EXPORTER", func(v string) error { m.Exporters = splitList(v); return nil })
	set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", func(v string) error { m.Endpoint = v; return nil })
	set("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", func(v string) error { m.Protocol = v; return nil })
	set("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", func(v string) error {
		// lowmemory is delta for counters and histograms, all weft has.
		if v == "lowmemory" {
			v = "delta"
		}
		m.Temporality = v
		return nil
	})
	set("OTEL_METRIC_EXPORT_INTERVAL", func(v string) error {
		ms, err := strconv.Atoi(v) // milliseconds, per the specification
		m.Interval = time.Duration(ms) * time.Millisecond
		return err
	})
	set("WEFT_METRICS_RED", func(v string) (e error) { m.RED, e = strconv.ParseBool(v); return })
	set("WEFT_METRICS_SERVICE_GRAPH", func(v string) (e error) { m.ServiceGraph, e = strconv.ParseBool(v); return })
	set("WEFT_METRICS_ROUTE_LIMIT", func(v string) (e error) { m.RouteLimit, e = strconv.Atoi(v); return })
}

// metricsFlags are the --metrics-* flags.
type metricsFlags struct {
	red, graph               bool
	exporters                string
	endpoint, protocol, temp string
	interval                 time.Duration
	routeLimit               int
}

func (f *metricsFlags) register(fs *flag.FlagSet, d Metrics) {
	fs.BoolVar(&f.red, "metrics-red", d.RED, "HTTP request duration and body size histograms per service and route")
	fs.BoolVar(&f.graph, "metrics-service-graph", d.ServiceGraph, "traces_service_graph_* metrics between services")
	fs.StringVar(&f.exporters, "metrics-exporter", "", "otlp, prometheus (at -metrics-addr), both comma-separated, or none (default: prometheus with -metrics-addr, otlp with -otlp-metrics-endpoint)")
	fs.StringVar(&f.endpoint, "otlp-metrics-endpoint", "", "OTLP metrics endpoint, used as it is (default with -metrics-exporter=otlp: -otlp-endpoint + /v1/metrics)")
	fs.StringVar(&f.protocol, "otlp-metrics-protocol", "", "grpc or http/protobuf (default: -otlp-protocol, else by port)")
	fs.StringVar(&f.temp, "metrics-temporality", d.Temporality, "OTLP metrics: cumulative or delta")
	fs.DurationVar(&f.interval, "metrics-interval", d.Interval, "push OTLP metrics this often")
	fs.IntVar(&f.routeLimit, "metrics-route-limit", d.RouteLimit, "distinct routes per service; more are counted without a route")
}

// apply copies the flag called name, if it is one of these, into m.
func (f *metricsFlags) apply(m *Metrics, name string) {
	switch name {
	case "metrics-red":
		m.RED = f.red
	case "metrics-service-graph":
		m.ServiceGraph = f.graph
	case "metrics-exporter":
		m.Exporters = splitList(f.exporters)
	case "otlp-metrics-endpoint":
		m.Endpoint = f.endpoint
	case "otlp-metrics-protocol":
		m.Protocol = f.protocol
	case "metrics-temporality":
		m.Temporality = f.temp
	case "metrics-interval":
		m.Interval = f.interval
	case "metrics-route-limit":
		m.RouteLimit = f.routeLimit
	}
}
