package config

import "testing"

func TestProfileExportProtocol(t *testing.T) {
	const (
		byHTTPPort  = "no protocol set, and port 4318 is OTLP/HTTP's"
		byOtherPort = "no protocol set, and the port is not 4318 (OTLP/HTTP's)"
		set         = "profile.otlp_protocol is set"
	)
	for _, tc := range []struct {
		p             Profile
		protocol, why string
	}{
		{Profile{OTLPEndpoint: "collector:4318"}, "http/protobuf", byHTTPPort},
		{Profile{OTLPEndpoint: "http://collector:4318/v1development/profiles"}, "http/protobuf", byHTTPPort},
		{Profile{OTLPEndpoint: "collector:4317"}, "grpc", byOtherPort},
		{Profile{OTLPEndpoint: "collector"}, "grpc", byOtherPort},
		{Profile{OTLPEndpoint: "https://collector"}, "grpc", byOtherPort},
		{Profile{OTLPEndpoint: "collector:4318", OTLPProtocol: "grpc"}, "grpc", set},
		{Profile{OTLPEndpoint: "https://otlp.example.com", OTLPProtocol: "http/protobuf"}, "http/protobuf", set},
	} {
		protocol, why, err := tc.p.ExportProtocol()
		if err != nil || protocol != tc.protocol || why != tc.why {
			t.Errorf("%+v: %s (%s), %v; want %s (%s)", tc.p, protocol, why, err, tc.protocol, tc.why)
		}
	}
}

// The YAML block, then OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL, then the
// flag; the spans' protocol settings do not count.
func TestProfileOTLPProtocolPrecedence(t *testing.T) {
	yml := "profile:\n  otlp_endpoint: collector:4317\n  otlp_protocol: grpc\n"
	for name, tc := range map[string]struct {
		yml  string
		env  map[string]string
		args []string
		want string // Profile.OTLPProtocol
		// protocol is what ExportProtocol says.
		protocol string
	}{
		"yaml": {yml: yml, want: "grpc", protocol: "grpc"},
		"env over yaml": {yml: yml, env: map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL": "http/protobuf"},
			want: "http/protobuf", protocol: "http/protobuf"},
		"flag over env": {yml: yml, env: map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL": "http/protobuf"},
			args: []string{"--profile-otlp-protocol=grpc"}, want: "grpc", protocol: "grpc"},
		"not the spans' settings": {
			yml:  "otlp:\n  protocol: http/protobuf\nprofile:\n  otlp_endpoint: collector:4317\n",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
			args: []string{"--otlp-protocol=http/protobuf"}, want: "", protocol: "grpc"},
		"flags alone": {args: []string{"--profile-otlp-endpoint=collector:4317", "--profile-otlp-protocol=http/protobuf"},
			want: "http/protobuf", protocol: "http/protobuf"},
	} {
		c, err := load(t, tc.yml, tc.env, tc.args...)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		protocol, _, err := c.Profile.ExportProtocol()
		if c.Profile.OTLPProtocol != tc.want || protocol != tc.protocol || err != nil {
			t.Errorf("%s: otlp_protocol %q, exported with %s (%v); want %q, %s", name, c.Profile.OTLPProtocol, protocol, err, tc.want, tc.protocol)
		}
	}
}

func TestProfileOTLPValidateRejects(t *testing.T) {
	const (
		protocolSetting = "profile.otlp_protocol (OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL, --profile-otlp-protocol)"
		endpointSetting = "profile.otlp_endpoint (WEFT_PROFILE_OTLP_ENDPOINT, --profile-otlp-endpoint)"
	)
	for _, tc := range []struct {
		yml  string
		env  map[string]string
		args []string
		want string
	}{
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL": "http/json"},
			want: protocolSetting + ` "http/json": OTLP/HTTP with JSON is not supported; want grpc or http/protobuf`},
		{yml: "profile:\n  otlp_endpoint: collector:4318\n  otlp_protocol: http/json\n",
			want: protocolSetting + ` "http/json": OTLP/HTTP with JSON is not supported; want grpc or http/protobuf`},
		{args: []string{"--profile-otlp-protocol=thrift"},
			want: protocolSetting + ` "thrift": want grpc or http/protobuf`},
		{args: []string{"--profile-otlp-endpoint=ftp://collector:4317"},
			want: endpointSetting + ` "ftp://collector:4317": want host:port, http:// or https://`},
		{env: map[string]string{"WEFT_PROFILE_OTLP_ENDPOINT": "ftp://collector:4318"},
			want: endpointSetting + ` "ftp://collector:4318": want http://, https:// or host:port`},
		{args: []string{"--profile-otlp-endpoint=https://", "--profile-otlp-protocol=http/protobuf"},
			want: endpointSetting + ` "https://": no host`},
		{args: []string{"--profile-otlp-endpoint=http://"},
			want: endpointSetting + ` "http://": no host`},
		{args: []string{"--profile-otlp-endpoint=http://[::1"},
			want: endpointSetting + ` "http://[::1": parse "http://[::1": missing ']' in host`},
	} {
		_, err := load(t, tc.yml, tc.env, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("yaml %q env %v args %v: error %v\nwant %s", tc.yml, tc.env, tc.args, err, tc.want)
		}
	}
}
