package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/weftdev/weft/pkg/export/otlpurl"
)

// The OTLP protocols weft exports with.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// otlpHTTPPort is the port the specification gives OTLP/HTTP; an endpoint
// on it with no protocol set is taken to want OTLP/HTTP.
const otlpHTTPPort = "4318"

// OTLP is the trace export target, named as the OpenTelemetry exporter
// specification's OTEL_EXPORTER_OTLP_* variables name it. No endpoint at
// all prints spans to the terminal instead.
type OTLP struct {
	// Endpoint is the generic endpoint (OTEL_EXPORTER_OTLP_ENDPOINT): for
	// OTLP/HTTP a base URL to whose path /v1/traces is appended.
	Endpoint string `yaml:"endpoint"`
	// TracesEndpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is used as it is
	// and wins over Endpoint.
	TracesEndpoint string `yaml:"traces_endpoint"`
	// Protocol is grpc or http/protobuf; empty infers it from the
	// endpoint's port (see Target).
	Protocol string            `yaml:"protocol"`
	Headers  map[string]string `yaml:"headers"`
	// Insecure is plaintext for gRPC, and for an HTTP endpoint without a
	// scheme (with one, the scheme decides).
	Insecure bool          `yaml:"insecure"`
	Timeout  time.Duration `yaml:"timeout"`
	// Compression is gzip or none.
	Compression string `yaml:"compression"`
	// Certificate is a PEM file of the CAs that verify the server, in
	// place of the system's.
	Certificate string `yaml:"certificate"`
	// ClientCertificate and ClientKey are PEM files for mutual TLS; both
	// or neither.
	ClientCertificate string `yaml:"client_certificate"`
	ClientKey         string `yaml:"client_key"`
	// BatchDelay is the longest a span waits for its batch to be sent
	// (OTEL_BSP_SCHEDULE_DELAY); a full batch goes at once.
	BatchDelay time.Duration `yaml:"batch_delay"`
}

func defaultOTLP() OTLP {
	return OTLP{Timeout: 10 * time.Second, Compression: "none", BatchDelay: time.Second}
}

// Enabled reports whether spans go to an OTLP endpoint.
func (o OTLP) Enabled() bool { return o.Endpoint != "" || o.TracesEndpoint != "" }

// OTLPTarget is where and how spans are sent, resolved from OTLP.
type OTLPTarget struct {
	// Protocol is ProtocolGRPC or ProtocolHTTPProtobuf.
	Protocol string
	// Why says how Protocol was chosen, for the log.
	Why string
	// Endpoint is, for gRPC, host:port or a URL whose scheme selects TLS,
	// as given; for OTLP/HTTP, the URL spans are posted to.
	Endpoint string
}

// Target applies the specification's endpoint rules: the traces endpoint
// as it is, else the generic one, to which OTLP/HTTP appends /v1/traces.
// With no protocol set, port 4318 (OTLP/HTTP's) means http/protobuf and
// any other grpc, which weft always used.
func (o OTLP) Target() (OTLPTarget, error) {
	endpoint, generic, key := o.TracesEndpoint, false, "traces_endpoint"
	if endpoint == "" {
		endpoint, generic, key = o.Endpoint, true, "endpoint"
	}
	return o.target(endpoint, generic, "v1/traces", otlpSetting(key), protocolChoice{o.Protocol, "otlp.protocol", otlpSetting("protocol")})
}

// protocolChoice is a signal's protocol setting: its value, its key for
// the log, and its every name for errors.
type protocolChoice struct{ value, key, setting string }

// target applies the endpoint rules for one signal: a generic endpoint
// gets signalPath appended for OTLP/HTTP, a signal's own is used as it is.
// setting names the endpoint's setting in errors.
func (o OTLP) target(endpoint string, generic bool, signalPath, setting string, protocol protocolChoice) (OTLPTarget, error) {
	if endpoint == "" {
		return OTLPTarget{}, errors.New("otlp: no endpoint")
	}
	t := OTLPTarget{Protocol: protocol.value, Why: protocol.key + " is set"}
	if t.Protocol == "" {
		var err error
		if t.Protocol, t.Why, err = inferProtocol(endpoint); err != nil {
			return OTLPTarget{}, fmt.Errorf("%s %q: %w", setting, endpoint, err)
		}
	}
	var err error
	switch t.Protocol {
	case ProtocolGRPC:
		t.Endpoint, err = grpcEndpoint(endpoint)
	case ProtocolHTTPProtobuf:
		t.Endpoint, err = httpSignalURL(endpoint, signalPath, generic, o.Insecure)
	default:
		return OTLPTarget{}, fmt.Errorf("%s %q: want grpc or http/protobuf", protocol.setting, t.Protocol)
	}
	if err != nil {
		return OTLPTarget{}, fmt.Errorf("%s %q: %w", setting, endpoint, err)
	}
	return t, nil
}

