package httpparse

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The parser against llhttp's own test vectors (Node.js's HTTP parser,
// MIT), read from the project's shared directory, never copied in. Every
// vector is fed whole, byte by byte and in random pieces. For each, the
// messages llhttp completes in strict mode are the ones weft must report,
// field for field (method, target, status, version, body length, Host,
// User-Agent); where llhttp refuses the input, weft may still read it only
// for a difference named in weftDifferences, which docs/architecture.md
// ("The HTTP parser") documents.

// llhttpVectors is where the vectors are: ../shared next to the repository.
func llhttpVectors(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "conformance", "llhttp"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "request")); err != nil {
		t.Skipf("llhttp vectors not found at %s: %v", dir, err)
	}
	return dir
}

type llVector struct {
	where string // file:line
	name  string
	typ   string
	meta  map[string]any
	input []byte
	log   []string
}

// llMessage is a message as llhttp's log reports it.
type llMessage struct {
	method, url      string
	status           int
	major, minor     int
	body             int
	host, userAgent  string
	headersComplete  bool
	complete         bool
	field, lastField string
}

type llResult struct {
	msgs []llMessage
	err  string // "code=N reason=..." of the first error, "" if none
}

var (
	llEscNewline = regexp.MustCompile(`\\(\r\n|\r|\n)`)
	llHex        = regexp.MustCompile(`\\x([0-9a-fA-F]+)`)
	llOctal      = regexp.MustCompile(`\\([0-7]{1,3})`)
	llLine       = regexp.MustCompile(`^off=\d+ (.*)$`)
	llSpan       = regexp.MustCompile(`^len=(\d+) span\[(\w+)\]=(.*)$`)
	llHeaders    = regexp.MustCompile(`^headers complete (?:method=\d+|status=(\d+)) v=(\d+)/(\d+)`)
)

// llInput turns an http block into bytes as llhttp's md-test does.
func llInput(block string) []byte {
	s := strings.TrimSuffix(block, "\n")
	s = llEscNewline.ReplaceAllString(s, "")
	s = strings.NewReplacer("\r\n", "\r\n", "\r", "\r\n", "\n", "\r\n").Replace(s)
	s = strings.NewReplacer(`\r`, "\r", `\n`, "\n", `\t`, "\t", `\f`, "\f").Replace(s)
	s = llHex.ReplaceAllStringFunc(s, func(m string) string {
		v, _ := strconv.ParseUint(m[2:], 16, 8)
		return string([]byte{byte(v)})
	})
	s = llOctal.ReplaceAllStringFunc(s, func(m string) string {
		v, _ := strconv.ParseUint(m[1:], 8, 8)
		return string([]byte{byte(v)})
	})
	return []byte(s)
}

