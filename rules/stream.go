package rules

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// The rules about what the capture cannot show (docs/design/rules.md §8).
const (
	StreamMidStart   = "stream-mid-start"
	StreamGap        = "stream-gap"
	StreamNotKafka   = "stream-not-kafka"
	StreamUnanswered = "stream-unanswered"
)

var streamRules = []Rule{
	{ID: StreamMidStart, Severity: Info, Group: GroupCapture,
		Summary: "the connection began before the capture; first-request rules were not applied",
		Detail: "The capture did not see the connection's TCP handshake: it began before the capture. " +
			"header-id-late and header-id-missing-first, which need the true first request, are not applied to it, " +
			"and its established ID is the first non-zero ID seen on it.",
		Why:     "Findings that need the connection's start may be missing: a clean report for this connection does not prove it was clean.",
		Fix:     "Start the capture before the clients connect, or restart them while capturing, so that every connection's first request is in it.",
		Example: "stream-mid-start"},
	{ID: StreamGap, Severity: Info, Group: GroupCapture,
		Summary: "bytes are missing; the Kafka framing was resynchronised",
		Detail: "Bytes of the connection are missing from the capture (lost packets, a snap length that cut the segments, a capture buffer that overflowed). " +
			"The Kafka framing was found again at a later frame, or not at all; what was in the gap is not judged, and findings right after it say so.",
		Why:     "What the missing bytes held is unknown: a violation could be among them, and findings after the gap rest on what was seen.",
		Fix:     "Capture whole packets (tcpdump -s 0), where every packet passes, with a capture buffer big enough (tcpdump -B) or a filter on the Kafka ports so that the kernel drops none.",
		Example: "stream-lost-segment"},
	{ID: StreamNotKafka, Severity: Info, Group: GroupCapture,
		Summary: "the bytes on a Kafka port are not Kafka (TLS is named as TLS)",
		Detail:  "The bytes of a connection on a Kafka port do not read as Kafka requests and responses. TLS is recognised and named as TLS (when it cannot be decrypted).",
		Why:     "kidscope checks nothing on that connection: whatever its clients do wrong is not in the report.",
		Fix: "For TLS, give the clients' key log (--tls-keylog, the SSLKEYLOGFILE format) or a pcapng that holds the decryption secrets. " +
			"For another protocol on the port, leave the port out of -p, or filter the connection out.",
		Example: "tls-on-kafka-port"},
	{ID: StreamUnanswered, Severity: Info, Group: GroupCapture,
		Summary: "requests with no response in the capture (counted)",
		Detail: "Requests of the connection have no response in the capture: one finding per connection that counts them, not one per request. " +
			"Produce with acks = 0, which gets no response by design, is not counted.",
		Why: "A request without an answer leaves the broker's side untold: the broker may have closed the connection on it " +
			"(how a broker that enforces KIP-1313 rejects a request header it cannot parse), or the capture ended or lost the answer. " +
			"The broker's verdict and the findings about its answers cannot use these requests.",
		Fix: "Let the capture run until the clients' requests are answered, and stop it after the connections close. " +
			"If the broker closed the connection, look at the finding on its last request.",
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
