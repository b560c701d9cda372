package main

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

// ladderCollector is the Sink of -o html: it keeps, per connection, the
// headers of its requests and responses for the report's ladder
// diagrams. Only -o html pays for it.
//
// What it keeps is bounded three ways, for a capture of any length: the
// first ladderHead and last ladderTail messages of each connection, and
// between them only the interesting ones (an error code, a change of the
// header instance ID, telemetry and JoinGroup, an unmatched response, a
// frame a finding points at), at most ladderMiddle; and all connections
// together at most max messages (the budget's share). Whatever is left
// out is counted: the ladder folds it into one row. A connection that
// closed without a finding gives its messages back: the report draws
// ladders only for connections with findings.
type ladderCollector struct {
	max     int // messages kept by all connections together
	kept    int
	pins    int // entries of the conns' pinned sets, held to max as well
	conns   map[int]*ladderConn
	pending map[int][]kafka.FrameRef // finding frames heard before their event
}

const (
	ladderHead   = 200
	ladderTail   = 200
	ladderMiddle = 400
	ladderCodes  = 4 // error codes kept per response: the ladder shows the first
)

type ladderConn struct {
	total   int64
	msgs    []report.LadderMessage // the head, then the kept middle
	middle  int
	tail    []report.LadderMessage // a ring of the last ladderTail
	next    int                    // the ring's oldest entry once full
	finding bool
	pinned  map[kafka.FrameRef]bool
	lastID  kafka.UUID
	hadID   bool
	anyReq  bool
}

// ladderMessages is the ladders' share of the budget: a twentieth of the
// limit at about 160 bytes a message (with its map and slice overhead).
// The findings' share is three twentieths at 2 KB each, so it is four
// messages a finding.
func (b budget) ladderMessages() int { return max(b.findings*4, 4*(ladderHead+ladderTail)) }

func newLadderCollector(max int) *ladderCollector {
	return &ladderCollector{max: max, conns: map[int]*ladderConn{}, pending: map[int][]kafka.FrameRef{}}
}

// Finding is heard when the rules make one, before the event it is about
// reaches Event: its frames are pinned, kept even in a long middle.
func (l *ladderCollector) Finding(f *rules.Finding) {
	c := l.conns[f.ConnID]
	if c == nil {
		c = &ladderConn{}
		l.conns[f.ConnID] = c
	}
	c.finding = true
	l.pin(c, frameKey(f.At))
	for _, r := range f.Related {
		l.pin(c, frameKey(r.Frame))
	}
}

// pin remembers a frame (or, with File -1, a message's place) that must
// outlive the tail's ring; the sets are bounded per connection and in all,
// as the messages are.
func (l *ladderCollector) pin(c *ladderConn, k kafka.FrameRef) {
	if c.pinned == nil {
		c.pinned = map[kafka.FrameRef]bool{}
	}
	if c.pinned[k] || len(c.pinned) >= 2*ladderMiddle || l.pins >= l.max {
		return
	}
	c.pinned[k] = true
	l.pins++
}

// frameKey is a frame without its time, as findings and events name it.
func frameKey(f kafka.FrameRef) kafka.FrameRef { return kafka.FrameRef{File: f.File, Frame: f.Frame} }

func (l *ladderCollector) Event(pc *pipeline.Conn, e *decode.Event) {
	if e.Kind != decode.EventRequest && e.Kind != decode.EventResponse {
		return
	}
	c := l.conns[pc.ID]
	if c == nil {
		c = &ladderConn{}
		l.conns[pc.ID] = c
	}
	m := report.LadderMessage{Seq: c.total, At: e.At, Response: e.Kind == decode.EventResponse}
	c.total++
	h := &e.Msg.Request
	m.APIKey, m.APIVersion, m.CorrelationID = h.APIKey, h.APIVersion, h.CorrelationID
	interesting := false
	if m.Response {
		m.CorrelationID = e.Msg.Response.CorrelationID
		m.Matched, m.RequestAt = e.Msg.Matched, e.Msg.RequestAt
		codes := e.Msg.Answer.Codes() // valid only during the call: copied
		for _, code := range codes[:min(len(codes), ladderCodes)] {
			m.Codes = append(m.Codes, code)
			interesting = interesting || code != 0
		}
		interesting = interesting || !m.Matched
	} else {
		m.InstanceID, m.HasInstanceID, m.NoResponse = h.InstanceID, h.HasInstanceID, e.Msg.NoResponse
		interesting = c.anyReq && (m.HasInstanceID != c.hadID || m.InstanceID != c.lastID)
		c.anyReq, c.hadID, c.lastID = true, m.HasInstanceID, m.InstanceID
	}
	switch m.APIKey {
	case 71, 72, 11: // GetTelemetrySubscriptions, PushTelemetry, JoinGroup: what the telemetry and member-ID rules read
		interesting = true
	}
	if c.pinned[frameKey(m.At)] {
		interesting = true
	}
	switch {
	case len(c.msgs) < ladderHead && c.middle == 0 && len(c.tail) == 0:
		l.keep(c, m)
	case len(c.tail) < ladderTail:
		if l.kept < l.max {
			c.tail = append(c.tail, m)
			l.kept++
		}
	default:
		// The ring is full: the oldest of the tail moves to the middle if
		// it is interesting, else it is let go (and folded).
		old := c.tail[c.next]
		c.tail[c.next] = m
		c.next = (c.next + 1) % len(c.tail)
		if ladderInteresting(c, &old) && c.middle < ladderMiddle && l.kept < l.max {
			c.msgs = append(c.msgs, old)
			c.middle++
			l.kept++
		}
	}
	if interesting && c.total > ladderHead {
		l.pin(c, kafka.FrameRef{File: -1, Frame: m.Seq}) // the head is kept anyway
	}
}

func (l *ladderCollector) keep(c *ladderConn, m report.LadderMessage) {
	if l.kept < l.max {
		c.msgs = append(c.msgs, m)
		l.kept++
	}
}

func ladderInteresting(c *ladderConn, m *report.LadderMessage) bool {
	return c.pinned[kafka.FrameRef{File: -1, Frame: m.Seq}] || c.pinned[frameKey(m.At)]
}

// Closed gives back the messages of a connection without a finding: the
// rules make a connection's findings before it is closed.
func (l *ladderCollector) Closed(pc *pipeline.Conn) {
	c := l.conns[pc.ID]
	if c == nil || c.finding {
		return
	}
	l.kept -= len(c.msgs) + len(c.tail)
	l.pins -= len(c.pinned)
	delete(l.conns, pc.ID)
}

// ladders returns the kept messages of the connections with findings,
// each in capture order.
func (l *ladderCollector) ladders(res *rules.Result) map[int]*report.Ladder {
	want := map[int]bool{}
	for i := range res.Findings {
		want[res.Findings[i].ConnID] = true
	}
	out := map[int]*report.Ladder{}
	for id, c := range l.conns {
		if !want[id] {
			continue
		}
		lad := &report.Ladder{ConnID: id, Total: c.total, Messages: c.msgs}
		lad.Messages = append(lad.Messages, c.tail[c.next:]...)
		lad.Messages = append(lad.Messages, c.tail[:c.next]...)
		out[id] = lad
	}
	return out
}
