package main

import (
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/rules"
)

// feed sends n request/response pairs on conn; the pair whose request is
// at frame bad carries another instance ID and a rejection.
func feed(l *ladderCollector, conn *pipeline.Conn, n int, bad int64) {
	for i := range n {
		req := int64(2*i + 1)
		id := kafka.UUID{1}
		if req == bad {
			id = kafka.UUID{2}
		}
		e := decode.Event{Kind: decode.EventRequest, At: kafka.FrameRef{Frame: req}}
		e.Msg.Request = decode.RequestHeader{APIKey: 3, APIVersion: 12, CorrelationID: int32(i), InstanceID: id, HasInstanceID: true}
		l.Event(conn, &e)
		r := decode.Event{Kind: decode.EventResponse, At: kafka.FrameRef{Frame: req + 1}}
		r.Msg.Request, r.Msg.Matched, r.Msg.RequestAt = e.Msg.Request, true, e.At
		r.Msg.Response.CorrelationID = int32(i)
		r.Msg.Answer = decode.Answer{HasErrorCode: true}
		if req == bad {
			r.Msg.Answer.ErrorCode = 42
		}
		l.Event(conn, &r)
	}
}

// The collector keeps a long connection's head, its tail and the
// interesting messages between, counts all of them, and lets go of a
// connection that closed without a finding.
func TestLadderCollectorBounds(t *testing.T) {
	l := newLadderCollector(1 << 20)
	withFinding := &pipeline.Conn{Conn: kafka.Conn{ID: 1}}
	const pairs = 5000
	const bad = 4001 // a request's frame in the middle
	l.Finding(&rules.Finding{Rule: rules.HeaderIDChanged, ConnID: 1, At: kafka.FrameRef{Frame: bad}})
	feed(l, withFinding, pairs, bad)
	without := &pipeline.Conn{Conn: kafka.Conn{ID: 2}}
	feed(l, without, 1000, -1)
	l.Closed(without)
	l.Closed(withFinding)

	res := &rules.Result{Findings: []rules.Finding{{Rule: rules.HeaderIDChanged, ConnID: 1}}}
	lads := l.ladders(res)
	if len(lads) != 1 || lads[1] == nil {
		t.Fatalf("ladders of connections %v, want only 1's", lads)
	}
	lad := lads[1]
	if lad.Total != 2*pairs {
		t.Errorf("total %d, want %d", lad.Total, 2*pairs)
	}
	if n := len(lad.Messages); n > ladderHead+ladderTail+ladderMiddle || n < ladderHead+ladderTail {
		t.Errorf("%d messages kept, want between %d and %d", n, ladderHead+ladderTail, ladderHead+ladderTail+ladderMiddle)
	}
	var sawBad, sawAnswer bool
	for i, m := range lad.Messages {
		if i > 0 && m.Seq <= lad.Messages[i-1].Seq {
			t.Fatalf("message %d: seq %d after %d: not in capture order", i, m.Seq, lad.Messages[i-1].Seq)
		}
		sawBad = sawBad || m.At.Frame == bad
		sawAnswer = sawAnswer || (m.At.Frame == bad+1 && len(m.Codes) == 1 && m.Codes[0] == 42)
	}
	if !sawBad || !sawAnswer {
		t.Errorf("the finding's request kept %v, its rejection kept %v: both must be", sawBad, sawAnswer)
	}
	if last := lad.Messages[len(lad.Messages)-1]; last.Seq != 2*pairs-1 {
		t.Errorf("the last kept message is %d, want the connection's last, %d", last.Seq, 2*pairs-1)
	}
	if want := len(lad.Messages); l.kept != want {
		t.Errorf("%d messages counted as kept, the ladders hold %d: the closed connection's were not given back", l.kept, want)
	}
}

// The total cap holds across connections: over it messages are counted,
// not kept.
func TestLadderCollectorTotalCap(t *testing.T) {
	l := newLadderCollector(300)
	for id := 1; id <= 3; id++ {
		l.Finding(&rules.Finding{ConnID: id, At: kafka.FrameRef{Frame: 1}})
		feed(l, &pipeline.Conn{Conn: kafka.Conn{ID: id}}, 200, -1)
	}
	// Every other message is interesting (a new instance ID each time):
	// what must outlive the ring is capped too.
	for id := 4; id <= 5; id++ {
		c := &pipeline.Conn{Conn: kafka.Conn{ID: id}}
		for i := range 2000 {
			e := decode.Event{Kind: decode.EventRequest, At: kafka.FrameRef{Frame: int64(i)}}
			e.Msg.Request = decode.RequestHeader{APIKey: 3, InstanceID: kafka.UUID{byte(i), byte(i >> 8)}, HasInstanceID: true}
			l.Event(c, &e)
		}
	}
	if l.kept > 300 || l.pins > 300 {
		t.Errorf("%d kept, %d pinned: over the cap of 300", l.kept, l.pins)
	}
	res := &rules.Result{Findings: []rules.Finding{{ConnID: 1}, {ConnID: 2}, {ConnID: 3}}}
	for id, lad := range l.ladders(res) {
		if lad.Total != 400 {
			t.Errorf("connection %d: total %d, want 400 whatever was kept", id, lad.Total)
		}
	}
}
