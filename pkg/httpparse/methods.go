package httpparse

// The queue of request methods a response parser needs: a response to HEAD
// has no body and a 2xx response to CONNECT starts a tunnel. Only the class
// of method is kept, so the queue never holds caller strings.

const (
	methOther uint8 = iota
	methHead
	methConnect
)

// PushRequestMethod queues the method of a request sent on this connection;
// call it on the response parser as each request head is parsed, before
// feeding the response bytes that follow. Each final (non-1xx, or 101)
// response consumes one method in order; with an empty queue GET is assumed.
// The queue holds MethodQueueLen methods; when full the oldest is dropped
// and ErrMethodQueueFull is counted.
func (p *Parser) PushRequestMethod(method string) {
	var c uint8
	switch method {
	case "HEAD":
		c = methHead
	case "CONNECT":
		c = methConnect
	}
	if p.mLen == MethodQueueLen {
		p.mHead = (p.mHead + 1) % MethodQueueLen
		p.mLen--
		p.count(ErrMethodQueueFull)
	}
	p.methods[(p.mHead+p.mLen)%MethodQueueLen] = c
	p.mLen++
}

func (p *Parser) popMethod() uint8 {
	if p.mLen == 0 {
		return methOther
	}
	c := p.methods[p.mHead]
	p.mHead = (p.mHead + 1) % MethodQueueLen
	p.mLen--
	return c
}

// keepNewestMethod drops all queued methods but the newest.
func (p *Parser) keepNewestMethod() {
	if p.mLen > 1 {
		p.mHead = (p.mHead + p.mLen - 1) % MethodQueueLen
		p.mLen = 1
	}
}
