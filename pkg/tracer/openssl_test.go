package tracer

import (
	"slices"
	"testing"
)

// The return probes go on the read, write and handshake functions only,
// each with its own function's cookie: a uretprobe on BIO_write would
// trap on every TLS write for nothing, and a cookie shifted by one would
// report a read as a write.
func TestReturningKeepsCookiesOfProbedReturns(t *testing.T) {
	var cookies []uint64
	for i := range sslFuncs {
		cookies = append(cookies, uint64(i))
	}
	syms, got := returning(sslFuncs, cookies)
	wantSyms := []string{"SSL_write", "SSL_write_ex", "SSL_read", "SSL_read_ex", "SSL_do_handshake"}
	if !slices.Equal(syms, wantSyms) || !slices.Equal(got, []uint64{0, 1, 2, 3, 4}) {
		t.Errorf("returning(all) = %v %v, want %v [0 1 2 3 4]", syms, got, wantSyms)
	}
	// A library without the _ex variants: cookies follow their functions.
	syms, got = returning([]string{"SSL_write", "SSL_read", "SSL_do_handshake", "SSL_free", "BIO_write"},
		[]uint64{0, 2, 4, 5, 6})
	if !slices.Equal(syms, []string{"SSL_write", "SSL_read", "SSL_do_handshake"}) || !slices.Equal(got, []uint64{0, 2, 4}) {
		t.Errorf("returning(no _ex) = %v %v", syms, got)
	}
}
