package otlptest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
)

// ReadBody reads an OTLP/HTTP request's body, gunzipped when its
// Content-Encoding says gzip.
func ReadBody(req *http.Request) ([]byte, error) {
	body := io.Reader(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, fmt.Errorf("gunzip the body: %w", err)
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("read the body: %w", err)
	}
	return b, nil
}
