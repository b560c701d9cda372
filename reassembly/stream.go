package reassembly

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/kafka"
)

// pageSize is the unit in which out-of-order data is held and counted
// against MaxPagesPerConnection and MaxPagesTotal: a held segment is cut
// into pages of this many bytes from its start.
const pageSize = 1900

// stamp is a capture time as plain numbers, so that held pages and
// connections carry no pointer (a time.Time points to its location) for
// the garbage collector to scan.
type stamp struct {
	sec  int64
	nsec int32
}

func stampOf(t time.Time) stamp { return stamp{sec: t.Unix(), nsec: int32(t.Nanosecond())} }

func (s stamp) before(t stamp) bool { return s.sec < t.sec || s.sec == t.sec && s.nsec < t.nsec }

func (s stamp) time() time.Time { return time.Unix(s.sec, int64(s.nsec)).UTC() }

// frameRef names a captured frame.
type frameRef struct {
	file  int
	frame int64
	at    stamp
}

func (r frameRef) ref() kafka.FrameRef {
	return kafka.FrameRef{File: r.file, Frame: r.frame, Time: r.at.time()}
}

func (r frameRef) span(end int) kafka.Span { return kafka.Span{End: end, At: r.ref()} }

// later orders frames in capture order: by number within one file, by
// time across files (merged inputs are in time order).
func later(x, y kafka.FrameRef) bool {
	if x.File == y.File {
		return x.Frame > y.Frame
	}
	return x.Time.After(y.Time)
}

// seqDiff is how far sequence number t lies after s (negative: before).
// Numbers in the last and the first quarter of the space are taken as
// neighbours across the wrap; any other distance is taken as it is, so a
// segment half the space away counts as far ahead or far behind by its
// value, not by the shorter way round.
func seqDiff(s, t uint32) int {
	x, y := int64(s), int64(t)
	const quarter = 1 << 30
	switch {
	case s >= 1<<32-quarter && t < quarter:
		y += 1 << 32
	case t >= 1<<32-quarter && s < quarter:
		x += 1 << 32
	}
	return int(y - x)
}

// after reports whether sequence number x lies after y, modulo 2^32: the
// bookkeeping of acknowledgments (see stream.mustFlush) takes the shorter
// way round.
func after(x, y uint32) bool { return int32(x-y) > 0 }

// page is out-of-order data held until the bytes before it arrive.
type page struct {
	seq  uint32
	data []byte
	ref  frameRef // the segment the bytes came with
	// seen is when the page's segment was captured, lowered to the
	// earliest of the pages after it when a flush by age looks: pages can
	// only be handed over in sequence order, so none waits longer than
	// those behind it.
	seen stamp
	end  bool // the page ends its segment, which carried a FIN
}

// half is one direction of a connection.
type half struct {
	next   uint32 // the next sequence number the stream expects
	synced bool   // next is known: the direction has started
	// fin is where a FIN that came ahead of next ends the stream.
	fin      uint32
	finAhead bool
	closed   bool
	held     heldTree // out-of-order data, in sequence order
}

type streamList struct{ head, tail *stream }

// connKey names a connection by its endpoints, the lower first, so that
// both directions find it. An IPv4 endpoint packs into a word (address and
// port), which keeps the key small and quick to hash; IPv6 endpoints are
// kept whole.
type connKey struct {
	v4   [2]uint64
	v6   wideKey
	isV6 bool
}

type wideKey struct {
	addr [2][16]byte
	port [2]uint16
}

// keyOf returns the key of a segment's connection and which of the key's
// endpoints sent it.
func keyOf(f *gopacket.Flow, sp, dp uint16) (connKey, uint8) {
	src, dst := f.Endpoints()
	sr, dr := src.Raw(), dst.Raw()
	var k connKey
	if len(sr) == 4 && len(dr) == 4 {
		x := uint64(binary.BigEndian.Uint32(sr))<<16 | uint64(sp)
		y := uint64(binary.BigEndian.Uint32(dr))<<16 | uint64(dp)
		if x <= y {
			k.v4 = [2]uint64{x, y}
			return k, 0
		}
		k.v4 = [2]uint64{y, x}
		return k, 1
	}
	k.isV6 = true
	if c := bytes.Compare(sr, dr); c < 0 || c == 0 && sp <= dp {
		copy(k.v6.addr[0][:], sr)
		copy(k.v6.addr[1][:], dr)
		k.v6.port = [2]uint16{sp, dp}
		return k, 0
	}
	copy(k.v6.addr[0][:], dr)
	copy(k.v6.addr[1][:], sr)
	k.v6.port = [2]uint16{dp, sp}
	return k, 1
}

