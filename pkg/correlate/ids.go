package correlate

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"

	"github.com/weftdev/weft/pkg/spans"
)

// idSource makes W3C-compliant random ids. ChaCha8 seeded from the OS is
// unpredictable and far cheaper per id than crypto/rand.
type idSource struct{ r *rand.ChaCha8 }

func newIDSource() *idSource {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails on Linux ≥ 3.17
	return &idSource{r: rand.NewChaCha8(seed)}
}

func (s *idSource) traceID() spans.TraceID {
	var t spans.TraceID
	for !t.IsValid() {
		binary.LittleEndian.PutUint64(t[:8], s.r.Uint64())
		binary.LittleEndian.PutUint64(t[8:], s.r.Uint64())
	}
	return t
}

func (s *idSource) spanID() spans.SpanID {
	var id spans.SpanID
	for !id.IsValid() {
		binary.LittleEndian.PutUint64(id[:], s.r.Uint64())
	}
	return id
}
