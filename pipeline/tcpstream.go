package pipeline

import (
	"encoding/binary"
	"sync"

	"github.com/gopacket/gopacket"

	"github.com/kidscope/kidscope/capture"
)

// tcpStreams numbers the TCP conversations of the inputs as Wireshark's
// tcp.stream does: every 4-tuple, Kafka or not, in the order of its first
// packet, from 0; a SYN (without ACK) on a known 4-tuple whose sequence
// number is not that direction's first starts a new stream (Wireshark's
// test: a reused port, not a retransmitted SYN). Memory is bounded: past
// max 4-tuples the streams are counted, not numbered, and the connections
// they carry have no number (a wrong one would send a reader to the wrong
// stream).
type tcpStreams struct {
	max    int
	tuples map[tupleKey]*tupleState
	next   int
	// Untracked counts the packets of 4-tuples past max, not numbered.
	untracked int64

	mu sync.Mutex // starts: written by the reader, read by the deliverer
	// starts maps each stream's first packet to its number, for the
	// connection that begins there (deliverer.open).
	starts map[packetKey]int
}

type tupleKey struct {
	flow       gopacket.Flow
	srcP, dstP uint16
}

type tupleState struct {
	stream  int
	base    [2]uint32 // the first sequence number seen each way
	hasBase [2]bool
}

type packetKey struct {
	file  int
	frame int64
}

// defaultTCPStreams is Options.TCPStreams when it is not set: about 100
// bytes each, 25 MiB.
const defaultTCPStreams = 1 << 18

func newTCPStreams(max int) *tcpStreams {
	if max <= 0 {
		max = defaultTCPStreams
	}
	return &tcpStreams{max: max, tuples: map[tupleKey]*tupleState{}, starts: map[packetKey]int{}}
}

// see takes one TCP segment, in capture order.
func (t *tcpStreams) see(flow gopacket.Flow, src, dst uint16, seq uint32, flags byte, file int, frame int64) {
	if t == nil { // a deliverer made without run's numbering (tests)
		return
	}
	k, dir := tupleKey{flow, src, dst}, 0
	if rev := flow.Reverse(); lessFlow(rev, dst, flow, src) {
		k, dir = tupleKey{rev, dst, src}, 1
	}
	const syn, ack = 0x02, 0x10
	st := t.tuples[k]
	switch {
	case st == nil:
		if len(t.tuples) >= t.max {
			t.untracked++
			return
		}
		st = &tupleState{}
		t.tuples[k] = st
	case flags&(syn|ack) == syn && st.hasBase[dir] && seq != st.base[dir]:
		*st = tupleState{}
	default:
		if !st.hasBase[dir] {
			st.base[dir], st.hasBase[dir] = seq, true
		}
		return
	}
	st.stream = t.next
	t.next++
	st.base[dir], st.hasBase[dir] = seq, true
	t.mu.Lock()
	if len(t.starts) < t.max { // streams that carry no Kafka stay: bounded too
		t.starts[packetKey{file, frame}] = st.stream
	}
	t.mu.Unlock()
}

// lessFlow orders the two directions of a 4-tuple, for one key for both.
func lessFlow(a gopacket.Flow, ap uint16, b gopacket.Flow, bp uint16) bool {
	if a.Src() != b.Src() {
		return a.Src().LessThan(b.Src())
	}
	return ap < bp
}

// stream returns the number of the stream whose first packet is at
// (file, frame), and forgets it: each starts one connection.
func (t *tcpStreams) stream(file int, frame int64) (int, bool) {
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.starts[packetKey{file, frame}]
	if ok {
		delete(t.starts, packetKey{file, frame})
	}
	return n, ok
}

// seeFixed takes a segment by its fixed TCP header.
func (t *tcpStreams) seeFixed(flow gopacket.Flow, h *[20]byte, file int, frame int64) {
	t.see(flow, binary.BigEndian.Uint16(h[0:]), binary.BigEndian.Uint16(h[2:]), binary.BigEndian.Uint32(h[4:]), h[13], file, frame)
}

// seePacket takes a packet as Source.Next returns it: its Segment when
// there is one, else its decoded layer (a live source).
func (t *tcpStreams) seePacket(p *capture.Packet) {
	if len(p.Segment) >= 20 {
		t.seeFixed(p.Network, (*[20]byte)(p.Segment[:20]), p.File, p.Frame)
		return
	}
	if p.TCP == nil {
		return
	}
	var flags byte
	if p.TCP.SYN {
		flags |= 0x02
	}
	if p.TCP.ACK {
		flags |= 0x10
	}
	t.see(p.Network, uint16(p.TCP.SrcPort), uint16(p.TCP.DstPort), p.TCP.Seq, flags, p.File, p.Frame)
}
