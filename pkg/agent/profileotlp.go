package agent

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/config"
	"github.com/weftdev/weft/pkg/export/otlpprofile"
	"github.com/weftdev/weft/pkg/procinfo"
)

// otlpProfiles sends every interval's profiles to an OTLP profiles
// endpoint, each process with the resource its spans have.
type otlpProfiles struct {
	client   *otlpprofile.Client
	resolver *procinfo.Resolver
	version  string
}

// newProfileSink returns the OTLP profiles export, or nil when none is
// configured. TLS, headers and compression are the trace export's; the
// protocol is the profile endpoint's own (config.Profile.ExportProtocol).
func newProfileSink(cfg config.Config, resolver *procinfo.Resolver, version string) (profileSink, error) {
	if cfg.Profile.OTLPEndpoint == "" {
		return nil, nil
	}
	protocol, why, err := cfg.Profile.ExportProtocol()
	if err != nil {
		return nil, err // names the setting
	}
	c, err := otlpprofile.New(otlpprofile.Config{
		Protocol:    protocol,
		Endpoint:    cfg.Profile.OTLPEndpoint,
		Insecure:    cfg.OTLP.Insecure,
		Headers:     cfg.OTLP.Headers,
		Compression: cfg.OTLP.Compression,
		TLS:         otlpTLS(cfg.OTLP),
	})
	if err != nil {
		return nil, fmt.Errorf("profile.otlp_endpoint: %w", err)
	}
	slog.Info("exporting profiles over OTLP", "component", "profiler", "protocol", protocol, "why", why,
		"endpoint", c.Target(), "compression", cfg.OTLP.Compression)
	return &otlpProfiles{client: c, resolver: resolver, version: version}, nil
}

func (o *otlpProfiles) Export(ctx context.Context, profiles map[string]*profile.Profile) error {
	b := otlpprofile.NewBuilder(o.version)
	for service, p := range profiles {
		if err := b.Add(p, o.resolver); err != nil {
			return fmt.Errorf("convert the profile of %s: %w", service, err)
		}
	}
	return o.client.Export(ctx, b.Profiles())
}

func (o *otlpProfiles) Shutdown(context.Context) error { return o.client.Close() }
