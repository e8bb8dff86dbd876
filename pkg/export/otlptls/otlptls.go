// Package otlptls builds the TLS configuration of weft's OTLP clients
// (spans and profiles, gRPC and HTTP) from the PEM files that the
// OpenTelemetry exporter settings name.
package otlptls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Files are the PEM files of the OTEL_EXPORTER_OTLP_*CERTIFICATE and
// *CLIENT_KEY settings. Empty fields are not used.
type Files struct {
	// Certificate holds the CAs that verify the server, in place of the
	// system's roots.
	Certificate string
	// ClientCertificate and ClientKey are the client's pair for mutual
	// TLS: both or neither.
	ClientCertificate string
	ClientKey         string
}

// Config loads the files. A file that cannot be read or holds no usable
// PEM is an error, so that a typo fails at start-up rather than at the
// first export.
func (f Files) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.Certificate != "" {
		b, err := os.ReadFile(f.Certificate)
		if err != nil {
			return nil, fmt.Errorf("load otlp certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("load otlp certificate %s: no PEM certificate in it", f.Certificate)
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.ClientCertificate != "" && f.ClientKey != "":
		pair, err := tls.LoadX509KeyPair(f.ClientCertificate, f.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("load otlp client certificate %s and key %s: %w", f.ClientCertificate, f.ClientKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case f.ClientCertificate != "" || f.ClientKey != "":
		return nil, errors.New("load otlp client certificate: the certificate and the key go together; set both or neither")
	}
	return cfg, nil
}
