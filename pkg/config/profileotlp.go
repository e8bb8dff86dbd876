package config

import (
	"fmt"

	"github.com/weftdev/weft/pkg/export/otlpurl"
)

// The profile's OTLP settings named every way they can be given, for
// errors: the protocol's variable is the specification's, not a WEFT_ one.
const (
	profileOTLPEndpointSetting = "profile.otlp_endpoint (WEFT_PROFILE_OTLP_ENDPOINT, --profile-otlp-endpoint)"
	profileOTLPProtocolSetting = "profile.otlp_protocol (OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL, --profile-otlp-protocol)"
)

// ExportProtocol returns the protocol profiles are sent to OTLPEndpoint
// with, and why (for the log): profile.otlp_protocol, else the port
// decides as for spans. otlp.protocol does not count: it is the spans'
// endpoint's, which may be another collector or port.
func (p Profile) ExportProtocol() (protocol, why string, err error) {
	if p.OTLPProtocol != "" {
		return p.OTLPProtocol, "profile.otlp_protocol is set", nil
	}
	protocol, why, err = inferProtocol(p.OTLPEndpoint)
	if err != nil {
		return "", "", fmt.Errorf("%s %q: %w", profileOTLPEndpointSetting, p.OTLPEndpoint, err)
	}
	return protocol, why, nil
}

// validateOTLP checks the protocol and the endpoint's form for it, so that
// a typo stops weft before any program loads; the client
// (pkg/export/otlpprofile) makes the address it sends to.
func (p Profile) validateOTLP() error {
	if err := checkProtocol(profileOTLPProtocolSetting, p.OTLPProtocol); err != nil {
		return err
	}
	if p.OTLPEndpoint == "" {
		return nil
	}
	protocol, _, err := p.ExportProtocol()
	if err != nil {
		return err
	}
	if protocol == ProtocolHTTPProtobuf {
		// Whether a URL without a scheme is http or https does not
		// change what is valid.
		_, err = otlpurl.Parse(p.OTLPEndpoint, false)
	} else {
		_, err = grpcEndpoint(p.OTLPEndpoint)
	}
	if err != nil {
		return fmt.Errorf("%s %q: %w", profileOTLPEndpointSetting, p.OTLPEndpoint, err)
	}
	return nil
}
