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
	// Histogram is explicit (buckets suited to latency) or exponential
	// (base-2, for backends that take them) for OTLP; Prometheus always
	// gets the explicit buckets.
	Histogram string `yaml:"histogram"`
	// Interval is how often OTLP metrics are pushed.
	Interval time.Duration `yaml:"interval"`
	// RouteLimit bounds the distinct routes per service.
	RouteLimit int `yaml:"route_limit"`

	// The OTLP metrics endpoint's own settings, over otlp's where set
	// (OTEL_EXPORTER_OTLP_METRICS_*): headers are merged, metrics' winning.
	Headers           map[string]string `yaml:"headers"`
	Compression       string            `yaml:"compression"`
	Timeout           time.Duration     `yaml:"timeout"`
	Insecure          *bool             `yaml:"insecure"`
	Certificate       string            `yaml:"certificate"`
	ClientCertificate string            `yaml:"client_certificate"`
	ClientKey         string            `yaml:"client_key"`
}

func defaultMetrics() Metrics {
	return Metrics{RED: true, ServiceGraph: true, Temporality: "cumulative", Histogram: "explicit", Interval: time.Minute, RouteLimit: 100}
}

// MetricsOn reports which metric exporters run.
func (c Config) MetricsOn() (prometheus, otlp bool) {
	if len(c.Metrics.Exporters) == 0 {
		return c.MetricsAddr != "", c.Metrics.Endpoint != ""
	}
	return slices.Contains(c.Metrics.Exporters, MetricsExporterPrometheus), slices.Contains(c.Metrics.Exporters, MetricsExporterOTLP)
}

// MetricsOTLP is the OTLP settings of the metrics endpoint: otlp's, with
// metrics' own where set.
func (c Config) MetricsOTLP() OTLP {
	o, m := c.OTLP, c.Metrics
	if len(m.Headers) > 0 {
		o.Headers = map[string]string{}
		for k, v := range c.OTLP.Headers {
			o.Headers[k] = v
		}
		for k, v := range m.Headers {
			o.Headers[k] = v
		}
	}
	if m.Compression != "" {
		o.Compression = m.Compression
	}
	if m.Timeout != 0 {
		o.Timeout = m.Timeout
	}
	if m.Insecure != nil {
		o.Insecure = *m.Insecure
	}
	if m.Certificate != "" {
		o.Certificate = m.Certificate
	}
	if m.ClientCertificate != "" || m.ClientKey != "" {
		o.ClientCertificate, o.ClientKey = m.ClientCertificate, m.ClientKey
	}
	return o
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
	return c.MetricsOTLP().target(endpoint, generic, "v1/metrics", setting, protocol)
}

// Delta reports whether OTLP metrics are deltas.
func (m Metrics) Delta() bool { return m.Temporality == "delta" }

// Exponential reports whether OTLP histograms are base-2 exponential.
func (m Metrics) Exponential() bool { return m.Histogram == "exponential" }

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
	switch m.Histogram {
	case "explicit", "exponential":
	default:
		return fmt.Errorf("metrics.histogram (OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION) %q: want explicit or exponential", m.Histogram)
	}
	if m.Interval <= 0 {
		return fmt.Errorf("metrics.interval (OTEL_METRIC_EXPORT_INTERVAL) %v: want a positive duration", m.Interval)
	}
	switch m.Compression {
	case "", "gzip", "none":
	default:
		return fmt.Errorf("metrics.compression (OTEL_EXPORTER_OTLP_METRICS_COMPRESSION) %q: want gzip or none", m.Compression)
	}
	if (m.ClientCertificate == "") != (m.ClientKey == "") {
		return fmt.Errorf("metrics.client_certificate and metrics.client_key (OTEL_EXPORTER_OTLP_METRICS_CLIENT_*): set both or neither")
	}
	if m.Timeout < 0 {
		return fmt.Errorf("metrics.timeout (OTEL_EXPORTER_OTLP_METRICS_TIMEOUT) %v: want a positive duration", m.Timeout)
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
	set("OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION", func(v string) error {
		switch v {
		case "explicit_bucket_histogram":
			m.Histogram = "explicit"
		case "base2_exponential_bucket_histogram":
			m.Histogram = "exponential"
		default:
			return fmt.Errorf("%q: want explicit_bucket_histogram or base2_exponential_bucket_histogram", v)
		}
		return nil
	})
	set("OTEL_METRIC_EXPORT_INTERVAL", func(v string) error {
		ms, err := strconv.Atoi(v) // milliseconds, per the specification
		m.Interval = time.Duration(ms) * time.Millisecond
		return err
	})
	set("OTEL_EXPORTER_OTLP_METRICS_HEADERS", func(v string) (e error) { m.Headers, e = ParseHeaders(v); return })
	set("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", func(v string) error { m.Compression = v; return nil })
	set("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", func(v string) error {
		ms, err := strconv.Atoi(v)
		m.Timeout = time.Duration(ms) * time.Millisecond
		return err
	})
	set("OTEL_EXPORTER_OTLP_METRICS_INSECURE", func(v string) error {
		b, err := strconv.ParseBool(v)
		m.Insecure = &b
		return err
	})
	set("OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", func(v string) error { m.Certificate = v; return nil })
	set("OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE", func(v string) error { m.ClientCertificate = v; return nil })
	set("OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", func(v string) error { m.ClientKey = v; return nil })
	set("WEFT_METRICS_RED", func(v string) (e error) { m.RED, e = strconv.ParseBool(v); return })
	set("WEFT_METRICS_SERVICE_GRAPH", func(v string) (e error) { m.ServiceGraph, e = strconv.ParseBool(v); return })
	set("WEFT_METRICS_ROUTE_LIMIT", func(v string) (e error) { m.RouteLimit, e = strconv.Atoi(v); return })
}

// metricsFlags are the --metrics-* flags.
type metricsFlags struct {
	red, graph               bool
	exporters                string
	endpoint, protocol, temp string
	histogram                string
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
	fs.StringVar(&f.histogram, "metrics-histogram", d.Histogram, "OTLP histograms: explicit or exponential")
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
	case "metrics-histogram":
		m.Histogram = f.histogram
	case "metrics-interval":
		m.Interval = f.interval
	case "metrics-route-limit":
		m.RouteLimit = f.routeLimit
	}
}