func readLLVectors(t *testing.T, dir string) []llVector {
	t.Helper()
	var out []llVector
	for _, sub := range []string{"request", "response"} {
		files, err := filepath.Glob(filepath.Join(dir, sub, "*.md"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no vectors in %s/%s: %v", dir, sub, err)
		}
		for _, f := range files {
			out = append(out, parseLLFile(t, f)...)
		}
	}
	return out
}

func parseLLFile(t *testing.T, path string) []llVector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out   []llVector
		cur   *llVector
		name  string
		block []string
		fence string
		start int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence != "" {
			if line != "```" {
				block = append(block, line)
				continue
			}
			switch fence {
			case "http":
				cur.input = llInput(strings.Join(block, "\n") + "\n")
			case "log":
				for _, l := range block {
					cur.log = append(cur.log, strings.NewReplacer(`\t`, "\t", `\f`, "\f").Replace(l))
				}
				out = append(out, *cur)
				cur = nil
			}
			fence, block = "", nil
			continue
		}
		switch {
		case strings.HasPrefix(line, "#"):
			name = strings.TrimSpace(strings.TrimLeft(line, "#"))
		case strings.HasPrefix(line, "<!-- meta="):
			js := strings.TrimSuffix(strings.TrimPrefix(line, "<!-- meta="), " -->")
			meta := map[string]any{}
			if err := json.Unmarshal([]byte(js), &meta); err != nil {
				t.Fatalf("%s:%d: meta %q: %v", path, n, js, err)
			}
			typ, _ := meta["type"].(string)
			start = n
			cur = &llVector{where: fmt.Sprintf("%s:%d", filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), start), name: name, typ: typ, meta: meta}
		case cur != nil && (line == "```http" || line == "```log"):
			fence = strings.TrimPrefix(line, "```")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// llhttpResult reads what llhttp reported from a vector's log.
func llhttpResult(v llVector) llResult {
	var r llResult
	var m *llMessage
	for _, line := range v.log {
		g := llLine.FindStringSubmatch(line)
		if g == nil {
			continue
		}
		ev := g[1]
		if r.err != "" {
			continue
		}
		switch {
		case ev == "message begin":
			r.msgs = append(r.msgs, llMessage{})
			m = &r.msgs[len(r.msgs)-1]
		case strings.HasPrefix(ev, "error "):
			r.err = strings.TrimPrefix(ev, "error ")
		case m == nil:
		case ev == "message complete":
			m.complete = true
		case strings.HasPrefix(ev, "headers complete"):
			h := llHeaders.FindStringSubmatch(ev)
			if h != nil {
				m.status, _ = strconv.Atoi(h[1])
				m.major, _ = strconv.Atoi(h[2])
				m.minor, _ = strconv.Atoi(h[3])
			}
			m.headersComplete = true
		default:
			s := llSpan.FindStringSubmatch(ev)
			if s == nil {
				continue
			}
			n, _ := strconv.Atoi(s[1])
			// The value as llhttp printed it: between quotes, unescaped.
			val := strings.TrimSuffix(strings.TrimPrefix(s[3], `"`), `"`)
			switch s[2] {
			case "method":
				m.method += val
			case "url":
				m.url += val
			case "body": // its value may run over several lines
				m.body += n
			case "header_field":
				if m.lastField != "field" {
					m.field = ""
				}
				m.field += val
				m.lastField = "field"
			case "header_value":
				if m.lastField == "field" {
					switch strings.ToLower(m.field) {
					case "host":
						if m.host == "" {
							m.host = val
						}
					case "user-agent":
						if m.userAgent == "" {
							m.userAgent = val
						}
					}
				}
				m.lastField = "value"
			}
		}
	}
	return r
}

// weftMessage is what the comparison looks at of a message weft reported.
func weftMessage(m Message) string {
	return fmt.Sprintf("method=%q target=%q status=%d v=%d/%d body=%d host=%q ua=%q",
		m.Method, m.Target, m.StatusCode, m.ProtoMajor, m.ProtoMinor, m.BodyBytes, m.Host, m.UserAgent)
}

func llMessageString(m llMessage) string {
	return fmt.Sprintf("method=%q target=%q status=%d v=%d/%d body=%d host=%q ua=%q",
		m.method, m.url, m.status, m.major, m.minor, m.body, strings.TrimRight(m.host, " \t"), strings.TrimRight(m.userAgent, " \t"))
}

// feed runs input through a parser in pieces and returns the complete
// messages it reported.
func feedLL(mode Mode, input []byte, pieces func(int) int, finish bool) []string {
	p := NewParser(mode)
	var done []string
	collect := func(ms []Message) {
		for _, m := range ms {
			if m.Phase == PhaseDone {
				done = append(done, weftMessage(m))
			}
		}
	}
	for i := 0; i < len(input); {
		n := min(pieces(len(input)-i), len(input)-i)
		collect(p.Feed(input[i:i+n], n, uint64(i+1)))
		i += n
	}
	if finish {
		collect(p.Close(uint64(len(input) + 1)))
	}
	return done
}

func TestLLHTTPConformance(t *testing.T) {
	dir := llhttpVectors(t)
	vectors := readLLVectors(t, dir)
	if len(vectors) < 200 {
		t.Fatalf("read %d vectors from %s, want the ~270 of llhttp 9.4", len(vectors), dir)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	stats := map[string]int{}
	for _, v := range vectors {
		mode := ModeRequest
		if strings.HasPrefix(v.typ, "response") {
			mode = ModeResponse
		}
		finish := strings.HasSuffix(v.typ, "-finish")
		whole := feedLL(mode, v.input, func(n int) int { return n }, finish)
		bytewise := feedLL(mode, v.input, func(int) int { return 1 }, finish)
		random := feedLL(mode, v.input, func(n int) int { return 1 + rng.IntN(max(1, n)) }, finish)
		if fmt.Sprint(whole) != fmt.Sprint(bytewise) || fmt.Sprint(whole) != fmt.Sprint(random) {
			t.Errorf("%s %q: pieces change the result:\n whole: %v\n bytes: %v\nrandom: %v", v.where, v.name, whole, bytewise, random)
			continue
		}
		ll := llhttpResult(v)
		var want []string
		for _, m := range ll.msgs {
			if m.complete {
				want = append(want, llMessageString(m))
			}
		}
		key := v.where[:strings.Index(v.where, ":")] + "#" + v.name
		named, isNamed := weftReadings[key]
		if !isNamed {
			named, isNamed = lenientReadings[strings.TrimPrefix(strings.TrimPrefix(v.typ, "request-"), "response-")]
		}
		if isNamed {
			if _, ok := weftDifferences[named]; !ok {
				t.Fatalf("%s: reading %q is not in weftDifferences", key, named)
			}
		}
		strict := v.typ == "request" || v.typ == "response" || v.typ == "request-finish" || v.typ == "response-finish"
		_, skipBody := v.meta["skipBody"]
		switch {
		case skipBody: // llhttp's API skipping a body: nothing to compare
			stats["skipBody"]++
		case strict && fmt.Sprint(whole) == fmt.Sprint(want):
			stats["agree"]++
			if isNamed {
				t.Errorf("%s %q: agrees with llhttp, yet named %q in weftReadings", v.where, v.name, named)
			}
		case !strict && len(whole) == 0:
			stats["lenient in llhttp, refused by weft"]++
		case isNamed:
			stats[named]++
		case strict && (ll.err == "" || strings.HasPrefix(ll.err, "code=22 ")):
			t.Errorf("%s %q (%s): llhttp accepts it in strict mode, weft reads it otherwise\n  weft: %v\nllhttp: %v", v.where, v.name, v.typ, whole, want)
		default:
			t.Errorf("%s %q (%s; llhttp strict: %s): weft reads what llhttp's strict mode refuses, and no named difference says why\n  weft: %v\nllhttp: %v", v.where, v.name, v.typ, ll.err, whole, want)
		}
	}
	t.Logf("%d vectors: %v", len(vectors), stats)
}

// weftDifferences are the readings where weft parts from llhttp's strict
// mode, each a choice (docs/architecture.md, "The HTTP parser"): weft
// observes traffic that servers already accepted, so it reads what they
// commonly accept rather than refusing it, and recognises a request start
// from its first bytes, mid-stream.
var weftDifferences = map[string]string{
	"nine-methods":    "only GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE and PATCH start a request: a stream that starts with another method (WebDAV, SSDP, QUERY...) is not taken for HTTP",
	"http-only":       "HTTP-like protocols (RTSP, ICE) are not HTTP/1.x",
	"no-http09":       "HTTP/0.9 requests (no version) are not read",
	"close-delimited": "a response delimited by the close is complete at the close, even when the close comes right after its head (RFC 9112, section 6.3)",
	"after-close":     "bytes after a message with Connection: close are read as the messages they start",
	"bare-cr":         "a lone CR ends a line",
	"bare-lf":         "a lone LF ends a line",
	"header-lines":    "header lines are not checked for what llhttp refuses in them (characters outside a token in a name, whitespace before the colon, control characters in a value, obsolete folding): a line is read for its name and value, or skipped (bad_header)",
	"chunk-size-line": "after a chunk's hexadecimal size, the rest of the line (extensions, spaces) is not checked",
	"target-chars":    "the request target's characters are not checked",
}

// lenientReadings names the difference a vector shows that only one of
// llhttp's lenient flags accepts, by the flag, when weft reads it too.
var lenientReadings = map[string]string{
	"lenient-keep-alive":              "after-close",
	"lenient-data-after-close":        "after-close",
	"lenient-headers":                 "header-lines",
	"lenient-header-value-relaxed":    "header-lines",
	"lenient-optional-lf-after-cr":    "bare-cr",
	"lenient-optional-cr-before-lf":   "bare-lf",
	"lenient-spaces-after-chunk-size": "chunk-size-line",
}

// weftReadings names, per vector (file#heading), the difference it shows.
var weftReadings = map[string]string{
	"request/method.md#REPORT request":                                                                                "nine-methods",
	"request/method.md#M-SEARCH request":                                                                              "nine-methods",
	"request/method.md#PURGE request":                                                                                 "nine-methods",
	"request/method.md#SEARCH request":                                                                                "nine-methods",
	"request/method.md#LINK request":                                                                                  "nine-methods",
	"request/method.md#SOURCE request":                                                                                "nine-methods",
	"request/method.md#QUERY request":                                                                                 "nine-methods",
	"request/method.md#SOURCE request with ICE":                                                                       "http-only",
	"request/method.md#OPTIONS request with RTSP":                                                                     "http-only",
	"request/method.md#ANNOUNCE request with RTSP":                                                                    "http-only",
	"request/sample.md#No HTTP version":                                                                               "no-http09",
	"response/finish.md#It should be safe to finish with cb after empty response":                                     "close-delimited",
	"request/connection.md#No restart when keep-alive is off (1.0)":                                                   "after-close",
	"request/invalid.md#Headers separated by dummy characters (lenient)":                                              "after-close",
	"request/connection.md#Not treating `\\r` as `-`":                                                                 "bare-cr",
	"request/invalid.md#Headers separated by CR":                                                                      "bare-cr",
	"request/invalid.md#Empty headers separated by CR":                                                                "bare-cr",
	"request/lenient-headers.md#Empty headers separated by CR (lenient)":                                              "bare-cr",
	"request/content-length.md#Missing CRLF-CRLF before body (lenient)":                                               "bare-cr",
	"request/transfer-encoding.md#Chunk header not terminated by CRLF":                                                "bare-cr",
	"request/transfer-encoding.md#Chunk header not terminated by CRLF (lenient)":                                      "bare-cr",
	"request/lenient-header-value-relaxed.md#CR without LF in header value should be rejected even with relaxed flag": "bare-cr",
	"response/invalid.md#Bare CR after response line (lenient)":                                                       "bare-cr",
	"request/invalid.md#Missing CR between headers":                                                                   "bare-lf",
	"request/invalid.md#Only LFs present":                                                                             "bare-lf",
	"request/sample.md#Line folding in header value with LF":                                                          "bare-lf",
	"request/invalid.md#Only LFs present (lenient)":                                                                   "bare-lf",
	"response/invalid.md#Only LFs present and no body (lenient)":                                                      "bare-lf",
	"response/invalid.md#Only LFs present and no body":                                                                "bare-lf",
	"request/connection.md#Invalid whitespace token with `Connection` header field":                                   "header-lines",
	"request/content-length.md#Invalid whitespace token with `Content-Length` header field":                           "header-lines",
	"request/content-length.md#Invalid whitespace token with `Content-Length` header field (lenient)":                 "header-lines",
	"request/content-length.md#`Content-Length` with CR instead of dash":                                              "header-lines",
	"request/invalid.md#Invalid header token #1":                                                                      "header-lines",
	"request/invalid.md#Invalid header token #2":                                                                      "header-lines",
	"request/invalid.md#Invalid header token #3":                                                                      "header-lines",
	"request/invalid.md#Corrupted Connection header":                                                                  "header-lines",
	"request/invalid.md#Corrupted header name":                                                                        "header-lines",
	"response/sample.md#Spaces in header name":                                                                        "header-lines",
	"request/invalid.md#Illegal header field name line folding":                                                       "header-lines",
	"request/invalid.md#Spaces before headers":                                                                        "header-lines",
	"request/transfer-encoding.md#Invalid OBS fold after chunked value":                                               "header-lines",
	"response/transfer-encoding.md#Invalid OBS fold after chunked value":                                              "header-lines",
	"request/lenient-header-value-relaxed.md#Control char in header value (strict)":                                   "header-lines",
	"request/lenient-headers.md#Header value":                                                                         "header-lines",
	"request/transfer-encoding.md#No semicolon before chunk extensions":                                               "chunk-size-line",
	"request/transfer-encoding.md#No extension after semicolon":                                                       "chunk-size-line",
	"request/transfer-encoding.md#Space after chunk header":                                                           "chunk-size-line",
	"response/transfer-encoding.md#Trailing space on chunked body":                                                    "chunk-size-line",
	"response/transfer-encoding.md#No semicolon before chunk extensions":                                              "chunk-size-line",
	"response/transfer-encoding.md#No extension after semicolon":                                                      "chunk-size-line",
	"request/uri.md#Disallow UTF-8 in URI path in strict mode":                                                        "target-chars",
}