// inferProtocol is the protocol of an endpoint for which none is set:
// http/protobuf on port 4318 (OTLP/HTTP's), else grpc, which weft always
// used. why says which, for the log.
func inferProtocol(endpoint string) (protocol, why string, err error) {
	port, err := endpointPort(endpoint)
	if err != nil {
		return "", "", err
	}
	if port == otlpHTTPPort {
		return ProtocolHTTPProtobuf, "no protocol set, and port 4318 is OTLP/HTTP's", nil
	}
	return ProtocolGRPC, "no protocol set, and the port is not 4318 (OTLP/HTTP's)", nil
}

// checkProtocol accepts an unset protocol, grpc and http/protobuf;
// setting names the setting in the error.
func checkProtocol(setting, protocol string) error {
	switch protocol {
	case "", ProtocolGRPC, ProtocolHTTPProtobuf:
		return nil
	case "http/json":
		return fmt.Errorf("%s %q: OTLP/HTTP with JSON is not supported; want grpc or http/protobuf", setting, protocol)
	}
	return fmt.Errorf("%s %q: want grpc or http/protobuf", setting, protocol)
}

// endpointPort returns the port of host:port[/path] or of a URL; empty
// when there is none.
func endpointPort(endpoint string) (string, error) {
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", err
		}
		return u.Port(), nil
	}
	hostPort, _, _ := strings.Cut(endpoint, "/")
	_, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", nil // a host alone: no port
	}
	return port, nil
}

// grpcEndpoint checks a gRPC endpoint: host:port, or an http or https
// URL (the scheme selects TLS).
func grpcEndpoint(endpoint string) (string, error) {
	if !strings.Contains(endpoint, "://") {
		return endpoint, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("want host:port, http:// or https://")
	}
	if u.Host == "" {
		return "", errors.New("no host")
	}
	return endpoint, nil
}

// httpSignalURL is the URL OTLP/HTTP posts a signal to: a base URL (the
// generic endpoint) gets signalPath (v1/traces) appended to its path; a
// signal's own endpoint is kept, an empty path being /. Without a scheme
// it is https, or http when insecure.
func httpSignalURL(endpoint, signalPath string, base, insecure bool) (string, error) {
	u, err := otlpurl.Parse(endpoint, insecure)
	if err != nil {
		return "", err
	}
	switch {
	case base:
		u.Path, u.RawPath = path.Join("/", u.Path, signalPath), ""
	case u.Path == "":
		u.Path = "/"
	}
	return u.String(), nil
}

func (o OTLP) validate() error {
	if err := checkProtocol(otlpSetting("protocol"), o.Protocol); err != nil {
		return err
	}
	switch o.Compression {
	case "gzip", "none":
	default:
		return fmt.Errorf("%s %q: want gzip or none", otlpSetting("compression"), o.Compression)
	}
	if (o.ClientCertificate == "") != (o.ClientKey == "") {
		return fmt.Errorf("%s and %s: set both or neither", otlpSetting("client_certificate"), otlpSetting("client_key"))
	}
	if o.Timeout < 0 {
		return fmt.Errorf("%s %v: want a positive duration", otlpSetting("timeout"), o.Timeout)
	}
	if o.BatchDelay <= 0 {
		return fmt.Errorf("otlp.batch_delay (OTEL_BSP_SCHEDULE_DELAY, --otlp-batch-delay) %v: want a positive duration", o.BatchDelay)
	}
	if o.Enabled() {
		if _, err := o.Target(); err != nil {
			return err
		}
	}
	return nil
}

// otlpSetting names a setting every way it can be given, for errors:
// "otlp.client_key (OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_KEY, --otlp-client-key)".
func otlpSetting(key string) string {
	env := "OTEL_EXPORTER_OTLP_[TRACES_]" + strings.ToUpper(key)
	if key == "traces_endpoint" {
		env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	}
	return fmt.Sprintf("otlp.%s (%s, --otlp-%s)", key, env, strings.ReplaceAll(key, "_", "-"))
}