func (a *Assembler) lookup(k *connKey) *stream {
	if k.isV6 {
		return a.conns6[k.v6]
	}
	return a.conns[k.v4]
}

func (a *Assembler) keep(k *connKey, s *stream) {
	if k.isV6 {
		a.conns6[k.v6] = s
	} else {
		a.conns[k.v4] = s
	}
}

func (a *Assembler) forget(s *stream) {
	if s.key6 != nil {
		delete(a.conns6, *s.key6)
	} else {
		delete(a.conns, s.key4)
	}
}

func endpoints(f gopacket.Flow, tcp *layers.TCP) (src, dst netip.AddrPort) {
	s, _ := netip.AddrFromSlice(f.Src().Raw())
	d, _ := netip.AddrFromSlice(f.Dst().Raw())
	return netip.AddrPortFrom(s.Unmap(), uint16(tcp.SrcPort)), netip.AddrPortFrom(d.Unmap(), uint16(tcp.DstPort))
}

// stream is a tracked connection.
type stream struct {
	conn Conn
	// The connection's key in Assembler.conns, or, for IPv6, conns6.
	key4 [2]uint64
	key6 *wideKey
	// The connection's place in Assembler.byFile.
	prev, next *stream
	clientSide uint8           // the key endpoint of the client
	firstDir   kafka.Direction // the direction of the first segment
	dropped    bool            // over MaxConnections: its segments are ignored
	removed    bool            // no longer tracked
	opened     bool            // Open was called
	syn        [2]bool         // a SYN was seen in the direction
	synSeq     [2]uint32       // the sequence number of that SYN
	state      tcpState
	last       frameRef // the last segment accepted
	lastSeen   stamp    // the latest capture time of its segments

	// Per direction, a follower of the sequence numbers that decides when
	// lost bytes are given up early (see mustFlush): nxt is the next
	// sequence number expected, end the end of the furthest data seen,
	// acked the furthest acknowledgment by the peer. Data beyond nxt is
	// held out of order; acked beyond nxt means the peer has bytes the
	// capture has not shown.
	nxt, end, acked [2]uint32
	known, hasAck   [2]bool
	// ended says that the direction's stream ended (FIN, RST or a
	// reset of the other direction), rst that it was ended by an RST.
	ended, rst [2]bool

	half [2]half
}

func (s *stream) dir(side uint8) kafka.Direction {
	if side == s.clientSide {
		return kafka.ToBroker
	}
	return kafka.ToClient
}

// flushOrder is the order in which flushes visit the directions: the
// answering direction first.
func (s *stream) flushOrder() [2]kafka.Direction {
	return [2]kafka.Direction{1 - s.firstDir, s.firstDir}
}

func (a *Assembler) eachStream(f func(s *stream)) {
	for i := range a.byFile {
		for s := a.byFile[i].head; s != nil; {
			next := s.next
			f(s)
			s = next
		}
	}
}

// newStream starts tracking the connection of a segment that opens one.
func (a *Assembler) newStream(p *capture.Packet, k *connKey, side uint8, ref frameRef) *stream {
	s := &stream{key4: k.v4, lastSeen: ref.at}
	if k.isV6 {
		w := k.v6
		s.key6 = &w
	}
	if ref.at.before(a.quietSince) {
		a.quietSince = ref.at // capture time went back
	}
	s.conn.First = ref.ref()
	if !a.admit() {
		a.stats.ConnectionsDropped++
		s.dropped = true
	} else {
		a.live++
		src, dst := endpoints(p.Network, p.TCP)
		s.firstDir, s.clientSide = kafka.ToClient, 1-side
		s.conn.Client, s.conn.Broker = dst, src
		if a.opt.Ports.brokerIsDst(p.TCP) {
			s.firstDir, s.clientSide = kafka.ToBroker, side
			s.conn.Client, s.conn.Broker = src, dst
		}
	}
	a.keep(k, s)
	for len(a.byFile) <= ref.file {
		a.byFile = append(a.byFile, streamList{})
	}
	l := &a.byFile[ref.file]
	at := l.tail // insert after at: in frame order, at the end but for callers out of order
	for at != nil && at.conn.First.Frame > ref.frame {
		at = at.prev
	}
	s.prev = at
	if at == nil {
		s.next, l.head = l.head, s
	} else {
		s.next, at.next = at.next, s
	}
	if s.next == nil {
		l.tail = s
	} else {
		s.next.prev = s
	}
	return s
}

