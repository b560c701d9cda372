package decode

import (
	"slices"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedFrames are a conversation's two sides, the fuzzers' starting corpus,
// without its large produce request: the fuzzer minimises new inputs byte
// by byte, and large seeds make that take minutes.
func seedFrames() (client, broker []byte) {
	w := conversation()
	client = w.side[kafka.ToBroker][:w.items[4].end]
	return append(client, w.side[kafka.ToBroker][w.items[6].end:]...), w.side[kafka.ToClient]
}

// FuzzRequestHeader: any bytes given to the request header parser either
// parse, within the bytes given, or fail; never a panic.
func FuzzRequestHeader(f *testing.F) {
	client, _ := seedFrames()
	f.Add(client[4:80])
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 1, 0, 16})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := parseRequestHeader(b, DefaultAPITable())
		if err != nil {
			return
		}
		if n > len(b) || n < 8 {
			t.Fatalf("header length %d of %d bytes", n, len(b))
		}
		if h.HasInstanceID && h.HeaderVersion < 2 {
			t.Fatalf("instance ID in header v%d", h.HeaderVersion)
		}
	})
}

// FuzzResponseHeader: the same for response headers of both versions.
func FuzzResponseHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0}, 1)
	f.Add([]byte{0, 0, 0, 1, 2, 0, 1, 9, 3, 0}, 1)
	f.Fuzz(func(t *testing.T, b []byte, version int) {
		_, n, err := parseResponseHeader(b, version&1)
		if err == nil && (n > len(b) || n < 4) {
			t.Fatalf("header length %d of %d bytes", n, len(b))
		}
	})
}

// FuzzConn feeds arbitrary bytes to both sides of a connection in
// arbitrary chunks: no panic, events only from the bytes given, and the
// buffers stay within the caps.
func FuzzConn(f *testing.F) {
	client, broker := seedFrames()
	f.Add(client, broker, uint16(100), true)
	f.Add(client[37:], broker[11:], uint16(7), false)
	f.Add([]byte{0x16, 3, 1, 0, 5}, []byte{}, uint16(1), false)
	// Hostile shapes: bodies larger than the body budget, whole or cut
	// short; a header whose tagged field claims megabytes; a Produce whose
	// transactional ID does; an answer to a leader with many members.
	join := joinGroupFrame(0, "c", 60<<10)
	f.Add(join, []byte{}, uint16(300), false)
	f.Add(join[:45<<10], []byte{}, uint16(511), false)
	f.Add(append(client[:37], join[:20<<10]...), broker, uint16(64), false)
	longTag := []byte{0, 0x80, 0, 0, 0, 68, 0, 0, 0, 0, 0, 1, 0, 1, 'c', 1, 7, 0x80, 0x80, 0x20}
	f.Add(append(longTag, make([]byte, 40<<10)...), []byte{}, uint16(200), false)
	txn := []byte{0, 0x80, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 1, 'c', 0, 0x80, 0x80, 0x20}
	f.Add(append(txn, make([]byte, 40<<10)...), []byte{}, uint16(100), false)
	lw := &wire{}
	lw.request(11, 9, 5, "c", nil, &kmsg.JoinGroupRequest{Group: "g", ProtocolType: "consumer"})
	lw.response(11, 9, 5, &kmsg.JoinGroupResponse{ErrorCode: 79, MemberID: "m-1", Members: []kmsg.JoinGroupResponseMember{
		{MemberID: "a", ProtocolMetadata: make([]byte, 30<<10)}, {MemberID: "b", ProtocolMetadata: make([]byte, 30<<10)}}})
	f.Add(lw.side[kafka.ToBroker], lw.side[kafka.ToClient], uint16(509), false)
	f.Fuzz(func(t *testing.T, client, broker []byte, step uint16, midStream bool) {
		const maxScan = 4096
		// The budget is under one side's cap: both sides share it.
		budget := &ScanBudget{Max: 3000}
		// The body budget is under one body's cap, so that both refuse.
		bodies := &BodyBudget{Max: 48 << 10}
		c := NewConn(Options{MaxScan: maxScan, MaxPending: 16, MaxBodySize: 64 << 10, ScanBudget: budget, BodyBudget: bodies,
			AllAnswers: step&1 == 1})
		c.Start(kafka.ToBroker, midStream)
		c.Start(kafka.ToClient, midStream)
		n := int(step%512) + 1
		frame := int64(0)
		for len(client) > 0 || len(broker) > 0 {
			for s, b := range [2]*[]byte{&client, &broker} {
				k := min(n, len(*b))
				if k == 0 {
					continue
				}
				frame++
				evs := c.Feed(kafka.Direction(s), (*b)[:k], []kafka.Span{{End: k, At: kafka.FrameRef{Frame: frame}}})
				for _, e := range evs {
					if e.At.Frame > frame || e.At.Frame < 0 {
						t.Fatalf("event at frame %d after %d frames", e.At.Frame, frame)
					}
				}
				*b = (*b)[k:]
				if frame%5 == 0 {
					c.Lost(kafka.Direction(s))
				}
			}
			kept := 0
			for s := range c.side {
				if ls := c.side[s].lostState; ls != nil {
					if len(ls.scan) > maxScan {
						t.Fatalf("scan buffer %d over its cap", len(ls.scan))
					}
					kept += len(ls.scan)
				}
			}
			if budget.used != int64(kept) || kept > int(budget.Max)+2*minScanKeep {
				t.Fatalf("budget counts %d of %d, the scans hold %d", budget.used, budget.Max, kept)
			}
			if c.pending.len() > 16 || c.pending.idBytes > maxPendingIDBytes {
				t.Fatalf("%d pending, %d bytes of client IDs, over the caps", c.pending.len(), c.pending.idBytes)
			}
			if charged, counted := held([]*Conn{c}); charged != bodies.used || counted != charged || bodies.used > bodies.Max {
				t.Fatalf("frame buffers hold %d over frameFree, framers count %d, the body budget %d of %d", charged, counted, bodies.used, bodies.Max)
			}
		}
		c.Finish()
		if budget.used != 0 {
			t.Fatalf("a finished connection still counts %d bytes of the budget", budget.used)
		}
		if bodies.used != 0 {
			t.Fatalf("a finished connection still counts %d bytes of the body budget", bodies.used)
		}
	})
}

