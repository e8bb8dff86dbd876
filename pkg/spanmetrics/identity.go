package spanmetrics

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// serviceKeys are the resource attributes that tell services apart in
// metrics. Processes that agree on all of them share their series: two
// workers of one server, or a service restarted. What tells processes
// apart (process.pid, its command line, container.id) is left out, so a
// restart does not start new series.
var serviceKeys = []attribute.Key{
	"service.name",
	"service.namespace",
	"service.version",
	"deployment.environment.name",
	"k8s.namespace.name",
	"k8s.pod.name",
	"k8s.container.name",
	"k8s.deployment.name",
	"k8s.statefulset.name",
	"k8s.daemonset.name",
	"k8s.job.name",
	"k8s.cronjob.name",
}

// hostKeys are the same for every process weft sees; they go on the OTLP
// resource but are no Prometheus labels (the scrape's target says where
// metrics come from).
var hostKeys = []attribute.Key{
	"host.name",
	"host.id",
	"os.type",
	"k8s.node.name",
	"k8s.cluster.name",
	"telemetry.distro.name",
	"telemetry.distro.version",
}

// metricResource is res reduced to the service and host attributes.
func metricResource(res *resource.Resource) *resource.Resource {
	var kept []attribute.KeyValue
	for _, keys := range [][]attribute.Key{serviceKeys, hostKeys} {
		for _, k := range keys {
			if v, ok := res.Set().Value(k); ok {
				kept = append(kept, attribute.KeyValue{Key: k, Value: v})
			}
		}
	}
	return resource.NewWithAttributes(res.SchemaURL(), kept...)
}

// serviceLabels are the service attributes of res, for Prometheus.
func serviceLabels(res *resource.Resource) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, k := range serviceKeys {
		if v, ok := res.Set().Value(k); ok {
			out = append(out, attribute.KeyValue{Key: k, Value: v})
		}
	}
	return out
}

// PrometheusLabels are the labels that name a service on the Prometheus
// endpoint: its service attributes (the host's are the scrape target's).
func PrometheusLabels(res *resource.Resource) []attribute.KeyValue { return serviceLabels(res) }