// admit reports whether a new connection is within MaxConnections, and
// counts it in the shared count when it is.
func (a *Assembler) admit() bool {
	if c := a.opt.sharedLive; c != nil {
		if c.Add(1) > int64(a.opt.MaxConnections) {
			c.Add(-1)
			return false
		}
		return true
	}
	return a.live < a.opt.MaxConnections
}

// complete ends a connection whose directions are both closed.
func (a *Assembler) complete(s *stream) {
	if !s.dropped {
		a.live--
		if a.opt.sharedLive != nil {
			a.opt.sharedLive.Add(-1)
		}
	}
	if s.opened {
		a.h.Closed(&s.conn, s.last.ref())
	}
	s.removed = true
	a.forget(s)
	l := &a.byFile[s.conn.First.File]
	if s.prev == nil {
		l.head = s.next
	} else {
		s.prev.next = s.next
	}
	if s.next == nil {
		l.tail = s.prev
	} else {
		s.next.prev = s.prev
	}
	s.prev, s.next = nil, nil
}

func (a *Assembler) closeHalf(s *stream, d kafka.Direction) {
	h := &s.half[d]
	h.closed = true
	a.pages -= h.held.n
	a.arena.releaseAll(h.held.root)
	h.held = heldTree{}
	if s.half[1-d].closed {
		a.complete(s)
	}
}

func (a *Assembler) open(s *stream) {
	if s.opened {
		return
	}
	s.opened = true
	a.stats.Connections++
	s.conn.MidStream = [2]bool{!s.syn[kafka.ToBroker], !s.syn[kafka.ToClient]}
	a.nextID++
	s.conn.ID = a.nextID
	a.h.Open(&s.conn)
}

// segment takes one segment on a broker port.
func (a *Assembler) segment(p *capture.Packet, ref frameRef) {
	tcp := p.TCP
	k, side := keyOf(&p.Network, uint16(tcp.SrcPort), uint16(tcp.DstPort))
	refuse := true
	for try := 0; ; try++ {
		s := a.lookup(&k)
		if s == nil {
			if !tcp.SYN && len(tcp.Payload) == 0 {
				// A bare ACK, FIN or RST starts no connection: after a
				// connection closed, its last ACK would otherwise open a
				// new one that catches a new connection reusing the
				// 4-tuple, whose SYN it would then drop as a SYN on an
				// established connection. A connection seen mid-stream
				// opens with its first data instead.
				return
			}
			s = a.newStream(p, &k, side, ref)
		}
		if s.dropped {
			if s.lastSeen.before(ref.at) {
				s.lastSeen = ref.at
			}
			return
		}
		d := s.dir(side)
		if a.replaces(s, tcp, d, ref) {
			// The segment starts a new connection on the 4-tuple: the
			// old one ends here, as if the capture had ended.
			a.stats.Reused++
			for _, d := range s.flushOrder() {
				for !s.half[d].closed {
					a.skipHole(s, d)
				}
			}
			continue
		}
		if s.lastSeen.before(ref.at) {
			s.lastSeen = ref.at
		}
		x, first, ok := s.mustFlush(tcp, d)
		if ok && first && refuse {
			// The segment acknowledges bytes missing before the data held
			// in the other direction, received by the peer but not
			// captured. Waiting for them until FlushAfter would hand that
			// data over after this segment's, out of capture order
			// (responses before their requests): give them up now, one
			// hole at a time, then take the segment. (The flush may have
			// ended the connection: the segment then goes to a new one.)
			before := s.nxt[x]
			a.flushHole(s, x, ref)
			refuse = s.nxt[x] != before && try < 16
			continue
		}
		if s.state.check(tcp, d) {
			s.accept(tcp, d, ref)
			a.assemble(s, d, tcp, ref)
		} else {
			a.stats.Rejected++
		}
		if ok && !first {
			// The segment came out of order after its hole was
			// acknowledged: give up the holes acknowledged, so that it is
			// handed over with its own frame rather than when the next
			// segment comes.
			for try := 0; try < 16 && after(s.acked[d], s.nxt[d]) && after(s.end[d], s.nxt[d]); try++ {
				before := s.nxt[d]
				if a.flushHole(s, d, ref); s.nxt[d] == before {
					break
				}
			}
		}
		return
	}
}

