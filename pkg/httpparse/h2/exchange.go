package h2

import (
	"strconv"
	"strings"
)

// MaxOpenStreams bounds the streams one connection keeps between their
// request headers and their end; a stream opened beyond it is not followed
// (Conn.Dropped counts it).
const MaxOpenStreams = 1024

// Exchange is one stream's request and response: what a span needs.
type Exchange struct {
	StreamID                       uint32
	Method, Scheme, Authority      string
	Path, ContentType, Traceparent string
	UserAgent                      string
	Status                         int // :status, 0 when no response headers came
	// GRPCStatus is grpc-status from the trailers (or a trailers-only
	// response), -1 when there was none.
	GRPCStatus  int
	GRPCMessage string
	// Times (the segments' timestamps): the request headers, the request's
	// end, the response headers, the response's end (or the reset).
	Start, RequestEnd, ResponseStart, End uint64
	RequestBytes, ResponseBytes           int // DATA payload bytes
	Reset                                 bool
	ErrCode                               uint32 // of the RST_STREAM
}

// IsGRPC reports whether the exchange is a gRPC call.
func (x *Exchange) IsGRPC() bool { return strings.HasPrefix(x.ContentType, "application/grpc") }

// GRPCMethod splits a gRPC path "/package.Service/Method".
func (x *Exchange) GRPCMethod() (service, method string, ok bool) {
	s, m, ok := strings.Cut(strings.TrimPrefix(x.Path, "/"), "/")
	if !ok || s == "" || m == "" || strings.Contains(m, "/") {
		return "", "", false
	}
	return s, m, true
}

// Conn pairs the two directions of one HTTP/2 connection into exchanges.
type Conn struct {
	Requests, Responses *Parser
	open                map[uint32]*Exchange
	// Dropped counts streams not followed because MaxOpenStreams were open.
	Dropped uint64
	done    []Exchange
	opened  []*Exchange
}

// NewConn follows a connection; the client's direction opens with the preface.
func NewConn() *Conn {
	return &Conn{Requests: NewParser(true), Responses: NewParser(false), open: map[uint32]*Exchange{}}
}

// NewFramesConn follows a connection from the kernel's HTTP/2 copies
// (Parser.FeedFrames): FeedRequest and FeedResponse take those.
func NewFramesConn() *Conn {
	return &Conn{Requests: NewFramesParser(true), Responses: NewFramesParser(false), open: map[uint32]*Exchange{}}
}

// Adopt opens stream id for a request that came before HTTP/2 did: the
// HTTP/1.1 request whose Upgrade: h2c the server answers on stream 1.
func (c *Conn) Adopt(id uint32, ts uint64) {
	if c.open[id] == nil && len(c.open) < MaxOpenStreams {
		c.open[id] = &Exchange{StreamID: id, GRPCStatus: -1, Start: ts, RequestEnd: ts}
	}
}

// Opened are the streams whose request headers the last FeedRequest
// brought (valid until the next call; the exchanges are still open).
func (c *Conn) Opened() []*Exchange { return c.opened }

// IsOpen reports whether stream id has begun and not yet ended.
func (c *Conn) IsOpen(id uint32) bool { return c.open[id] != nil }

// Open is the number of streams begun and not yet ended.
func (c *Conn) Open() int { return len(c.open) }

// Lose stops following the connection.
func (c *Conn) Lose(err error) {
	c.Requests.Lose(err)
	c.Responses.Lose(err)
}

// Lost is why the connection can no longer be followed, nil while it can.
func (c *Conn) Lost() error {
	if err := c.Requests.Lost(); err != nil {
		return err
	}
	return c.Responses.Lost()
}

// FeedRequest parses a segment the client sent and returns the exchanges
// it completed (valid until the next call). Once either direction is lost,
// neither reports anything more.
func (c *Conn) FeedRequest(captured []byte, total int, ts uint64) []Exchange {
	c.done, c.opened = c.done[:0], c.opened[:0]
	if c.Lost() != nil {
		return c.done // a direction lost: the other's answers would pair with guesses
	}
	for _, e := range c.Requests.Feed(captured, total, ts) {
		c.request(e)
	}
	return c.done
}

// FeedResponse parses a segment the server sent.
func (c *Conn) FeedResponse(captured []byte, total int, ts uint64) []Exchange {
	c.done = c.done[:0]
	if c.Lost() != nil {
		return c.done
	}
	for _, e := range c.Responses.Feed(captured, total, ts) {
		c.response(e)
	}
	return c.done
}

func (c *Conn) request(e Event) {
	switch e.Kind {
	case KindHeaders:
		if c.open[e.StreamID] != nil {
			return // request trailers
		}
		if len(c.open) >= MaxOpenStreams {
			c.Dropped++
			return
		}
		x := &Exchange{StreamID: e.StreamID, GRPCStatus: -1, Start: e.TS}
		for _, f := range e.Fields {
			switch f.Name {
			case ":method":
				x.Method = f.Value
			case ":scheme":
				x.Scheme = f.Value
			case ":authority":
				x.Authority = f.Value
			case ":path":
				x.Path = f.Value
			case "content-type":
				x.ContentType = f.Value
			case "traceparent":
				x.Traceparent = f.Value
			case "user-agent":
				x.UserAgent = f.Value
			}
		}
		c.open[e.StreamID] = x
		c.opened = append(c.opened, x)
		if e.EndStream {
			x.RequestEnd = e.TS
		}
	case KindData:
		if x := c.open[e.StreamID]; x != nil {
			x.RequestBytes += e.DataBytes
			if e.EndStream {
				x.RequestEnd = e.TS
			}
		}
	case KindReset:
		c.reset(e)
	}
}

func (c *Conn) response(e Event) {
	x := c.open[e.StreamID]
	switch e.Kind {
	case KindHeaders:
		if x == nil {
			return
		}
		for _, f := range e.Fields {
			switch f.Name {
			case ":status":
				// A 1xx informational block comes before the final one.
				if x.Status < 200 {
					if x.ResponseStart == 0 {
						x.ResponseStart = e.TS
					}
					x.Status, _ = strconv.Atoi(f.Value)
				}
			case "grpc-status":
				if n, err := strconv.Atoi(f.Value); err == nil {
					x.GRPCStatus = n
				}
			case "grpc-message":
				x.GRPCMessage = f.Value
			}
		}
		if e.EndStream {
			c.finish(x, e.TS)
		}
	case KindData:
		if x != nil {
			x.ResponseBytes += e.DataBytes
			if e.EndStream {
				c.finish(x, e.TS)
			}
		}
	case KindReset:
		c.reset(e)
	}
}

// reset ends a stream either side reset.
func (c *Conn) reset(e Event) {
	if x := c.open[e.StreamID]; x != nil {
		x.Reset, x.ErrCode = true, e.ErrCode
		c.finish(x, e.TS)
	}
}

func (c *Conn) finish(x *Exchange, ts uint64) {
	x.End = ts
	delete(c.open, x.StreamID)
	c.done = append(c.done, *x)
}
