package pipeline

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func flowOf(a, b string) gopacket.Flow {
	return gopacket.NewFlow(layers.EndpointIPv4, net.ParseIP(a).To4(), net.ParseIP(b).To4())
}

// TestTCPStreamsNumberAsWireshark: both directions are one stream; a
// retransmitted SYN is not a new one, a SYN with another sequence number
// on a known 4-tuple is (a reused port); past the cap, streams get no
// number.
func TestTCPStreamsNumberAsWireshark(t *testing.T) {
	const syn, ack = 0x02, 0x10
	c, s := flowOf("10.0.0.1", "10.0.0.2"), flowOf("10.0.0.2", "10.0.0.1")
	o := flowOf("10.0.0.3", "10.0.0.2")
	ts := newTCPStreams(3)
	steps := []struct {
		flow     gopacket.Flow
		src, dst uint16
		seq      uint32
		flags    byte
		want     int // -1: starts no stream
	}{
		{c, 5000, 9092, 100, syn, 0},
		{s, 9092, 5000, 700, syn | ack, -1},
		{c, 5000, 9092, 100, syn, -1},       // retransmitted
		{c, 5001, 9092, 1, ack, 1},          // mid-stream: its first packet
		{o, 6000, 80, 1, syn, 2},            // not Kafka: counted all the same
		{c, 5000, 9092, 900, syn, 3},        // the port reused
		{s, 9092, 5000, 800, syn | ack, -1}, // its answer
		{c, 5002, 9092, 1, syn, -1},         // past the cap: not numbered
	}
	for i, st := range steps {
		ts.see(st.flow, st.src, st.dst, st.seq, st.flags, 0, int64(i+1))
		n, ok := ts.stream(0, int64(i+1))
		if st.want < 0 && ok || st.want >= 0 && (!ok || n != st.want) {
			t.Errorf("packet %d: stream %d %v, want %d", i+1, n, ok, st.want)
		}
	}
	if ts.untracked != 1 {
		t.Errorf("untracked %d, want 1", ts.untracked)
	}
	if _, ok := ts.stream(0, 1); ok {
		t.Error("a stream's start is looked up once")
	}
}