// farJump is how far from a stream's next byte a segment must lie to
// belong to another connection: further than any window lets a
// retransmission lag or new bytes run ahead in practice.
const farJump = 1 << 24

// replaces reports whether a segment in direction d belongs to a new
// connection on the 4-tuple of s rather than to s: a SYN that is not the
// one s began with, while s was closing, idle for FlushAfter or
// Abandoned; or bytes at a sequence number far from the stream's while s
// was idle or Abandoned. (A SYN on a live connection is dropped by the
// receiver, RFC 5961, and so is ignored here too.)
func (a *Assembler) replaces(s *stream, tcp *layers.TCP, d kafka.Direction, ref frameRef) bool {
	switch {
	case a.opt.noReuse:
		return false
	case tcp.SYN && !tcp.ACK:
		if s.syn[d] && tcp.Seq == s.synSeq[d] {
			return false // retransmitted
		}
		return s.conn.Abandoned || s.state.phase >= tcpCloseWait || a.idle(s, ref)
	case len(tcp.Payload) > 0 && s.half[d].synced:
		if diff := seqDiff(s.half[d].next, tcp.Seq); diff > -farJump && diff < farJump {
			return false
		}
		return s.conn.Abandoned || a.idle(s, ref)
	}
	return false
}

// idle reports whether s has been silent for FlushAfter before ref.
func (a *Assembler) idle(s *stream, ref frameRef) bool {
	since := time.Duration(ref.at.sec-s.lastSeen.sec)*time.Second + time.Duration(ref.at.nsec-s.lastSeen.nsec)
	return since >= a.opt.FlushAfter
}

// mustFlush decides, for a segment in direction d, whether a direction of
// the connection must give up the bytes it waits for, because the peer
// acknowledged them: it received them and the capture lost them (a
// retransmission is not acknowledged before it arrives). It returns the
// direction, and first=true when that must happen before the segment is
// taken: a segment that acknowledges bytes missing in the other
// direction, which holds data out of order, must not be decoded before
// that data (a response before its request). Otherwise, for a segment
// that arrives out of order in its own direction after its hole was
// acknowledged, the flush follows it.
func (s *stream) mustFlush(tcp *layers.TCP, d kafka.Direction) (x kafka.Direction, first, ok bool) {
	x = 1 - d
	if tcp.ACK && s.known[x] && after(s.end[x], s.nxt[x]) && after(tcp.Ack, s.nxt[x]) {
		return x, true, true
	}
	if s.known[d] && s.hasAck[d] && after(tcp.Seq, s.nxt[d]) && after(s.acked[d], s.nxt[d]) {
		return d, false, true
	}
	return 0, false, false
}

// accept records a segment the state machine let through.
func (s *stream) accept(tcp *layers.TCP, d kafka.Direction, ref frameRef) {
	h := &s.half[d]
	if tcp.RST && (!h.synced || h.next == tcp.Seq) {
		s.rst[d] = true // at the next sequence number: it ends the stream
	}
	s.track(d, tcp.Seq, tcp.SYN, len(tcp.Payload), tcp.ACK, tcp.Ack)
	s.last = ref
	if tcp.SYN && !s.syn[d] {
		s.syn[d], s.synSeq[d] = true, tcp.Seq
	}
	if (tcp.FIN || tcp.RST) && !s.conn.Close.Seen {
		s.conn.Close = kafka.Close{Seen: true, Reset: tcp.RST, By: d, At: ref.ref()}
	}
}

