package httpparse

import "testing"

var nonHTTP = []struct {
	name string
	data string
}{
	{"binary garbage", "\x00\x01\x02\x03\xff\xfe\xfd\x80\x7f"},
	{"TLS ClientHello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x5e\x2a\x91\x03\x00"},
	{"TLS application data", "\x17\x03\x03\x00\x45\x8a\x1b"},
	{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
	{"Redis PING", "*1\r\n$4\r\nPING\r\n"},
	{"Redis inline", "PING\r\n"},
	{"Redis reply", "+PONG\r\n"},
	{"PostgreSQL SSLRequest", "\x00\x00\x00\x08\x04\xd2\x16\x2f"},
	{"PostgreSQL startup", "\x00\x00\x00\x29\x00\x03\x00\x00user\x00postgres\x00database\x00app\x00\x00"},
	{"MySQL greeting", "\x4a\x00\x00\x00\x0a8.0.36\x00"},
	{"SSH banner", "SSH-2.0-OpenSSH_9.6\r\n"},
	{"lower-case method", "get / HTTP/1.1\r\n\r\n"},
	{"method with suffix", "GETX / HTTP/1.1\r\n\r\n"},
	{"unrecognised method", "PROPFIND /dav HTTP/1.1\r\n\r\n"},
	{"two spaces after method", "GET  / HTTP/1.1\r\n\r\n"},
	{"HTTP/2 status line", "HTTP/2 200\r\n\r\n"},
	{"HTTP/1.x without digit", "HTTP/1.x 200 OK\r\n\r\n"},
	{"SMTP banner", "220 mail.example.com ESMTP\r\n"},
}

func TestNotHTTP(t *testing.T) {
	for _, c := range nonHTTP {
		for _, mode := range []Mode{ModeDetect, ModeRequest, ModeResponse} {
			t.Run(c.name+"/"+mode.String(), func(t *testing.T) {
				p := NewParser(mode)
				ev := p.Feed([]byte(c.data), len(c.data), 1)
				if !p.NotHTTP() || ev != nil {
					t.Fatalf("NotHTTP = %v, events %v", p.NotHTTP(), ev)
				}
				if p.Errors().Total() != 0 {
					t.Fatalf("errors counted for a non-HTTP stream: %v", p.Errors().Map())
				}
				// Later HTTP-looking data must not revive the stream.
				if ev := p.Feed([]byte(getReq), len(getReq), 2); ev != nil || !p.NotHTTP() {
					t.Fatalf("stream revived: %v", ev)
				}
				if ev := p.Close(3); ev != nil {
					t.Fatalf("Close reported %v", ev)
				}
			})
		}
	}
}

func TestNotHTTPDecidedAcrossSegments(t *testing.T) {
	cases := []struct {
		name  string
		parts []string // all but the last leave the stream undecided
	}{
		{"HTTP/2 preface", []string{"P", "RI * HTTP/2.0\r\n"}},
		{"HTTP/2 status line", []string{"HTTP/", "2 200\r\n"}},
		{"near miss of a method", []string{"POS", "X / HTTP/1.1\r\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser(ModeDetect)
			for i, part := range c.parts {
				p.Feed([]byte(part), len(part), uint64(i+1))
				if last := i == len(c.parts)-1; p.NotHTTP() != last {
					t.Fatalf("after %q NotHTTP = %v", part, p.NotHTTP())
				}
			}
		})
	}
}

func TestWrongDirection(t *testing.T) {
	resp := "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	if p := NewParser(ModeRequest); p.Feed([]byte(resp), len(resp), 1) != nil || !p.NotHTTP() {
		t.Error("response accepted by a request parser")
	}
	if p := NewParser(ModeResponse); p.Feed([]byte(getReq), len(getReq), 1) != nil || !p.NotHTTP() {
		t.Error("request accepted by a response parser")
	}
}

func TestNotHTTPDoesNotAllocate(t *testing.T) {
	p := NewParser(ModeDetect)
	tls := []byte(nonHTTP[1].data)
	p.Feed(tls, 4096, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		if p.Feed(tls, 4096, 2) != nil {
			t.Fatal("events on a non-HTTP stream")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per segment on a non-HTTP stream", allocs)
	}
}

func TestCheckStart(t *testing.T) {
	cases := []struct {
		in   string
		mode Mode
		want startKind
	}{
		{"", ModeDetect, startMaybe},
		{"G", ModeRequest, startMaybe},
		{"GET", ModeRequest, startMaybe},
		{"GET ", ModeRequest, startMaybe},
		{"GET /", ModeRequest, startRequest},
		{"GET /", ModeResponse, startNo},
		{"PATC", ModeRequest, startMaybe},
		{"PATCH /", ModeRequest, startRequest},
		{"PUX", ModeRequest, startNo},
		{"H", ModeDetect, startMaybe},
		{"HTTP/1", ModeDetect, startMaybe},
		{"HTTP/1.1", ModeDetect, startResponse},
		{"HTTP/1.1", ModeRequest, startNo},
		{"HEAD /", ModeDetect, startRequest},
		{"CONNECT h:1", ModeDetect, startRequest},
		{"GET \x00", ModeRequest, startNo},
	}
	for _, c := range cases {
		if got := checkStart([]byte(c.in), c.mode); got != c.want {
			t.Errorf("checkStart(%q, %v) = %d, want %d", c.in, c.mode, got, c.want)
		}
	}
}
