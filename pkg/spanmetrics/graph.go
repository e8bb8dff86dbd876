package spanmetrics

import (
	"net"
	"strconv"
	"time"

	"github.com/weftdev/weft/pkg/spans"
)

// The service graph's names for peers weft does not trace, and the
// connection_type of their edges, as Tempo and the Collector's
// servicegraph connector name them.
const (
	userNode    = "user"
	virtualNode = "virtual_node"
)

// edgeKey is one edge: client and server are service names, or for a peer
// weft does not trace "user" (whoever sent a request that carried no
// trace context) or the server's address.
type edgeKey struct {
	client, server, connType string
}

// edge holds one edge's metrics. A virtual edge has only the durations
// weft measured: the client's (to an address) or the server's (from
// "user").
type edge struct {
	start                        time.Time
	total, failed                uint64
	serverSeconds, clientSeconds dist
	since                        *edge
}

func newEdge(start time.Time, delta, exponential bool) *edge {
	e := &edge{start: start, serverSeconds: newDist(DurationBounds, exponential), clientSeconds: newDist(DurationBounds, exponential)}
	if delta {
		e.since = newEdge(start, false, exponential)
	}
	return e
}

func (e *edge) reset() {
	e.total, e.failed = 0, 0
	e.serverSeconds.reset()
	e.clientSeconds.reset()
}

func (e *edge) record(failed bool, client, server *half) {
	e.total++
	if failed {
		e.failed++
	}
	if client != nil {
		e.clientSeconds.observe(DurationBounds, client.seconds)
	}
	if server != nil {
		e.serverSeconds.observe(DurationBounds, server.seconds)
	}
	if e.since != nil {
		e.since.record(failed, client, server)
	}
}

// half is what a span contributes to an edge while it waits for the
// span at the connection's other end.
type half struct {
	service  string
	peer     string // client spans: the server's address, named if unpaired
	seconds  float64
	failed   bool
	deadline time.Time
}

// graph pairs the client span of a call with the server span of the
// same call, which weft knows because it put the client span's id into
// the request as the server's parent. Both ends on this host are paired
// here; a client span to a peer weft does not trace becomes an edge to the
// peer's address, and a server span whose request carried no trace
// context an edge from "user".
type graph struct {
	opts    Options
	clients map[spans.SpanID]*half // by span id
	servers map[spans.SpanID]*half // by parent (the client span's) id
	edges   map[edgeKey]*edge
	// nextSweep is when waiting halves are next checked for expiry.
	nextSweep time.Time
}

func newGraph(opts Options) graph {
	return graph{
		opts:    opts,
		clients: map[spans.SpanID]*half{},
		servers: map[spans.SpanID]*half{},
		edges:   map[edgeKey]*edge{},
	}
}

func (g *graph) observe(s *spans.Span, service string, now time.Time, stats *Stats) {
	h := &half{service: service, seconds: s.Duration().Seconds(), failed: s.IsError(), deadline: now.Add(g.opts.PairWait)}
	switch s.Kind {
	case spans.KindClient:
		if !s.SpanID.IsValid() {
			break
		}
		if srv, ok := g.servers[s.SpanID]; ok {
			delete(g.servers, s.SpanID)
			g.pair(h, srv, now, stats)
			break
		}
		h.peer = peerName(s)
		g.wait(g.clients, s.SpanID, h, stats)
	case spans.KindServer:
		if !s.ParentID.IsValid() {
			g.edge(edgeKey{userNode, service, virtualNode}, now).record(h.failed, nil, h)
			stats.GraphVirtual.Add(1)
			break
		}
		if !s.ParentRemote {
			break // a parent in this process: no call between services
		}
		if cl, ok := g.clients[s.ParentID]; ok {
			delete(g.clients, s.ParentID)
			g.pair(cl, h, now, stats)
			break
		}
		g.wait(g.servers, s.ParentID, h, stats)
	}
	if !now.Before(g.nextSweep) {
		g.sweep(now, stats)
	}
}

func (g *graph) wait(m map[spans.SpanID]*half, id spans.SpanID, h *half, stats *Stats) {
	if len(g.clients)+len(g.servers) >= g.opts.MaxPending {
		stats.GraphDropped.Add(1)
		return
	}
	m[id] = h
}

func (g *graph) pair(client, server *half, now time.Time, stats *Stats) {
	g.edge(edgeKey{client.service, server.service, ""}, now).record(client.failed || server.failed, client, server)
	stats.GraphPaired.Add(1)
}

func (g *graph) edge(k edgeKey, now time.Time) *edge {
	e, ok := g.edges[k]
	if !ok {
		e = newEdge(now, g.opts.Delta, g.opts.Exponential)
		g.edges[k] = e
	}
	return e
}

// sweep ends the wait of halves past their deadline: a client span becomes
// an edge to its server's address; a server span is counted unpaired (its
// client runs where weft does not see it, and that host's weft reports
// the call as an edge to this server's address).
func (g *graph) sweep(now time.Time, stats *Stats) {
	for id, h := range g.clients {
		if now.After(h.deadline) {
			delete(g.clients, id)
			g.edge(edgeKey{h.service, h.peer, virtualNode}, now).record(h.failed, h, nil)
			stats.GraphVirtual.Add(1)
		}
	}
	for id, h := range g.servers {
		if now.After(h.deadline) {
			delete(g.servers, id)
			stats.GraphUnpaired.Add(1)
		}
	}
	g.nextSweep = now.Add(g.opts.PairWait / 4)
}

// peerName names the server of a client span for a virtual node: the
// host of server.address (a name, when the Host header gave one) with the
// port the socket connected to, which a Host header may leave out.
func peerName(s *spans.Span) string {
	host, port, _ := s.ServerAddress()
	if s.Remote.IsValid() {
		port = int(s.Remote.Port())
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