// track follows the sequence numbers of a segment in direction d (see
// nxt), before the segment is assembled.
func (s *stream) track(d kafka.Direction, seq uint32, syn bool, n int, hasAck bool, ack uint32) {
	h := &s.half[d]
	switch {
	case h.synced:
		s.nxt[d] = h.next
	case syn:
		s.nxt[d] = seq + 1 // where the stream starts after a SYN
	default:
		s.nxt[d] = seq // a stream seen mid-stream starts at its first segment
	}
	if !s.known[d] {
		s.end[d], s.known[d] = s.nxt[d], true
	}
	// Only data can be held out of order: a bare segment's sequence number
	// (a stray ACK) moves nothing.
	if e := seq + uint32(n); n > 0 && after(e, s.end[d]) {
		s.end[d] = e
	}
	if hasAck && (!s.hasAck[1-d] || after(ack, s.acked[1-d])) {
		s.acked[1-d], s.hasAck[1-d] = ack, true
	}
}

// assemble takes an accepted segment into its direction's stream.
func (a *Assembler) assemble(s *stream, d kafka.Direction, tcp *layers.TCP, ref frameRef) {
	h := &s.half[d]
	if h.closed {
		return
	}
	// A SYN on a synchronized direction is answered with a challenge ACK
	// and dropped by the receiver (RFC 5961): its payload is not stream
	// data.
	if tcp.SYN && h.synced {
		return
	}
	seq, data := tcp.Seq, tcp.Payload
	ahead := true
	if !h.synced {
		if tcp.SYN {
			seq++
		}
		h.next, h.synced = seq, true
		ahead = false
	} else if diff := seqDiff(h.next, seq); diff <= 0 {
		// An RST before next, or a FIN that ends before it, lies outside
		// the receiver's window: it is dropped and ends nothing.
		if tcp.RST && diff < 0 || tcp.FIN && seqDiff(h.next, seq+uint32(len(data))) < 0 {
			return
		}
		ahead = false
	}
	end := tcp.RST || tcp.FIN
	var next uint32
	moved := false
	if ahead {
		if tcp.RST {
			return // not at next: the receiver drops it (RFC 5961)
		}
		if tcp.FIN {
			// A bare FIN ahead is not held: remember where it ends.
			h.fin, h.finAhead = seq+uint32(len(data)), true
		}
		a.overlapHeld(h, seq, data, true, end, ref)
		if h.held.n >= a.opt.MaxPagesPerConnection || a.pages >= a.opt.MaxPagesTotal {
			// At a cap: give up the first hole.
			if h.held.n > 0 {
				next, moved = a.handOverHeld(s, d, false, ref), true
			}
		}
	} else {
		seq, data = overlapSent(h, seq, data)
		data = a.overlapHeld(h, seq, data, false, end, ref)
		if len(data) > 0 || end || tcp.SYN {
			next, moved = a.handOver(s, d, chunk{seq: seq, data: data, ref: ref, end: end}, false, ref), true
		}
	}
	if moved {
		h.next = next
		if tcp.FIN {
			h.next++
		}
	}
}

// overlapSent drops the bytes of an in-order segment that were handed
// over already: the first bytes to arrive win.
func overlapSent(h *half, seq uint32, data []byte) (uint32, []byte) {
	diff := seqDiff(seq, h.next)
	if diff == 0 {
		return seq, data
	}
	return h.next, data[min(max(diff, 0), len(data)):]
}

