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
	batch := goldenBatch(512)
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

// goldenBatch is n spans queued for export: the golden spans over and
// over, each with its resource.
func goldenBatch(n int) []queued {
	batch := make([]queued, 0, n)
	for len(batch) < n {
		for _, s := range goldenSpans() {
			if len(batch) == n {
				break
			}
			r, _ := goldenResolver{}.Resolve(s.PID)
			batch = append(batch, queued{span: *s, res: r})
		}
	}
	return batch
}
