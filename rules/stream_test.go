package rules

import (
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

func TestStreamChecker(t *testing.T) {
	testChecker(t, streamChecker{}, []checkerCase{
		{"lost bytes, not Kafka, a missed start, unanswered requests", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", true) // 1
			c.ok(metadata, 12, none(), nil)                        // 2,3
			s.e.Gap(1, kafka.ToBroker, kafka.FrameRef{Frame: 3})
			s.e.Event(1, &decode.Event{Kind: decode.EventResync, Side: kafka.ToBroker, At: s.next(), Skipped: 10}) // 4
			s.e.Gap(1, kafka.ToClient, kafka.FrameRef{Frame: 4})
			s.e.Event(1, &decode.Event{Kind: decode.EventNotKafka, At: s.next(), Reason: "TLS"}) // 5
			s.e.Close(1, kafka.Close{}, decode.Outcome{Counters: decode.Counters{Unanswered: 2}})
		}, []typed{
			{rule: StreamMidStart, at: 1, stream: Stream{Kind: MissedStart}},
			{rule: StreamGap, at: 4, stream: Stream{Kind: LostBytes, Side: kafka.ToBroker, Resynced: true, Skipped: 10}},
			{rule: StreamNotKafka, at: 5, seen: Value{Kind: ValueNotKafka, Text: "TLS"}, stream: Stream{Kind: NotKafkaBytes}},
			{rule: StreamGap, at: 5, stream: Stream{Kind: LostBytes, Side: kafka.ToClient}},
			{rule: StreamUnanswered, at: 5, stream: Stream{Kind: UnansweredRequests}, count: 2},
		}},
		{"twin: a resync without a gap, a start the capture saw", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(metadata, 12, none(), nil)
			s.e.Event(1, &decode.Event{Kind: decode.EventResync, Side: kafka.ToBroker, At: s.next(), Skipped: 10})
		}, nil},
	})
}