// overlapHeld reconciles the bytes [seq, seq+len(data)) of a new segment
// with the pages held: where they overlap, the new bytes replace the held
// ones, except that bytes falling wholly inside one held page are copied
// into it (and then count as the page's frame). With hold, what is left
// of the new bytes is held too; it returns what is left.
func (a *Assembler) overlapHeld(h *half, seq uint32, data []byte, hold, end bool, ref frameRef) []byte {
	if len(data) == 0 || h.held.n == 0 && !hold {
		return data
	}
	ar := &a.arena
	base := h.next
	start := off(seq, base)
	stop := start + int64(len(data))
	before, rest := ar.split(h.held.root, start, base)
	if before != 0 {
		cur := &ar.nodes[ar.last(before)]
		curStart := off(cur.seq, base)
		if curStop := curStart + int64(len(cur.data)); curStop > start {
			if curStop >= stop { // around them
				copy(cur.data[start-curStart:], data)
				data = data[:0]
			} else { // its end under their start
				cur.data = cur.data[:start-curStart]
			}
		}
	}
	under, after := ar.split(rest, stop, base)
	for under != 0 {
		var i int32
		under, i = ar.popFirst(under)
		cur := &ar.nodes[i]
		curStart := off(cur.seq, base)
		curStop := curStart + int64(len(cur.data))
		switch {
		case curStop <= stop: // covered by them
			ar.release(i)
			h.held.n--
			a.pages--
			continue
		case curStart == start: // around them
			copy(cur.data, data)
			data = data[:0]
		default: // its start under their end
			cut := stop - curStart
			cur.data = cur.data[cut:]
			cur.seq += uint32(cut)
		}
		after = ar.merge(i, after) // it now starts at or after their end
	}
	if !hold || len(data) == 0 {
		h.held.root = ar.merge(before, after)
		return data
	}
	if stop > 1<<30 {
		a.farHeld++
	}
	// Hold the rest, cut into pages, between those before and after it.
	n := (len(data) + pageSize - 1) / pageSize
	buf := bytes.Clone(data)
	var run int32
	for j := range n {
		lo, hi := j*pageSize, min((j+1)*pageSize, len(buf))
		run = ar.merge(run, ar.alloc(page{seq: seq + uint32(lo), data: buf[lo:hi:hi], ref: ref, seen: ref.at, end: end && j == n-1}))
	}
	h.held.root = ar.merge(ar.merge(before, run), after)
	h.held.n += n
	a.pages += n
	return data
}

// chunk is a piece of a hand-over: a segment's bytes or a held page's.
type chunk struct {
	seq  uint32
	data []byte
	ref  frameRef
	end  bool
}

// handOverHeld hands over direction d's first held page and those
// contiguous to it, skipping the bytes missing before it.
func (a *Assembler) handOverHeld(s *stream, d kafka.Direction, flushing bool, ctx frameRef) uint32 {
	h := &s.half[d]
	var i int32
	h.held.root, i = a.arena.popFirst(h.held.root)
	p := a.arena.nodes[i].page
	a.arena.release(i)
	h.held.n--
	a.pages--
	return a.handOver(s, d, chunk{seq: p.seq, data: p.data, ref: p.ref, end: p.end}, flushing, ctx)
}

// handOver hands direction d the chunk lead and the held pages contiguous
// to it, and returns the sequence number after them. The bytes complete at
// ctx, the segment being added; when flushing, at the frames of the pages
// that brought them.
func (a *Assembler) handOver(s *stream, d kafka.Direction, lead chunk, flushing bool, ctx frameRef) uint32 {
	h := &s.half[d]
	a.chunks = append(a.chunks[:0], lead)
	skip := seqDiff(h.next, lead.seq)
	last := lead.seq + uint32(len(lead.data))
	n := len(lead.data)
	ar := &a.arena
	for h.held.root != 0 && ar.nodes[ar.first(h.held.root)].seq == last {
		var i int32
		h.held.root, i = ar.popFirst(h.held.root)
		p := &ar.nodes[i]
		a.chunks = append(a.chunks, chunk{seq: p.seq, data: p.data, ref: p.ref, end: p.end})
		last += uint32(len(p.data))
		n += len(p.data)
		ar.release(i) // the chunk keeps the bytes
		h.held.n--
		a.pages--
	}
	end := a.chunks[len(a.chunks)-1].end
	if h.finAhead && last == h.fin {
		end, h.finAhead = true, false // the data reached a FIN that came ahead of it
	}
	a.deliver(s, d, n, skip, end, flushing, ctx)
	clear(a.chunks) // the bytes of held pages
	if end {
		a.closeHalf(s, d)
	}
	return last
}

