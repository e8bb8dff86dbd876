package tracer

import "fmt"

// Stats are the kernel side's counters, summed over CPUs.
type Stats struct {
	Events        uint64 // written to the ring buffer
	LostRingbuf   uint64 // ring buffer was full
	LostStash     uint64 // in-flight call map was full
	LostRead      uint64 // payload unreadable from user memory
	SockTableFull uint64 // tracked-socket map full: a close may be missed
	AgentPackets  uint64 // JVM agent mount packets acted on
	BadPackets    uint64 // JVM agent packets ignored (unreadable, unknown op)
	Samples       uint64 // stack samples written to the samples ring buffer
	LostSamples   uint64 // stack samples lost: samples ring buffer full
	ConnsJoined   uint64 // client connections put in the injection sockhash
	ConnsReleased uint64 // taken out again: their first bytes were not HTTP/1.x
	ConnsUntraced uint64 // taken out again: an untraced process sent on them
	ConnsBlocking uint64 // not put in it: their socket connected in blocking mode
	// Client spans made roots because weft could not know their parent.
	ParentAmbiguous uint64 // the sender's key served two live requests
	ParentUnknown   uint64 // the process's runtime is not followed (yet)
	ParentStale     uint64 // the goroutine's inherited request had ended
	// TraceparentUnseen: request heads that went on past the captured
	// bytes of their segment, where a traceparent would not be seen.
	TraceparentUnseen uint64
	// NotHTTPSkipped: data calls on sockets found not to carry HTTP,
	// not copied.
	NotHTTPSkipped uint64
	// CallUnreadable: socket calls whose buffer the socket path cannot
	// name (sendmmsg, io_uring, splice/sendfile, a kernel thread's), not
	// copied.
	CallUnreadable uint64
	// H2TableFull: HTTP/2 connections not followed, h2_conns was full.
	H2TableFull uint64
	// H2Cut: HTTP/2 connections whose copy lost the framing (a call with
	// more header bytes than an event holds, or an event the full ring
	// buffer dropped).
	H2Cut uint64
	// TLSNoSocket: TLS reads and writes whose socket no nested socket
	// call showed (their plaintext is not reported).
	TLSNoSocket uint64
	// TLSLinkAmbiguous: TLS requests between two traced processes read
	// while their client had sent another: not linked to a client span.
	TLSLinkAmbiguous uint64
	// TLSBIOLearned: TLS connections moving their ciphertext through
	// memory BIOs tied to their socket by that ciphertext.
	TLSBIOLearned uint64
	// LostEmit: data events whose emitting program was not in its
	// program array (a loader bug; never expected).
	LostEmit uint64
}

// Lost is the number of events the kernel could not deliver (stack
// samples not included: see LostSamples).
func (s Stats) Lost() uint64 { return s.LostRingbuf + s.LostStash + s.LostEmit }

// stat reads one counter, summed over the CPUs.
func (t *Tracer) stat(i tpWeftStat) (uint64, error) {
	var per []uint64
	if err := t.objs.Stats.Lookup(uint32(i), &per); err != nil {
		return 0, fmt.Errorf("read stat %d: %w", i, err)
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n, nil
}

// LastDrop is when the kernel last dropped an event (its monotonic
// clock, as event times), 0 if never: one lookup, cheap enough for every
// exit and tick.
func (t *Tracer) LastDrop() (uint64, error) {
	var ts uint64
	if err := t.objs.LastDrop.Lookup(uint32(0), &ts); err != nil {
		return 0, fmt.Errorf("read last_drop: %w", err)
	}
	return ts, nil
}

// Stats reads the counters.
func (t *Tracer) Stats() (Stats, error) {
	sum := t.stat
	var s Stats
	var err error
	for _, f := range []struct {
		idx tpWeftStat
		dst *uint64
	}{
		{tpWeftStatWEFT_STAT_EVENTS, &s.Events},
		{tpWeftStatWEFT_STAT_LOST_RINGBUF, &s.LostRingbuf},
		{tpWeftStatWEFT_STAT_LOST_STASH, &s.LostStash},
		{tpWeftStatWEFT_STAT_LOST_READ, &s.LostRead},
		{tpWeftStatWEFT_STAT_SOCK_TABLE_FULL, &s.SockTableFull},
		{tpWeftStatWEFT_STAT_AGENT_PACKETS, &s.AgentPackets},
		{tpWeftStatWEFT_STAT_BAD_PACKETS, &s.BadPackets},
		{tpWeftStatWEFT_STAT_SAMPLES, &s.Samples},
		{tpWeftStatWEFT_STAT_LOST_SAMPLES, &s.LostSamples},
		{tpWeftStatWEFT_STAT_CONNS_JOINED, &s.ConnsJoined},
		{tpWeftStatWEFT_STAT_CONNS_RELEASED, &s.ConnsReleased},
		{tpWeftStatWEFT_STAT_CONNS_UNTRACED, &s.ConnsUntraced},
		{tpWeftStatWEFT_STAT_CONNS_BLOCKING, &s.ConnsBlocking},
		{tpWeftStatWEFT_STAT_PARENT_AMBIGUOUS, &s.ParentAmbiguous},
		{tpWeftStatWEFT_STAT_PARENT_UNKNOWN, &s.ParentUnknown},
		{tpWeftStatWEFT_STAT_PARENT_STALE, &s.ParentStale},
		{tpWeftStatWEFT_STAT_TRACEPARENT_UNSEEN, &s.TraceparentUnseen},
		{tpWeftStatWEFT_STAT_NOT_HTTP_SKIPPED, &s.NotHTTPSkipped},
		{tpWeftStatWEFT_STAT_CALL_UNREADABLE, &s.CallUnreadable},
		{tpWeftStatWEFT_STAT_H2TABLE_FULL, &s.H2TableFull},
		{tpWeftStatWEFT_STAT_H2CUT, &s.H2Cut},
		{tpWeftStatWEFT_STAT_TLS_NO_SOCK, &s.TLSNoSocket},
		{tpWeftStatWEFT_STAT_TLS_LINK_AMBIGUOUS, &s.TLSLinkAmbiguous},
		{tpWeftStatWEFT_STAT_TLS_BIO_LEARNED, &s.TLSBIOLearned},
		{tpWeftStatWEFT_STAT_LOST_EMIT, &s.LostEmit},
	} {
		if *f.dst, err = sum(f.idx); err != nil {
			return s, err
		}
	}
	return s, nil
}
