package export

import (
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// BenchmarkEncodeBatch is the per-span cost of turning a batch of weft
// spans into the OTLP request bytes the client sends.
func BenchmarkEncodeBatch(b *testing.B) {
	enc, err := newSpanEncoder("bench")
	if err != nil {
		b.Fatal(err)
	}
	res := goldenResolver{}
	batch := make([]queued, 0, 512)
	for len(batch) < cap(batch) {
		for _, s := range goldenSpans() {
			r, _ := res.Resolve(s.PID)
			batch = append(batch, queued{span: *s, res: r})
		}
	}
	batch = batch[:512]
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		// Marshalled as gRPC's codec marshals a large message.
		req := &collectortrace.ExportTraceServiceRequest{ResourceSpans: enc.encode(batch)}
		_ = proto.Size(req)
		buf, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf[:0], req)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/span")
}