// deliver makes the Handler calls for the chunks of a hand-over: n bytes
// after skip lost.
func (a *Assembler) deliver(s *stream, d kafka.Direction, n, skip int, end, flushing bool, ctx frameRef) {
	s.nxt[d] += uint32(max(skip, 0) + n)
	if end && !s.ended[d] {
		s.ended[d] = true
		if s.rst[d] && !s.ended[1-d] {
			a.resets = append(a.resets, s)
		}
	}
	if n == 0 && skip == 0 {
		return
	}
	a.open(s)
	spans := a.spansOf(n, flushing, ctx)
	if skip != 0 && !s.conn.MidStream[d] || skip > 0 {
		a.stats.Gaps++
		if skip > 0 {
			a.stats.GapBytes += int64(skip)
		}
		a.h.Gap(&s.conn, d, skip, spans[0].At)
	}
	if n == 0 {
		return
	}
	data := a.chunks[0].data
	if n > len(data) {
		a.joined = a.joined[:0]
		for _, c := range a.chunks {
			a.joined = append(a.joined, c.data...)
		}
		data = a.joined
		if cap(a.joined) > 4<<20 {
			a.joined = nil // a large flush need not stay
		}
	}
	a.h.Data(&s.conn, d, data[:n], spans)
}

// spansOf maps the n bytes of the chunks to the frames that completed
// them. Outside a flush every byte became available with the segment
// being added (it filled the last hole before them). A flush hands over
// pages of earlier segments, each with its own frame; a byte is complete
// once every byte before it in the hand-over is, hence the running
// maximum over runs of bytes from one frame.
func (a *Assembler) spansOf(n int, flushing bool, ctx frameRef) []kafka.Span {
	a.spans = a.spans[:0]
	n = max(n, 1)
	if !flushing {
		a.spans = append(a.spans, ctx.span(n))
		return a.spans
	}
	if len(a.chunks) <= 1 {
		ref := ctx
		if len(a.chunks[0].data) > 0 {
			ref = a.chunks[0].ref
		}
		a.spans = append(a.spans, ref.span(n))
		return a.spans
	}
	var best kafka.Span
	for off := 0; off < n; {
		cur, _ := a.refAt(off)
		// Find where the run of bytes from this frame ends by galloping,
		// then bisecting.
		same := func(o int) bool { r, ok := a.refAt(o); return ok && r.file == cur.file && r.frame == cur.frame }
		lo, step, hi := off, 1, n
		for lo+step < n && same(lo+step) {
			lo += step
			step *= 2
		}
		if lo+step < n {
			hi = lo + step
		}
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; same(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		if sp := cur.span(hi); best.At.Frame == 0 || later(sp.At, best.At) {
			best = sp
		}
		best.End = hi
		a.spans = append(a.spans, best)
		off = hi
	}
	return a.spans
}

// refAt returns the frame of the chunk holding byte off of a hand-over.
func (a *Assembler) refAt(off int) (frameRef, bool) {
	at := 0
	for i := range a.chunks {
		if at += len(a.chunks[i].data); at > off {
			return a.chunks[i].ref, true
		}
	}
	return frameRef{}, false
}

// flushHole gives up the bytes missing before direction d's first held
// page, if the direction holds data beyond its next byte, and hands over
// that page and those contiguous to it.
func (a *Assembler) flushHole(s *stream, d kafka.Direction, ctx frameRef) {
	if s.removed {
		return
	}
	h := &s.half[d]
	seq := s.end[d]
	s.track(d, seq, false, 0, false, 0)
	if h.closed {
		return
	}
	if !h.synced {
		h.next, h.synced = seq, true
		return
	}
	if seqDiff(h.next, seq) > 0 && h.held.n > 0 {
		h.next = a.handOverHeld(s, d, true, ctx)
	}
}

// skipHole is a flush by time of direction d's first hole: it hands over
// the first held page and those contiguous to it, or, with none held,
// closes the direction.
func (a *Assembler) skipHole(s *stream, d kafka.Direction) {
	h := &s.half[d]
	if h.held.n == 0 {
		a.closeHalf(s, d)
		return
	}
	h.next = a.handOverHeld(s, d, true, a.arena.nodes[a.arena.first(h.held.root)].ref)
}

// expireHalf gives up the holes of direction d before pages captured
// before flushBefore, and closes the direction when nothing is held and
// the connection has been silent since idleBefore.
func (a *Assembler) expireHalf(s *stream, d kafka.Direction, flushBefore, idleBefore stamp) {
	h := &s.half[d]
	if h.closed {
		return
	}
	if h.held.n > 0 {
		ar := &a.arena
		earliest := ar.nodes[ar.last(h.held.root)].seen
		ar.eachBackward(h.held.root, func(p *page) {
			if earliest.before(p.seen) {
				p.seen = earliest
			} else {
				earliest = p.seen
			}
		})
		for h.held.n > 0 && ar.nodes[ar.first(h.held.root)].seen.before(flushBefore) {
			if a.skipHole(s, d); h.closed {
				return
			}
		}
	}
	if h.held.n == 0 && s.lastSeen.before(idleBefore) {
		a.closeHalf(s, d)
	}
}

// endAfterReset ends the direction of s that an RST did not end: an RST
// aborts the whole connection, and a new connection on the same 4-tuple
// must not land in this one. The data it holds out of order is handed
// over first, hole by hole.
func (a *Assembler) endAfterReset(s *stream, ctx frameRef) {
	for d := range kafka.Direction(2) {
		if s.ended[d] {
			continue
		}
		for try := 0; try < 16 && s.known[d] && after(s.end[d], s.nxt[d]); try++ {
			before := s.nxt[d]
			if a.flushHole(s, d, ctx); s.nxt[d] == before {
				break
			}
		}
		a.resetHalf(s, d, ctx)
	}
}

// resetHalf ends direction d at its next byte, as an RST there would.
func (a *Assembler) resetHalf(s *stream, d kafka.Direction, ctx frameRef) {
	if s.removed {
		return
	}
	h := &s.half[d]
	seq := s.nxt[d]
	s.track(d, seq, false, 0, false, 0)
	if h.closed {
		return
	}
	if !h.synced {
		h.next, h.synced = seq, true
	} else if seqDiff(h.next, seq) != 0 {
		return
	}
	h.next = a.handOver(s, d, chunk{seq: seq, ref: ctx, end: true}, false, ctx)
}

// tcpState follows a connection's handshake and close, to drop the
// segments its endpoints would: a SYN on an established connection, data
// after an RST, anything but ACKs after both FINs.
type tcpState struct {
	phase uint8
	dir   kafka.Direction // who opened (SYN sent) or closed first (FIN sent)
}

const (
	tcpClosed uint8 = iota
	tcpSynSent
	tcpEstablished
	tcpCloseWait
	tcpLastAck
	tcpReset
)

// check reports whether a segment in direction d is valid in the current
// state, and moves the state on. A connection seen without its handshake
// starts in the state its first segment implies.
func (t *tcpState) check(tcp *layers.TCP, d kafka.Direction) bool {
	if t.phase == tcpClosed && !(tcp.SYN && !tcp.ACK) {
		switch {
		case tcp.SYN && tcp.ACK:
			t.phase, t.dir = tcpSynSent, 1-d
		case tcp.FIN && !tcp.ACK:
			t.phase = tcpEstablished
		case tcp.FIN && tcp.ACK:
			t.phase, t.dir = tcpCloseWait, 1-d
		default:
			t.phase = tcpEstablished
		}
	}
	switch t.phase {
	case tcpClosed:
		if tcp.SYN && !tcp.ACK {
			t.phase, t.dir = tcpSynSent, d
			return true
		}
	case tcpSynSent:
		switch {
		case tcp.RST:
			t.phase = tcpReset
			return true
		case tcp.SYN && tcp.ACK && d != t.dir:
			t.phase = tcpEstablished
			return true
		case tcp.SYN && !tcp.ACK && d == t.dir: // a retransmitted SYN
			return true
		}
	case tcpEstablished:
		switch {
		case tcp.RST:
			t.phase = tcpReset
		case tcp.FIN:
			t.phase, t.dir = tcpCloseWait, d
		}
		return true
	case tcpCloseWait:
		switch {
		case tcp.RST:
			t.phase = tcpReset
			return true
		case tcp.FIN && tcp.ACK && d != t.dir:
			t.phase = tcpLastAck
			return true
		case tcp.ACK:
			return true
		}
	case tcpLastAck:
		switch {
		case tcp.RST:
			t.phase = tcpReset
			return true
		case tcp.ACK && d == t.dir:
			t.phase = tcpClosed
			return true
		}
	}
	return false
}
