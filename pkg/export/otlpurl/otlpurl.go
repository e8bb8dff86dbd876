// Package otlpurl reads OTLP/HTTP endpoints the one way both the settings
// (checked at start-up) and the exporters (which post to them) need.
package otlpurl

import (
	"errors"
	"net/url"
	"strings"
)

// Parse reads an OTLP/HTTP endpoint: an http or https URL, or
// host[:port][/path], which is https, or http when insecure.
func Parse(endpoint string, insecure bool) (*url.URL, error) {
	if !strings.Contains(endpoint, "://") {
		scheme := "https"
		if insecure {
			scheme = "http"
		}
		endpoint = scheme + "://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("want http://, https:// or host:port")
	}
	if u.Host == "" {
		return nil, errors.New("no host")
	}
	return u, nil
}
