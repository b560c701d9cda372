package decode

import (
	"bytes"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchWire is a busy connection's traffic: produce requests with 16 KiB
// of records, heartbeats, and their responses.
func benchWire() *wire {
	w := &wire{}
	id := testID
	records := bytes.Repeat([]byte{7}, 16<<10)
	for i := int32(0); i < 200; i++ {
		if i%2 == 0 {
			w.request(0, 9, i, "producer-1", &id, &kmsg.ProduceRequest{Acks: -1, TimeoutMillis: 1000,
				Topics: []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: records}}}}})
			w.response(0, 9, i, &kmsg.ProduceResponse{})
		} else {
			w.request(12, 4, i, "producer-1", &id, &kmsg.HeartbeatRequest{Group: "g", Generation: 1, MemberID: "m"})
			w.response(12, 4, i, &kmsg.HeartbeatResponse{})
		}
	}
	return w
}

// BenchmarkConnFeed measures framing and header decoding of a connection
// fed in 1448-byte segments, as TCP delivers them.
func BenchmarkConnFeed(b *testing.B) {
	w := benchWire()
	var cuts [2][]int
	for s := range cuts {
		for k := 1448; k < len(w.side[s]); k += 1448 {
			cuts[s] = append(cuts[s], k)
		}
	}
	b.SetBytes(int64(len(w.side[0]) + len(w.side[1])))
	b.ReportAllocs()
	for b.Loop() {
		c := NewConn(Options{})
		feed(c, w, cuts)
	}
}

// BenchmarkRequestHeader measures one flexible request header with a tag-0
// instance ID.
func BenchmarkRequestHeader(b *testing.B) {
	w := benchWire()
	hdr := w.side[kafka.ToBroker][4:60]
	table := DefaultAPITable()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parseRequestHeader(hdr, table); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResync measures the search for a frame start in a stream the
// capture joined inside a 1 MiB response of random record bytes: every
// position is a candidate until its size field says otherwise.
func BenchmarkResync(b *testing.B) {
	noise := make([]byte, 1<<20)
	x := uint32(1)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		noise[i] = byte(x)
	}
	b.SetBytes(int64(len(noise)))
	b.ReportAllocs()
	for b.Loop() {
		c := NewConn(Options{})
		c.Start(kafka.ToClient, true)
		for k := 0; k < len(noise); k += 1448 {
			c.Feed(kafka.ToClient, noise[k:min(k+1448, len(noise))], []kafka.Span{{End: min(1448, len(noise)-k)}})
		}
	}
}
