package export

import (
	"bytes"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// The codec's bytes are protobuf's, also in a buffer a larger request
// left behind: batches of every size in turn, each buffer freed (back to
// the pool) before the next.
func TestExportCodecMarshalsAsProtobuf(t *testing.T) {
	enc, err := newSpanEncoder("codec")
	if err != nil {
		t.Fatal(err)
	}
	all := goldenBatch(600)
	// A zero-filled buffer would hide bytes left unwritten.
	stale := bytes.Repeat([]byte{0xa5}, 1<<20)
	dirtyPool.Put(&stale)
	for _, n := range []int{600, 1, 40, 600, 7, 300} {
		req := &collectortrace.ExportTraceServiceRequest{ResourceSpans: enc.encode(all[:n])}
		want, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		data, err := exportCodec{}.Marshal(req)
		if err != nil {
			t.Fatalf("%d spans: %v", n, err)
		}
		if got := data.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("%d spans: %d bytes differ from protobuf's %d", n, len(got), len(want))
		}
		data.Free()
		var back collectortrace.ExportTraceServiceRequest
		if err := (exportCodec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, &back); err != nil {
			t.Fatalf("%d spans: unmarshal: %v", n, err)
		}
		if again, _ := proto.Marshal(&back); !bytes.Equal(again, want) {
			t.Fatalf("%d spans: unmarshalled request differs", n)
		}
	}
	if _, err := (exportCodec{}).Marshal("not a message"); err == nil {
		t.Fatal("a string was marshalled")
	}
}

// BenchmarkMarshalRequest compares the codec with gRPC's own on a batch
// of 512 spans, the buffer freed after each request as gRPC frees it
// once sent.
func BenchmarkMarshalRequest(b *testing.B) {
	enc, err := newSpanEncoder("bench")
	if err != nil {
		b.Fatal(err)
	}
	req := &collectortrace.ExportTraceServiceRequest{ResourceSpans: enc.encode(goldenBatch(512))}
	for _, c := range []struct {
		name  string
		codec interface {
			Marshal(any) (mem.BufferSlice, error)
		}
	}{{"grpc", grpcProtoCodec()}, {"export", exportCodec{}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				data, err := c.codec.Marshal(req)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*512), "ns/span")
		})
	}
}
