package otlptest

import (
	"net/http"
	"strings"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// ServeHTTP makes the receiver an OTLP/HTTP endpoint (protobuf, gzip'd or
// not) on any path; serve it with httptest. Each request's headers are
// kept as its Metadata, lower-cased, with the path as ":path". An error set
// with SetError is answered 400 Bad Request, which is not retried.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a POST of application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	b, err := ReadBody(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	md := metadata.MD{":path": {req.URL.Path}}
	for k, v := range req.Header {
		md[strings.ToLower(k)] = append([]string(nil), v...)
	}
	resp, err := r.export(md, &in)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := proto.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}