// FuzzBodies decodes arbitrary bodies of every API the rules read.
func FuzzBodies(f *testing.F) {
	client, _ := seedFrames()
	f.Add(int16(72), int16(0), client[40:])
	f.Add(int16(72), int16(1), []byte{0, 0, 0, 1, 1, 0, 3, 1, 2, 0})
	f.Fuzz(func(t *testing.T, key, version int16, b []byte) {
		for _, k := range []int16{KeyJoinGroup, KeyLeaveGroup, KeySaslHandshake, KeyApiVersions, KeyConsumerGroupHeartbeat,
			KeyShareGroupHeartbeat, KeyStreamsGroupHeartbeat, KeyGetTelemetrySubscriptions, KeyPushTelemetry, key} {
			_, _ = safeDecode(func() (Body, error) { return decodeRequestBody(k, version%16, b) })
			_, _ = safeDecode(func() (Body, error) {
				body, _, _, err := decodeResponseBody(k, version%16, b)
				return body, err
			})
		}
	})
}

// FuzzReadAnswer: any body of any key and version is read or refused,
// never a panic; where the top-level code sits at a fixed offset, a body
// that decodes whole agrees with the code its first bytes hold.
func FuzzReadAnswer(f *testing.F) {
	for _, v := range []int16{4, 9, 13} {
		p := kmsg.NewPtrProduceResponse()
		p.Topics = []kmsg.ProduceResponseTopic{{Topic: "t", Partitions: []kmsg.ProduceResponseTopicPartition{{ErrorCode: 42}}}}
		f.Add(int16(0), v, encodeResponse(p, v))
		fr := kmsg.NewPtrFetchResponse()
		fr.ErrorCode = 42
		f.Add(int16(1), v, encodeResponse(fr, v))
	}
	f.Add(int16(71), int16(1), []byte{0, 0, 0, 0, 0, 42})
	f.Fuzz(func(t *testing.T, key, version int16, b []byte) {
		a, err := ReadAnswer(key, version, b)
		if err != nil {
			return
		}
		if top, ok := peekTop(key, version, b); ok && (!a.HasErrorCode || a.ErrorCode != top) {
			t.Errorf("key %d v%d: peekTop %d, ReadAnswer %+v", key, version, top, a)
		}
		if len(a.Nested) != len(slices.Compact(slices.Clone(a.Nested))) {
			t.Errorf("repeated nested codes %v", a.Nested)
		}
	})
}
