package export

import (
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every exported span.
const ScopeName = "github.com/weftdev/weft"

// maxProviders bounds the per-resource tracer providers; it matches the
// default process cache of procinfo, as resources are per process.
const maxProviders = 4096

// tracers holds one TracerProvider per resource, because the SDK attaches
// the resource at the provider level. Evicted providers are not shut down:
// they own nothing but memory, and a concurrent Export may still be using
// one.
type tracers struct {
	cache   *lru.Cache[attribute.Distinct, trace.Tracer]
	hook    providerHook
	version string
}

func newTracers(hook providerHook, version string) (*tracers, error) {
	cache, err := lru.New[attribute.Distinct, trace.Tracer](maxProviders)
	if err != nil {
		return nil, fmt.Errorf("create tracer provider cache: %w", err)
	}
	return &tracers{cache: cache, hook: hook, version: version}, nil
}

func (t *tracers) get(res *resource.Resource) trace.Tracer {
	if res == nil {
		res = resource.Empty()
	}
	key := res.Equivalent()
	if tr, ok := t.cache.Get(key); ok {
		return tr
	}
	// WithResource merges in the agent's own OTEL_RESOURCE_ATTRIBUTES,
	// which thereby act as defaults for every process (e.g. a cluster
	// name); the process's attributes win on conflict.
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(contextIDs{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(t.hook),
	)
	tr := tp.Tracer(ScopeName,
		trace.WithInstrumentationVersion(t.version),
		trace.WithSchemaURL(semconv.SchemaURL),
	)
	t.cache.Add(key, tr)
	return tr
}
