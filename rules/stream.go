package rules

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// The rules about what the capture cannot show (RULES.md §8).
const (
	StreamMidStart   = "stream-mid-start"
	StreamGap        = "stream-gap"
	StreamNotKafka   = "stream-not-kafka"
	StreamUnanswered = "stream-unanswered"
)

var streamRules = []Rule{
	{ID: StreamMidStart, Severity: Info, Section: "8", Place: 1,
		Summary: "the connection began before the capture; first-request rules were not applied",
		Detail:  "Without the connection's first request, header-id-late and header-id-missing-first cannot be judged.",
		Example: "stream-mid-start"},
	{ID: StreamGap, Severity: Info, Section: "8", Place: 2,
		Summary: "bytes are missing; the Kafka framing was resynchronised",
		Detail:  "Lost packets or the snap length left a hole; what was in it is unknown.",
		Example: "stream-lost-segment"},
	{ID: StreamNotKafka, Severity: Info, Section: "8", Place: 3,
		Summary: "the bytes on a Kafka port are not Kafka (TLS is named as TLS)",
		Detail:  "kidscope reads plaintext Kafka only.",
		Example: "tls-on-kafka-port"},
	{ID: StreamUnanswered, Severity: Info, Section: "8", Place: 4,
		Summary: "requests with no response in the capture (counted)",
		Detail:  "acks=0 produce requests, or answers the capture did not hold.",
		Example: "hdr-acc-changed"},
}

// streamChecker reports what a connection's bytes leave unknown: lost
// bytes, a start before the capture, bytes that are not Kafka, requests
// with no answer.
type streamChecker struct{}

func (streamChecker) rules() []Rule { return streamRules }

func (streamChecker) open(*conn) connChecker { return &streamConn{} }

type streamConn struct {
	passive
	gapSide [2]bool // a gap not yet reported, per side
}

func (sc *streamConn) gap(side kafka.Direction) { sc.gapSide[side] = true }

func (sc *streamConn) event(_ *conn, ev *decode.Event) []cand {
	switch ev.Kind {
	case decode.EventResync:
		if sc.gapSide[ev.Side] {
			sc.gapSide[ev.Side] = false
			return []cand{{rule: StreamGap, at: ev.At, stream: Stream{Kind: LostBytes, Side: ev.Side, Resynced: true, Skipped: ev.Skipped}}}
		}
	case decode.EventNotKafka:
		return []cand{{rule: StreamNotKafka, at: ev.At, seen: Value{Kind: ValueNotKafka, Text: ev.Reason}, stream: Stream{Kind: NotKafkaBytes}}}
	}
	return nil
}

func (sc *streamConn) close(c *conn, ci CloseInfo) []cand {
	var out []cand
	for s, gap := range sc.gapSide {
		if gap {
			out = append(out, cand{rule: StreamGap, at: c.last, stream: Stream{Kind: LostBytes, Side: kafka.Direction(s)}})
		}
	}
	if c.info.MidStream[kafka.ToBroker] && c.sawKafka {
		out = append(out, cand{rule: StreamMidStart, at: c.info.First, stream: Stream{Kind: MissedStart}})
	}
	if n := ci.Counters.Unanswered; n > 0 {
		out = append(out, cand{rule: StreamUnanswered, at: c.last, count: n, stream: Stream{Kind: UnansweredRequests}})
	}
	return out
}
