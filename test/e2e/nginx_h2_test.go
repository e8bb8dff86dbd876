package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// nginx serving HTTP/2 (TLS by ALPN, and h2c with prior knowledge) to a
// client weft does not trace, proxying each stream to a Python backend
// whose handlers wait: 300 streams, 16 at a time on one connection, the
// odd ones with a traceparent of their own, which nginx does not pass on
// (else weft leaves it, and the backend's span goes under the caller's
// span, as for HTTP/1: docs/architecture.md, Injection). nginx's server
// span of each stream is decided in the kernel where nginx starts its
// upstream call (bpf/include/nginx.h), so that the call goes under it and
// the backend under the call: odd streams continue their traceparent,
// even ones start a trace at nginx (their client is not traced on this
// host). 300/300 chains of three spans. With auth_request, each stream's
// subrequest calls the backend first: that call, whose stream names the
// main request, is not one the kernel decides for (it starts a trace of
// its own, never under another stream's span), and the main request's
// call still goes under its stream.
func TestNginxH2Upstream(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		name       string
		tls, authz bool
	}{{"tls", true, false}, {"h2c", false, false}, {"tls,auth_request", true, true}} {
		t.Run(c.name, func(t *testing.T) { nginxH2Upstream(t, c.tls, c.authz) })
	}
}

func nginxH2Upstream(t *testing.T, tlsOn, authz bool) {
	const n = 300
	rcv := otlptest.Start(t)
	backend, backAddr := startListener(t, exec.Command("python3", filepath.Join(repoRoot(), "test", "e2e", "testdata", "chain.py")))
	listen, scheme := " ssl http2", "https"
	if !tlsOn {
		listen, scheme = " http2", "http"
	}
	location, server := ` proxy_set_header traceparent "";`, ""
	if authz {
		location += ` auth_request /auth;`
		server = ` location = /auth { internal; proxy_pass http://backend/auth; proxy_set_header traceparent ""; }`
	}
	master, kids, addr := startNginxTLS(t, backAddr, listen, location, server)
	pids := []string{strconv.Itoa(master.Pid()), strconv.Itoa(backend.Pid())}
	for _, k := range kids {
		pids = append(pids, strconv.Itoa(k))
	}
	w := startWeft(t, rcv, "--pid="+strings.Join(pids, ","))
	defer func() {
		if t.Failed() {
			t.Logf("weft:\n%s", w.Output())
		}
	}()
	hooks := "nginx: upstream requests tied to their downstream request"
	if tlsOn {
		hooks += "; TLS: OpenSSL in "
	}
	waitWorkerHooks(t, w, kids, hooks)

	tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	if !tlsOn {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	defer tr.CloseIdleConnections()
	cli := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	parentOf := func(i int) (trace, span string) {
		return fmt.Sprintf("%032x", 0xa1000000+i), fmt.Sprintf("%016x", 0xb2000000+i)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, n)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				req, _ := http.NewRequestWithContext(context.Background(), "GET", fmt.Sprintf("%s://%s/req/%d", scheme, addr, i), nil)
				if i%2 == 1 {
					trace, span := parentOf(i)
					req.Header.Set("traceparent", "00-"+trace+"-"+span+"-01")
				}
				resp, err := cli.Do(req)
				if err != nil {
					errs <- fmt.Errorf("request %d: %w", i, err)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
					errs <- fmt.Errorf("request %d: %s over HTTP/%d", i, resp.Status, resp.ProtoMajor)
				}
			}
		})
	}
	for i := 1; i <= n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	perRequest := 3
	if authz {
		perRequest = 5
	}
	spans := waitSpans(t, rcv, perRequest*n, 60*time.Second, func(span) bool { return true })
	nginxServer, nginxClient, pyServer := 0, 1, 2
	authCalls := map[string]span{}
	var authServed []span
	var proxied []span
	for _, s := range spans {
		pid64, _ := s.res["process.pid"].(int64)
		switch {
		case s.attrs["url.path"] != "/auth":
			proxied = append(proxied, s)
		case int(pid64) == backend.Pid():
			authServed = append(authServed, s)
		default:
			authCalls[s.id] = s
		}
	}
	chains := chainsByRequest(t, proxied, 3, func(s span) int {
		pid64, _ := s.res["process.pid"].(int64)
		switch {
		case int(pid64) == backend.Pid() && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			return pyServer
		case int(pid64) != backend.Pid() && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			return nginxServer
		case int(pid64) != backend.Pid() && s.kind == tracepb.Span_SPAN_KIND_CLIENT:
			return nginxClient
		}
		return -1
	})
	right := 0
	for i := 1; i <= n; i++ {
		c := chains[strconv.Itoa(i)]
		if c == nil {
			t.Errorf("request %d: no spans", i)
			continue
		}
		ok := true
		for r, s := range c {
			if s.id == "" {
				t.Errorf("request %d: span %d of the chain missing", i, r)
				ok = false
				continue
			}
			wantProto, wantScheme := "1.0", "http" // nginx to its upstream
			if r == nginxServer {
				wantProto, wantScheme = "2", scheme
			}
			if s.attrs["url.scheme"] != wantScheme || attrInt(s, "http.response.status_code") != 200 ||
				s.attrs["network.protocol.version"] != wantProto {
				t.Errorf("request %d: %s", i, s)
				ok = false
			}
			wantTrace, wantParent := "", ""
			switch {
			case r > nginxServer:
				wantTrace, wantParent = c[r-1].trace, c[r-1].id
			case i%2 == 1:
				wantTrace, wantParent = parentOf(i)
			default:
				wantTrace = s.trace // a trace of its own
			}
			if s.trace != wantTrace || s.parent != wantParent {
				t.Errorf("request %d: %s, want trace %s parent %q", i, s, wantTrace, wantParent)
				ok = false
			}
		}
		if ok {
			right++
		}
	}
	if len(spans) != perRequest*n || right != n {
		t.Fatalf("%d spans, %d of %d chains right", len(spans), right, n)
	}
	if authz {
		rightAuth := 0
		for _, s := range authServed {
			c, ok := authCalls[s.parent]
			if ok && c.parent == "" && c.trace == s.trace && c.kind == tracepb.Span_SPAN_KIND_CLIENT {
				rightAuth++
			}
		}
		if len(authCalls) != n || rightAuth != n {
			t.Fatalf("%d auth calls, %d of %d served under a call that starts its trace", len(authCalls), rightAuth, len(authServed))
		}
	}
	m, _ := w.Metrics()
	if m["h2_served_new"] != n/2 || m["h2_served_unmatched"] != 0 {
		t.Errorf("streams the kernel started a trace for %d (want %d), unmatched %d", m["h2_served_new"], n/2, m["h2_served_unmatched"])
	}
}