// applyOTLPEnv reads the specification's variables, each TRACES_ one over
// its generic one. A generic endpoint clears the traces endpoint of the
// YAML file: the environment is the higher layer.
func applyOTLPEnv(o *OTLP, getenv func(string) string) error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if v := getenv(name); v != "" {
			h, err := ParseHeaders(v)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if o.Headers == nil {
				o.Headers = map[string]string{}
			}
			for k, val := range h {
				o.Headers[k] = val
			}
		}
	}
	var err error
	set := func(suffix string, f func(string) error) {
		for _, name := range []string{"OTEL_EXPORTER_OTLP_" + suffix, "OTEL_EXPORTER_OTLP_TRACES_" + suffix} {
			if v := getenv(name); v != "" && err == nil {
				if e := f(v); e != nil {
					err = fmt.Errorf("%s: %w", name, e)
				}
			}
		}
	}
	if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		o.Endpoint, o.TracesEndpoint = v, ""
	}
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		o.TracesEndpoint = v
	}
	set("PROTOCOL", func(v string) error { o.Protocol = v; return nil })
	set("INSECURE", func(v string) (e error) { o.Insecure, e = strconv.ParseBool(v); return })
	set("TIMEOUT", func(v string) error {
		ms, e := strconv.Atoi(v) // milliseconds, per the specification
		o.Timeout = time.Duration(ms) * time.Millisecond
		return e
	})
	set("COMPRESSION", func(v string) error { o.Compression = v; return nil })
	set("CERTIFICATE", func(v string) error { o.Certificate = v; return nil })
	set("CLIENT_CERTIFICATE", func(v string) error { o.ClientCertificate = v; return nil })
	set("CLIENT_KEY", func(v string) error { o.ClientKey = v; return nil })
	if v := getenv("OTEL_BSP_SCHEDULE_DELAY"); v != "" && err == nil {
		ms, e := strconv.Atoi(v) // milliseconds, per the specification
		if e != nil {
			return fmt.Errorf("OTEL_BSP_SCHEDULE_DELAY: %w", e)
		}
		o.BatchDelay = time.Duration(ms) * time.Millisecond
	}
	return err
}

// otlpFlags are the --otlp-* flags.
type otlpFlags struct {
	endpoint, tracesEndpoint, protocol, headers string
	compression, certificate, clientCert, key   string
	insecure                                    bool
	timeout, batchDelay                         time.Duration
}

func (f *otlpFlags) register(fs *flag.FlagSet, d OTLP) {
	fs.StringVar(&f.endpoint, "otlp-endpoint", "", "OTLP endpoint: host:port, or a base URL to which OTLP/HTTP appends /v1/traces (default: print spans to the terminal)")
	fs.StringVar(&f.tracesEndpoint, "otlp-traces-endpoint", "", "OTLP traces endpoint, used as it is (wins over -otlp-endpoint)")
	fs.StringVar(&f.protocol, "otlp-protocol", "", "grpc or http/protobuf (default: http/protobuf on port 4318, else grpc)")
	fs.StringVar(&f.headers, "otlp-headers", "", "OTLP headers, k=v,k2=v2")
	fs.BoolVar(&f.insecure, "otlp-insecure", false, "OTLP without TLS (gRPC, and HTTP endpoints without a scheme)")
	fs.DurationVar(&f.timeout, "otlp-timeout", d.Timeout, "one batch export, retries included")
	fs.DurationVar(&f.batchDelay, "otlp-batch-delay", d.BatchDelay, "the longest a span waits for its batch to be sent")
	fs.StringVar(&f.compression, "otlp-compression", d.Compression, "gzip or none")
	fs.StringVar(&f.certificate, "otlp-certificate", "", "PEM file of the CAs that verify the OTLP server (default: the system's)")
	fs.StringVar(&f.clientCert, "otlp-client-certificate", "", "PEM client certificate for mutual TLS (with -otlp-client-key)")
	fs.StringVar(&f.key, "otlp-client-key", "", "PEM private key of -otlp-client-certificate")
}

// apply copies the flag called name, if it is one of these, into o. The
// generic endpoint clears a traces endpoint that a lower layer set.
func (f *otlpFlags) apply(o *OTLP, name string) (err error) {
	switch name {
	case "otlp-endpoint":
		o.Endpoint, o.TracesEndpoint = f.endpoint, ""
	case "otlp-traces-endpoint":
		o.TracesEndpoint = f.tracesEndpoint
	case "otlp-protocol":
		o.Protocol = f.protocol
	case "otlp-headers":
		o.Headers, err = ParseHeaders(f.headers)
	case "otlp-insecure":
		o.Insecure = f.insecure
	case "otlp-timeout":
		o.Timeout = f.timeout
	case "otlp-batch-delay":
		o.BatchDelay = f.batchDelay
	case "otlp-compression":
		o.Compression = f.compression
	case "otlp-certificate":
		o.Certificate = f.certificate
	case "otlp-client-certificate":
		o.ClientCertificate = f.clientCert
	case "otlp-client-key":
		o.ClientKey = f.key
	}
	return err
}
