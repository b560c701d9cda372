package reassembly

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/reassembly/internal/gopacketref"
)

// event is one Handler call, in a form both assemblers' calls map to.
type event struct {
	kind           string
	id             int
	dir            uint8
	n              int // data: length; gap: bytes lost
	sum            uint64
	spans          []kafka.Span
	at             kafka.FrameRef
	client, broker netip.AddrPort
	mid            [2]bool
	first          kafka.FrameRef
	close          kafka.Close
}

func (e event) String() string {
	return fmt.Sprintf("%s conn %d dir %d n %d sum %x spans %v at %d/%d close %+v mid %v first %d", e.kind, e.id, e.dir, e.n, e.sum, e.spans, e.at.File, e.at.Frame, e.close, e.mid, e.first.Frame)
}

func sumOf(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// newLog records the new assembler's calls.
type newLog struct{ events []event }

func (l *newLog) Open(c *Conn) {
	l.events = append(l.events, event{kind: "open", id: c.ID, client: c.Client, broker: c.Broker, mid: c.MidStream, first: c.First})
}

func (l *newLog) Data(c *Conn, d kafka.Direction, data []byte, spans []kafka.Span) {
	l.events = append(l.events, event{kind: "data", id: c.ID, dir: uint8(d), n: len(data), sum: sumOf(data), spans: slices.Clone(spans)})
}

func (l *newLog) Gap(c *Conn, d kafka.Direction, lost int, at kafka.FrameRef) {
	l.events = append(l.events, event{kind: "gap", id: c.ID, dir: uint8(d), n: lost, at: at})
}

func (l *newLog) Closed(c *Conn, at kafka.FrameRef) {
	l.events = append(l.events, event{kind: "closed", id: c.ID, at: at, close: c.Close})
}

// refLog records the gopacket-based reference's calls.
type refLog struct{ events []event }

func refFrame(s gopacketref.Span) kafka.FrameRef {
	return kafka.FrameRef{File: s.File, Frame: s.Frame, Time: s.Time}
}

func refSpan(s gopacketref.Span) kafka.Span { return kafka.Span{End: s.End, At: refFrame(s)} }

func (l *refLog) Open(c *gopacketref.Conn) {
	l.events = append(l.events, event{kind: "open", id: c.ID, client: c.Client, broker: c.Broker, mid: c.MidStream, first: refFrame(c.First)})
}

func (l *refLog) Data(c *gopacketref.Conn, d gopacketref.Direction, data []byte, spans []gopacketref.Span) {
	e := event{kind: "data", id: c.ID, dir: uint8(d), n: len(data), sum: sumOf(data)}
	for _, s := range spans {
		e.spans = append(e.spans, refSpan(s))
	}
	l.events = append(l.events, e)
}

func (l *refLog) Gap(c *gopacketref.Conn, d gopacketref.Direction, lost int, at gopacketref.Span) {
	l.events = append(l.events, event{kind: "gap", id: c.ID, dir: uint8(d), n: lost, at: refFrame(at)})
}

func (l *refLog) Closed(c *gopacketref.Conn, at gopacketref.Span) {
	cl := kafka.Close{Seen: c.Close.Seen, Reset: c.Close.Reset, By: kafka.Direction(c.Close.By), At: refFrame(c.Close.At)}
	l.events = append(l.events, event{kind: "closed", id: c.ID, at: refFrame(at), close: cl})
}

// trafficGen turns fuzz bytes into segments of up to three connections to
// one broker: in order, ahead of a hole, retransmitted or overlapping
// with other bytes, handshakes, FINs and RSTs at or off the next byte,
// bare ACKs, ACKs of bytes never sent in the capture, time jumps past
// FlushAfter and IdleAfter (and back), and new connections on a closed
// 4-tuple.
type trafficGen struct {
	in     []byte
	broker netip.AddrPort
	rng    uint64
	now    time.Time
	frame  [2]int64
	conns  [3]genConn
}

type genConn struct {
	client netip.AddrPort
	isn    [2]uint32 // sequence number of the first data byte, per direction
	sent   [2]uint32 // bytes sent (offset of the next new byte)
}

func (g *trafficGen) byte() byte {
	if len(g.in) == 0 {
		return 0
	}
	b := g.in[0]
	g.in = g.in[1:]
	return b
}

func (g *trafficGen) rand() uint64 {
	g.rng += 0x9e3779b97f4a7c15
	z := g.rng
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (g *trafficGen) fresh(i int) {
	c := &g.conns[i]
	c.isn = [2]uint32{uint32(g.rand()), uint32(g.rand())}
	if g.rand()%4 == 0 {
		c.isn[0] = ^uint32(0) - uint32(g.rand()%5000) // near the wrap
	}
	c.sent = [2]uint32{}
}

// segment is one generated segment, to be fed to both assemblers.
type segment struct {
	file     int
	frame    int64
	at       time.Time
	src, dst netip.AddrPort
	seq, ack uint32
	flags    byte // FIN 1, SYN 2, RST 4, ACK 16
	payload  []byte
}

func (g *trafficGen) next() (segment, bool) {
	if len(g.in) < 4 {
		return segment{}, false
	}
	b0, b1, b2, b3 := g.byte(), g.byte(), g.byte(), g.byte()
	i := int(b0 % 3)
	c := &g.conns[i]
	dir := int(b0>>2) & 1
	g.now = g.now.Add(time.Duration(b3&7) * time.Millisecond)
	if b3&0x60 == 0x60 && b1&1 != 0 {
		g.now = g.now.Add(-2 * time.Second) // capture time goes back
	}
	var s segment
	s.file = int(b3>>7) & int(b2>>7) // mostly file 0
	g.frame[s.file]++
	s.frame, s.at = g.frame[s.file], g.now
	s.src, s.dst = c.client, g.broker
	if dir == 1 {
		s.src, s.dst = s.dst, s.src
	}
	peer := 1 - dir
	s.flags = 16
	s.ack = c.isn[peer] + c.sent[peer]
	switch b3 >> 3 & 3 {
	case 1:
		s.ack += uint32(b2%64) * 16 // acknowledges bytes the capture lacks
	case 2:
		s.ack -= uint32(b2 % 200) // an old acknowledgment
	}
	n := int(b1) * 16 % 4000
	off := c.sent[dir]
	switch b0 >> 3 & 7 {
	case 0: // in order
		c.sent[dir] += uint32(n)
	case 1: // ahead of lost bytes
		lost := uint32(b2)*8 + 1
		if b2 == 255 {
			lost = 1 << 31 // far off
		}
		off += lost
		c.sent[dir] = off + uint32(n)
	case 2: // retransmitted, overlapping, or partly new
		back := uint32(b2) * 8
		off -= min(back, off)
		c.sent[dir] = max(c.sent[dir], off+uint32(n))
	case 3: // handshake
		n = 0
		off--
		s.flags = 2
		if dir == 1 {
			s.flags |= 16
		} else {
			s.ack = 0
		}
	case 4: // FIN, with a little data
		n %= 100
		s.flags |= 1
		c.sent[dir] += uint32(n)
	case 5: // RST at the next byte or about it
		n = 0
		off += uint32(b2%3) - 1
		s.flags |= 4
		if b2&8 != 0 {
			s.flags = 4
		}
	case 6: // bare ACK
		n = 0
	case 7: // time passes, or a new connection on the 4-tuple
		n = 0
		switch b1 % 5 {
		case 0:
			g.now = g.now.Add(time.Second)
		case 1:
			g.now = g.now.Add(4 * time.Second)
		case 2:
			g.now = g.now.Add(11 * time.Minute)
		case 3:
			g.fresh(i)
			off = 0
			s.flags = 2
			s.ack = 0
			s.src, s.dst = c.client, g.broker
			s.seq = c.isn[0] - 1
			return s, true
		default:
			g.now = g.now.Add(500 * time.Millisecond)
		}
	}
	s.seq = c.isn[dir] + off
	if n > 0 {
		s.payload = make([]byte, n)
		for k := range s.payload {
			s.payload[k] = byte(int(s.frame)*31 + k*7 + int(off))
		}
	}
	return s, true
}

// packet builds the capture.Packet of a segment, its TCP layer decoded
// from bytes as the capture reader does (gopacket's flows need that).
func (s segment) packet(p *capture.Packet, tcp *layers.TCP) error {
	h := make([]byte, 20, 20+len(s.payload))
	binary.BigEndian.PutUint16(h[0:], s.src.Port())
	binary.BigEndian.PutUint16(h[2:], s.dst.Port())
	binary.BigEndian.PutUint32(h[4:], s.seq)
	binary.BigEndian.PutUint32(h[8:], s.ack)
	h[12] = 5 << 4
	h[13] = s.flags
	binary.BigEndian.PutUint16(h[14:], 65535)
	h = append(h, s.payload...)
	if err := tcp.DecodeFromBytes(h, gopacket.NilDecodeFeedback); err != nil {
		return err
	}
	flow := func() gopacket.Flow {
		if s.src.Addr().Is4() {
			a, b := s.src.Addr().As4(), s.dst.Addr().As4()
			return gopacket.NewFlow(layers.EndpointIPv4, a[:], b[:])
		}
		a, b := s.src.Addr().As16(), s.dst.Addr().As16()
		return gopacket.NewFlow(layers.EndpointIPv6, a[:], b[:])
	}
	*p = capture.Packet{File: s.file, Frame: s.frame, Time: s.at, Network: flow(), TCP: tcp, Segment: h}
	return nil
}

// FuzzAgainstGopacket runs the assembler and the gopacket-based one it
// replaced on the same segments and requires the same Handler calls.
func FuzzAgainstGopacket(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x18\x00\x00\x00\x1c\x00\x00\x00\x00\x10\x00\x00\x04\x20\x00\x00\x08\x10\x05\x08\x01\x10\x00\x00\x28\x02\x00\x00\x2c\x00\x00\x00"))
	f.Add([]byte("\x07\x01\x02\x03\x04\x05\x06\x07\x1b\x00\x00\x00\x18\x00\x00\x00\x00\x40\x00\x00\x08\x30\x10\x08\x00\x30\x00\x00\x10\x40\x20\x00\x04\x10\x00\x10\x38\x02\x00\x00\x00\x10\x00\x00\x29\x01\x00\x00"))
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x08\x40\x30\x00\x00\x60\x00\x00\x04\x10\x00\x08\x10\x20\x40\x00\x38\x03\x00\x00\x00\x20\x00\x00\x39\x00\x00\x00\x3a\x02\x00\x00\x01\x10\x00\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 8 || len(in) > 8+4*64 {
			return
		}
		knobs := in[0]
		g := &trafficGen{in: in[8:], rng: binary.LittleEndian.Uint64(in), now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
		client, broker := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
		if knobs&32 != 0 {
			client, broker = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
		}
		g.broker = netip.AddrPortFrom(broker, 9092)
		for i := range g.conns {
			g.conns[i].client = netip.AddrPortFrom(client, uint16(40000+i))
			g.fresh(i)
		}
		// The reference keeps a connection on its 4-tuple until it closes
		// (reuse has tests of its own).
		opt := Options{Ports: DefaultPorts(), FlushAfter: 3 * time.Second, IdleAfter: 10 * time.Minute, noReuse: true}
		if knobs&1 != 0 {
			opt.MaxPagesPerConnection = 1 + int(in[1]%4)
			opt.MaxPagesTotal = 1 + int(in[2]%8)
		}
		if knobs&2 != 0 {
			opt.MaxConnections = 1 + int(in[3]%2)
		}
		if knobs&4 != 0 {
			opt.IdleAfter = 2 * time.Second // shorter than FlushAfter
		}
		if knobs&8 != 0 {
			opt.Ports.Auto = true
		}
		ropt := gopacketref.Options{Ports: gopacketref.DefaultPorts(), MaxConnections: opt.MaxConnections,
			MaxPagesTotal: opt.MaxPagesTotal, MaxPagesPerConnection: opt.MaxPagesPerConnection,
			FlushAfter: opt.FlushAfter, IdleAfter: opt.IdleAfter}
		ropt.Ports.Auto = opt.Ports.Auto
		if knobs&16 != 0 {
			opt, ropt = opt.Split(2), ropt.Split(2)
		}
		var nl newLog
		var rl refLog
		na, ra := New(opt, &nl), gopacketref.New(ropt, &rl)
		var p capture.Packet
		var tcp layers.TCP
		frames, checked := 0, 0
		for {
			s, ok := g.next()
			if !ok {
				break
			}
			if err := s.packet(&p, &tcp); err != nil {
				t.Fatal(err)
			}
			frames++
			na.Add(&p)
			ra.Add(&p)
			if s.flags == 16 && len(s.payload) == 0 && s.seq%7 == 0 {
				na.Expire(s.at) // as a live capture does while no packet comes
				ra.Expire(s.at)
			}
			if na.farHeld > 0 {
				return // past where the two can differ (see farHeld)
			}
			compare(t, frames, &checked, nl.events, rl.events)
			if st, rt := na.Stats(), ra.Stats(); st != refStats(rt) {
				t.Fatalf("after %d segments: stats %+v, reference %+v", frames, st, rt)
			}
		}
		na.Finish()
		ra.Finish()
		compare(t, frames, &checked, nl.events, rl.events)
		if st, rt := na.Stats(), ra.Stats(); st != refStats(rt) {
			t.Fatalf("at the end: stats %+v, reference %+v", st, rt)
		}
	})
}

// refStats is the reference's counters as the assembler's.
func refStats(r gopacketref.Stats) Stats {
	return Stats{Connections: r.Connections, ConnectionsDropped: r.ConnectionsDropped, Segments: r.Segments,
		Ignored: r.Ignored, Rejected: r.Rejected, Gaps: r.Gaps, GapBytes: r.GapBytes}
}

// same reports whether two calls are the same.
func same(x, y event) bool {
	if !slices.EqualFunc(x.spans, y.spans, sameSpan) || !sameFrame(x.at, y.at) || !sameFrame(x.first, y.first) || !sameFrame(x.close.At, y.close.At) {
		return false
	}
	return x.kind == y.kind && x.id == y.id && x.dir == y.dir && x.n == y.n && x.sum == y.sum &&
		x.client == y.client && x.broker == y.broker && x.mid == y.mid &&
		x.close.Seen == y.close.Seen && x.close.Reset == y.close.Reset && x.close.By == y.close.By
}

func sameSpan(x, y kafka.Span) bool { return x.End == y.End && sameFrame(x.At, y.At) }

func sameFrame(x, y kafka.FrameRef) bool { return x.Same(y) && x.Time.Equal(y.Time) }

// compare checks the calls made since the last check (from *checked on).
func compare(t *testing.T, frames int, checked *int, got, want []event) {
	t.Helper()
	for i := *checked; i < max(len(got), len(want)); i++ {
		if i < len(got) && i < len(want) && same(got[i], want[i]) {
			continue
		}
		var g, w string
		if i < len(got) {
			g = got[i].String()
		}
		if i < len(want) {
			w = want[i].String()
		}
		t.Fatalf("after %d segments, call %d:\n got  %s\n want %s\n(%d and %d calls)", frames, i, g, w, len(got), len(want))
	}
	*checked = min(len(got), len(want))
}
