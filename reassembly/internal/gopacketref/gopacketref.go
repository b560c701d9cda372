// Package gopacketref is the reassembler kidscope used before it owned one:
// a wrapper around gopacket's reassembly.Assembler. It is kept, unchanged
// in behaviour, only as the reference that package reassembly's
// differential fuzz test compares the hand-written assembler against.
package gopacketref

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	gpr "github.com/gopacket/gopacket/reassembly"

	"github.com/kidscope/kidscope/capture"
)

// Direction is one way of a connection.
type Direction uint8

const (
	ToBroker Direction = iota // client → broker
	ToClient                  // broker → client
)

func (d Direction) String() string {
	if d == ToBroker {
		return "to-broker"
	}
	return "to-client"
}

// Span says that the bytes of a chunk before End (counted from the chunk's
// start) were complete at the given frame: the frame whose arrival made
// them available in order.
type Span struct {
	End   int
	File  int
	Frame int64
	Time  time.Time
}

// Conn is one TCP connection between a client and a broker.
type Conn struct {
	ID     int // 1-based, in the order connections first carried data
	Client netip.AddrPort
	Broker netip.AddrPort
	// MidStream[d] is true when direction d started before the capture (no
	// SYN was captured for it): its first byte may sit inside a message.
	MidStream [2]bool
	// First is where the connection's first packet was captured.
	First Span
	// Closed says how the connection ended, when it did in the capture.
	Close CloseInfo
	// User is the consumer's per-connection state.
	User any

	opened bool
	syn    [2]bool
}

// CloseInfo records how a connection was closed.
type CloseInfo struct {
	Seen  bool      // a FIN or RST was captured
	Reset bool      // by RST
	By    Direction // the direction of the first FIN or RST (ToClient: the broker closed)
	At    Span
}

// Handler receives the connections' streams in capture order.
type Handler interface {
	// Data hands over the next in-order bytes of one direction; data and
	// spans are valid only during the call. The first call for a
	// connection comes after Open.
	Open(c *Conn)
	Data(c *Conn, d Direction, data []byte, spans []Span)
	// Gap reports lost bytes before the next Data of that direction
	// (lost < 0: an unknown amount).
	Gap(c *Conn, d Direction, lost int, at Span)
	// Closed is the last call for a connection: closed by FIN/RST, idle
	// too long, or the end of the capture.
	Closed(c *Conn, at Span)
}

// Options configure the assembler. Zero values take the defaults.
type Options struct {
	// Ports are the broker ports; a segment with neither port in the set
	// is ignored. Auto takes every TCP connection and guesses the broker
	// side (the SYN's receiver, or else the lower port).
	Ports Ports
	// MaxConnections caps tracked connections (default 100 000); new ones
	// over the cap are ignored and counted.
	MaxConnections int
	// MaxPagesTotal and MaxPagesPerConnection cap out-of-order data held
	// while waiting for missing segments, in pages of 1900 bytes (defaults
	// 65 536 and 4 096); at a cap the waiting data is flushed as a gap.
	MaxPagesTotal         int
	MaxPagesPerConnection int
	// FlushAfter is how long (capture time) out-of-order data waits for a
	// missing segment before it is given up as lost (default 3 s).
	FlushAfter time.Duration
	// IdleAfter closes connections silent this long (default 10 min).
	IdleAfter time.Duration
	// CallerFlushes stops Add from giving up waiting data and idle
	// connections by capture time: the caller calls Expire when its own
	// FlushClock says so. Assemblers that each see a share of a capture's
	// connections use one clock over the whole capture, so that they
	// flush at the same instants as a single assembler would.
	CallerFlushes bool

	// sharedLive counts the connections tracked by every assembler made
	// with options from one Split.
	sharedLive *atomic.Int64
}

// Split returns the options for n assemblers that share a capture's
// connections between them: MaxConnections counts the connections of all
// of them, and each gets an nth of the total buffer cap, so that together
// they hold what one would. (Connections do not hash evenly enough to
// split their cap too: one assembler would refuse connections while the
// total is under it. At the cap, which new connection an assembler
// refuses then depends on how far each has got.)
func (o Options) Split(n int) Options {
	o = o.withDefaults()
	if n > 1 {
		o.sharedLive = new(atomic.Int64)
		o.MaxPagesTotal = max(1, (o.MaxPagesTotal+n-1)/n)
	}
	return o
}

// FlushClock says after which packets an assembler gives up waiting data
// and idle connections: after the first packet a second of capture time or
// more past the last flush (or the first packet), counting only packets on
// a broker port, as Add does.
type FlushClock struct {
	ports Ports
	last  time.Time
}

// NewFlushClock returns a clock for an assembler with these broker ports.
func NewFlushClock(ports Ports) *FlushClock { return &FlushClock{ports: ports} }

// Due reports whether a flush is due right after a packet captured at t
// between these ports; when it is, the caller calls Expire(t) on its
// assemblers after adding the packet.
func (c *FlushClock) Due(srcPort, dstPort uint16, t time.Time) bool {
	if !c.ports.carries(srcPort, dstPort) {
		return false
	}
	if c.last.IsZero() {
		c.last = t
	}
	if t.Sub(c.last) < time.Second {
		return false
	}
	c.last = t
	return true
}

func (o Options) withDefaults() Options {
	if o.MaxConnections <= 0 {
		o.MaxConnections = 100000
	}
	if o.MaxPagesTotal <= 0 {
		o.MaxPagesTotal = 65536
	}
	if o.MaxPagesPerConnection <= 0 {
		o.MaxPagesPerConnection = 4096
	}
	if o.FlushAfter <= 0 {
		o.FlushAfter = 3 * time.Second
	}
	if o.IdleAfter <= 0 {
		o.IdleAfter = 10 * time.Minute
	}
	return o
}

// Stats are the assembler's counters.
type Stats struct {
	Connections        int64 // connections that carried data
	ConnectionsDropped int64 // connections ignored over MaxConnections
	Segments           int64 // segments handed to the assembler
	Ignored            int64 // segments on no broker port
	Rejected           int64 // segments the TCP state machine refused (after RST, …)
	Gaps               int64
	GapBytes           int64 // bytes lost in gaps of known size
}

// Add adds o's counters to s (the totals of several assemblers).
func (s *Stats) Add(o Stats) {
	s.Connections += o.Connections
	s.ConnectionsDropped += o.ConnectionsDropped
	s.Segments += o.Segments
	s.Ignored += o.Ignored
	s.Rejected += o.Rejected
	s.Gaps += o.Gaps
	s.GapBytes += o.GapBytes
}

// Assembler turns captured TCP segments into in-order byte streams.
type Assembler struct {
	opt    Options
	h      Handler
	asm    *gpr.Assembler
	stats  Stats
	nextID int
	live   int // connections tracked now
	// flushing is true while the assembler flushes by time: data handed
	// over then completed at the frames of its own pages, not the current.
	flushing bool
	clock    *FlushClock // nil with CallerFlushes
	// grouping is true during Expire and Finish: the Handler calls are
	// held, then made in an order that does not depend on gopacket's.
	grouping  bool
	held      []callback
	heldData  []byte
	heldSpans []Span
	slab      []frameCtx
	ctxKept   bool // gopacket's assembler kept the context of the packet being added
	spans     []Span

	// Segments made up here and fed to gopacket's assembler (see inject).
	injecting bool
	synth     layers.TCP
	synthHdr  [20]byte
	// flushFirst is set by Accept when it refused a segment because the
	// other direction of its connection must first give up bytes the
	// capture lost (see stream.mustFlush); Add then flushes it and feeds
	// the segment again. noRefuse is set for that second feeding when the
	// flush made no progress, so that a segment is never refused twice in
	// vain. flushAfter is set when the segment's own direction is to be
	// flushed once it is assembled.
	flushFirst, flushAfter *stream
	flushDir               Direction
	noRefuse               bool
	// resets are the connections a delivered RST ended in one direction:
	// Add ends the other direction too (see closeAfterReset).
	resets []*stream
}

// New returns an assembler that hands streams to h.
func New(opt Options, h Handler) *Assembler {
	a := &Assembler{opt: opt.withDefaults(), h: h}
	if !opt.CallerFlushes {
		a.clock = NewFlushClock(opt.Ports)
	}
	a.asm = gpr.NewAssembler(gpr.NewStreamPool(&factory{a: a}))
	a.asm.MaxBufferedPagesTotal = a.opt.MaxPagesTotal
	a.asm.MaxBufferedPagesPerConnection = a.opt.MaxPagesPerConnection
	return a
}

// Stats returns the counters so far.
func (a *Assembler) Stats() Stats { return a.stats }

// Add assembles one captured segment.
func (a *Assembler) Add(p *capture.Packet) {
	tcp := p.TCP
	if !a.opt.Ports.carries(uint16(tcp.SrcPort), uint16(tcp.DstPort)) {
		a.stats.Ignored++
		return
	}
	a.stats.Segments++
	ctx := a.newCtx(p)
	a.noRefuse = false
	for try := 0; ; try++ {
		a.flushFirst, a.flushAfter = nil, nil
		a.asm.AssembleWithContext(p.Network, tcp, ctx)
		if s, d := a.flushAfter, a.flushDir; s != nil {
			// The segment came out of order after its hole was
			// acknowledged: give up the holes acknowledged (see mustFlush).
			for try := 0; try < 16 && after(s.acked[d], s.nxt[d]) && after(s.end[d], s.nxt[d]); try++ {
				before := s.nxt[d]
				if a.flush(s, d, ctx); s.nxt[d] == before {
					break
				}
			}
		}
		s := a.flushFirst
		if s == nil {
			break
		}
		// Accept refused the segment: it acknowledges bytes missing before
		// the data held in the other direction, received by the peer but
		// not captured. Waiting for them until FlushAfter would hand that
		// data over after this segment's, out of capture order (responses
		// before their requests). Give them up now, then feed the segment
		// again.
		before := s.nxt[a.flushDir]
		a.flush(s, a.flushDir, ctx)
		a.noRefuse = s.nxt[a.flushDir] == before || try >= 16
	}
	for len(a.resets) > 0 {
		s := a.resets[0]
		a.resets = a.resets[1:]
		a.closeAfterReset(s, ctx)
	}
	a.doneCtx()
	// Give up on missing segments and idle connections by capture time,
	// checked once per second of it.
	if a.clock != nil && a.clock.Due(uint16(tcp.SrcPort), uint16(tcp.DstPort), p.Time) {
		a.Expire(p.Time)
	}
}

// Expire gives up waiting data and closes idle connections by the given
// time: a live capture calls it with the wall clock while no packet comes,
// and a caller with CallerFlushes when its FlushClock says so.
func (a *Assembler) Expire(now time.Time) {
	a.flushGrouped(func() {
		a.asm.FlushWithOptions(gpr.FlushOptions{T: now.Add(-a.opt.FlushAfter), TC: now.Add(-a.opt.IdleAfter)})
	})
}

// Finish hands over all data still waiting and closes every connection.
func (a *Assembler) Finish() { a.flushGrouped(func() { a.asm.FlushAll() }) }

// flushGrouped runs a flush of gopacket's over all connections with the
// Handler calls it makes held, then makes them in order.
func (a *Assembler) flushGrouped(flush func()) {
	a.flushing, a.grouping = true, true
	flush()
	a.flushing = false
	a.dispatch()
}

// Callbacks of a flush over all connections. gopacket's assembler visits
// the connections in the order of a Go map, a new one each run, so the
// Handler calls they make are held and then made connection by connection
// in the order of the packets that created the connections: the same on
// every run, and the same for assemblers that share a capture's
// connections (each makes its calls in that order, and a caller merging
// theirs by the connections' first frames gets one assembler's order).

type callbackKind uint8

const (
	callOpen callbackKind = iota
	callGap
	callData
	callClosed
)

type callback struct {
	s              *stream
	kind           callbackKind
	dir            Direction
	lost           int
	at             Span
	data0, data1   int // the data in Assembler.heldData
	spans0, spans1 int // the spans in Assembler.heldSpans
}

// call makes a Handler call, or during a grouped flush holds it (data and
// spans copied) for dispatch.
func (a *Assembler) call(c callback, data []byte, spans []Span) {
	if !a.grouping {
		a.make(&c, data, spans)
		return
	}
	c.data0 = len(a.heldData)
	a.heldData = append(a.heldData, data...)
	c.data1 = len(a.heldData)
	c.spans0 = len(a.heldSpans)
	a.heldSpans = append(a.heldSpans, spans...)
	c.spans1 = len(a.heldSpans)
	a.held = append(a.held, c)
}

// make makes one Handler call. A connection is numbered as it opens.
func (a *Assembler) make(c *callback, data []byte, spans []Span) {
	s := c.s
	switch c.kind {
	case callOpen:
		a.nextID++
		s.conn.ID = a.nextID
		a.h.Open(&s.conn)
	case callGap:
		a.h.Gap(&s.conn, c.dir, c.lost, c.at)
	case callData:
		a.h.Data(&s.conn, c.dir, data, spans)
	case callClosed:
		a.h.Closed(&s.conn, c.at)
	}
}

// dispatch makes the held callbacks, connection by connection.
func (a *Assembler) dispatch() {
	a.grouping = false
	held := a.held
	// Each stream is made by a packet of its own, so no two share their
	// first frame; the sort is stable, so a stream's callbacks keep their
	// order.
	slices.SortStableFunc(held, func(x, y callback) int {
		p, q := x.s, y.s
		if c := cmp.Compare(p.conn.First.File, q.conn.First.File); c != 0 {
			return c
		}
		return cmp.Compare(p.conn.First.Frame, q.conn.First.Frame)
	})
	for i := range held {
		c := &held[i]
		a.make(c, a.heldData[c.data0:c.data1], a.heldSpans[c.spans0:c.spans1])
	}
	clear(held) // the streams
	a.held, a.heldData, a.heldSpans = held[:0], a.heldData[:0], a.heldSpans[:0]
	if cap(a.heldData) > 4<<20 {
		a.heldData = nil // a large flush at the end need not stay
	}
}

// inject feeds gopacket's assembler a segment without payload made up for
// direction d of s: with rst, one that ends that direction; else an empty
// segment past the data held out of order. Accept lets it through unchecked.
func (a *Assembler) inject(s *stream, d Direction, seq uint32, rst bool, ctx *frameCtx) {
	h := a.synthHdr[:]
	clear(h)
	src, dst := s.conn.Client, s.conn.Broker
	if d == ToClient {
		src, dst = dst, src
	}
	binary.BigEndian.PutUint16(h[0:], src.Port())
	binary.BigEndian.PutUint16(h[2:], dst.Port())
	binary.BigEndian.PutUint32(h[4:], seq)
	h[12] = 5 << 4
	if rst {
		h[13] = 0x04
	}
	if err := a.synth.DecodeFromBytes(h, gopacket.NilDecodeFeedback); err != nil {
		return
	}
	a.injecting = true
	a.asm.AssembleWithContext(ipFlow(src.Addr(), dst.Addr()), &a.synth, ctx)
	a.injecting = false
}

// flush hands over the data direction d of s holds out of order, skipping
// the bytes missing before it, the way a flush by age does. gopacket's
// assembler flushes one connection only when it holds more pages than
// MaxBufferedPagesPerConnection on the arrival of a segment it must queue;
// so lower that cap to one for an empty segment queued past the data.
func (a *Assembler) flush(s *stream, d Direction, ctx *frameCtx) {
	limit := a.asm.MaxBufferedPagesPerConnection
	a.asm.MaxBufferedPagesPerConnection = 1
	a.flushing = true
	a.inject(s, d, s.end[d], false, ctx)
	a.flushing = false
	a.asm.MaxBufferedPagesPerConnection = limit
}

// closeAfterReset ends the direction of s that a delivered RST did not end.
// An RST aborts the whole connection, but gopacket's assembler ends only
// the direction that carried it: the connection would stay open until it
// is idle, and a new connection on the same 4-tuple would land in it and
// lose its data. An RST made up at the other direction's next sequence
// number ends that one too, after the data it holds out of order is handed
// over (gopacket's assembler would drop it).
func (a *Assembler) closeAfterReset(s *stream, ctx *frameCtx) {
	for d := range Direction(2) {
		if s.ended[d] {
			continue
		}
		for try := 0; try < 16 && s.known[d] && after(s.end[d], s.nxt[d]); try++ {
			before := s.nxt[d]
			if a.flush(s, d, ctx); s.nxt[d] == before {
				break
			}
		}
		a.inject(s, d, s.nxt[d], true, ctx)
	}
}

// frameCtx is the assembler context of one packet. The assembler keeps it
// with every page of out-of-order data and hands back only its CaptureInfo
// per byte offset, so the file and frame travel in CaptureInfo's
// InterfaceIndex (nothing after capture reads that field). It holds the
// time as numbers, not a time.Time (which points to its location), so that
// a slab of them is small and never scanned by the garbage collector.
type frameCtx struct {
	sec   int64
	nsec  int32
	frame int // file<<frameBits | frame
}

func (c *frameCtx) GetCaptureInfo() gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: time.Unix(c.sec, int64(c.nsec)).UTC(), InterfaceIndex: c.frame}
}

const frameBits = 40

// newCtx returns the context of packet p. Contexts come from slabs, so
// that a packet costs no allocation, and a slab is freed once no queued
// page points into it. A context is taken from its slab only when the
// assembler kept it (ctxKept, set by Accept for a segment it queues), so
// that in-order segments, nearly all of them, reuse one.
func (a *Assembler) newCtx(p *capture.Packet) *frameCtx {
	if len(a.slab) == 0 {
		a.slab = make([]frameCtx, 4096)
	}
	c := &a.slab[0]
	*c = frameCtx{sec: p.Time.Unix(), nsec: int32(p.Time.Nanosecond()), frame: p.File<<frameBits | int(p.Frame)}
	a.ctxKept = false
	return c
}

// doneCtx is called when the packet of the last newCtx is assembled.
func (a *Assembler) doneCtx() {
	if a.ctxKept {
		a.slab = a.slab[1:]
	}
}

func spanOf(ci gopacket.CaptureInfo, end int) Span {
	return Span{End: end, File: ci.InterfaceIndex >> frameBits, Frame: int64(ci.InterfaceIndex & (1<<frameBits - 1)), Time: ci.Timestamp}
}

// spansOf maps a scatter-gather's bytes to the frames that completed them.
// In normal assembly every byte handed over became available with the
// current packet (it filled the last hole before them). When flushing, each
// page brings its own frame; a byte is complete once every byte before it
// in the chunk is, hence the running maximum.
func (a *Assembler) spansOf(sg gpr.ScatterGather, n int, ac gpr.AssemblerContext) []Span {
	a.spans = a.spans[:0]
	if !a.flushing {
		a.spans = append(a.spans, spanOf(ac.GetCaptureInfo(), n))
		return a.spans
	}
	if sg.Stats().Chunks <= 1 {
		// A flush hands over pages of earlier packets: their own frame,
		// not ac's (which is a made-up segment's when flush did it).
		ci := sg.CaptureInfo(0)
		if ci.Timestamp.IsZero() {
			ci = ac.GetCaptureInfo()
		}
		a.spans = append(a.spans, spanOf(ci, n))
		return a.spans
	}
	var best Span
	for off := 0; off < n; {
		cur := sg.CaptureInfo(off)
		// Pages of one packet are contiguous: find where this one ends by
		// galloping, then bisecting.
		lo, step := off, 1
		hi := n
		for lo+step < n && sg.CaptureInfo(lo+step).InterfaceIndex == cur.InterfaceIndex {
			lo += step
			step *= 2
		}
		if lo+step < n {
			hi = lo + step
		}
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if sg.CaptureInfo(mid).InterfaceIndex == cur.InterfaceIndex {
				lo = mid
			} else {
				hi = mid
			}
		}
		if s := spanOf(cur, hi); best.Frame == 0 || later(s, best) {
			best = s
		}
		best.End = hi
		a.spans = append(a.spans, best)
		off = hi
	}
	return a.spans
}

// later orders frames in capture order: by number within one file, by
// time across files (merged inputs are in time order).
func later(x, y Span) bool {
	if x.File == y.File {
		return x.Frame > y.Frame
	}
	return x.Time.After(y.Time)
}

type factory struct{ a *Assembler }

func (f *factory) New(netFlow, tcpFlow gopacket.Flow, tcp *layers.TCP, ac gpr.AssemblerContext) gpr.Stream {
	a := f.a
	if !tcp.SYN && len(tcp.Payload) == 0 {
		// A bare ACK, FIN or RST starts no connection: after a connection
		// closed (and left the pool), its last ACK would otherwise open a
		// new one that catches a new connection reusing the 4-tuple, whose
		// SYN it then drops as a SYN on an established connection. A
		// connection seen mid-stream opens with its first data instead.
		return nil
	}
	src, dst := endpoints(netFlow, tcp)
	s := &stream{a: a, fsm: gpr.NewTCPSimpleFSM(gpr.TCPSimpleFSMOptions{SupportMissingEstablishment: true})}
	if !a.admit() {
		a.stats.ConnectionsDropped++
		s.dropped = true
		return s
	}
	a.live++
	// gopacket's "client to server" is the direction of the first packet
	// seen; ours is towards the broker port.
	firstToBroker := a.opt.Ports.brokerIsDst(tcp)
	s.firstDir = ToClient
	s.conn.Client, s.conn.Broker = dst, src
	if firstToBroker {
		s.firstDir = ToBroker
		s.conn.Client, s.conn.Broker = src, dst
	}
	s.conn.First = spanOf(ac.GetCaptureInfo(), 0)
	return s
}

// ipFlow is the network flow of packets from src to dst, as the capture
// reader builds it (endpoints of 4 bytes for IPv4, 16 for IPv6), for the
// segments made up by inject: rebuilt when needed rather than kept by each
// of 100,000 connections.
func ipFlow(src, dst netip.Addr) gopacket.Flow {
	if src.Is4() {
		a, b := src.As4(), dst.As4()
		return gopacket.NewFlow(layers.EndpointIPv4, a[:], b[:])
	}
	a, b := src.As16(), dst.As16()
	return gopacket.NewFlow(layers.EndpointIPv6, a[:], b[:])
}

// admit reports whether a new connection is within MaxConnections, and
// counts it when it is.
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

func endpoints(netFlow gopacket.Flow, tcp *layers.TCP) (src, dst netip.AddrPort) {
	s, _ := netip.AddrFromSlice(netFlow.Src().Raw())
	d, _ := netip.AddrFromSlice(netFlow.Dst().Raw())
	return netip.AddrPortFrom(s.Unmap(), uint16(tcp.SrcPort)), netip.AddrPortFrom(d.Unmap(), uint16(tcp.DstPort))
}

type stream struct {
	a        *Assembler
	fsm      *gpr.TCPSimpleFSM
	conn     Conn
	firstDir Direction
	dropped  bool
	last     Span // the last packet accepted

	// Per direction: nxt is the next sequence number gopacket's assembler
	// expects (kept up to date from Accept and the data handed over), end
	// the end of the furthest data seen, acked the furthest acknowledgment
	// by the peer. Data beyond nxt is held out of order; acked beyond nxt
	// means the peer has bytes the capture has not shown.
	nxt, end, acked [2]uint32
	known, hasAck   [2]bool
	// ended says that a FIN or RST ended the direction, rst that an RST
	// came where the assembler takes it as the end.
	ended, rst [2]bool
}

// after reports whether sequence number x lies after y, modulo 2^32.
func after(x, y uint32) bool { return int32(x-y) > 0 }

// mustFlush decides, for a segment in direction d, whether a direction of
// the connection must give up the bytes it waits for, because the peer
// acknowledged them: it received them and the capture lost them (a
// retransmission is not acknowledged before it arrives). It returns the
// direction, and before=true when that must happen before the segment is
// assembled: a segment that acknowledges bytes missing in the other
// direction, which holds data out of order, must not be decoded before
// that data (a response before its request). Otherwise, for a segment
// that arrives out of order in its own direction after its hole was
// acknowledged, the flush follows its assembly, so it is handed over with
// its own frame rather than when the next segment comes.
func (s *stream) mustFlush(tcp *layers.TCP, d Direction) (x Direction, before, ok bool) {
	x = 1 - d
	if tcp.ACK && s.known[x] && after(s.end[x], s.nxt[x]) && after(tcp.Ack, s.nxt[x]) {
		return x, true, true
	}
	if s.known[d] && s.hasAck[d] && after(tcp.Seq, s.nxt[d]) && after(s.acked[d], s.nxt[d]) {
		return d, false, true
	}
	return 0, false, false
}

func (s *stream) dir(d gpr.TCPFlowDirection) Direction {
	if d == gpr.TCPDirClientToServer {
		return s.firstDir
	}
	return 1 - s.firstDir
}

func (s *stream) Accept(tcp *layers.TCP, ci gopacket.CaptureInfo, d gpr.TCPFlowDirection, nextSeq gpr.Sequence, start *bool, _ gpr.AssemblerContext) bool {
	if s.dropped {
		return false
	}
	dir := s.dir(d)
	if s.a.injecting {
		s.track(tcp, dir, nextSeq)
		*start = true
		return true
	}
	if x, before, ok := s.mustFlush(tcp, dir); ok && before && !s.a.noRefuse {
		s.a.flushFirst, s.a.flushDir = s, x
		return false
	} else if ok && !before {
		s.a.flushAfter, s.a.flushDir = s, x
	}
	if !s.fsm.CheckState(tcp, d) {
		s.a.stats.Rejected++
		return false
	}
	if tcp.RST && (nextSeq < 0 || uint32(nextSeq) == tcp.Seq) {
		s.rst[dir] = true // at the next sequence number: the assembler takes it
	}
	s.track(tcp, dir, nextSeq)
	s.last = spanOf(ci, 0)
	if tcp.SYN {
		s.conn.syn[dir] = true
	}
	if (tcp.FIN || tcp.RST) && !s.conn.Close.Seen {
		s.conn.Close = CloseInfo{Seen: true, Reset: tcp.RST, By: dir, At: spanOf(ci, 0)}
	}
	// gopacket's assembler keeps the segment's context with its bytes when
	// it queues them, past a hole; otherwise it is done with the context
	// when the segment is (see Assembler.newCtx).
	// (The test is gopacket's own: its sequence arithmetic is not after's.)
	if len(tcp.Payload) > 0 && nextSeq >= 0 && nextSeq.Difference(gpr.Sequence(tcp.Seq)) > 0 {
		s.a.ctxKept = true
	}
	// Kafka connections are long-lived: a capture that starts in the
	// middle of one is the norm, so data flows without a handshake too.
	*start = true
	return true
}

// track follows the sequence numbers of an accepted segment (see nxt).
func (s *stream) track(tcp *layers.TCP, dir Direction, nextSeq gpr.Sequence) {
	switch {
	case nextSeq >= 0:
		s.nxt[dir] = uint32(nextSeq)
	case tcp.SYN:
		s.nxt[dir] = tcp.Seq + 1 // where the assembler starts after a SYN
	default:
		s.nxt[dir] = tcp.Seq // Accept forces a start at the first segment
	}
	if !s.known[dir] {
		s.end[dir], s.known[dir] = s.nxt[dir], true
	}
	// Only data can be held out of order: a bare segment's sequence number
	// (a stray ACK) moves nothing.
	if end := tcp.Seq + uint32(len(tcp.Payload)); len(tcp.Payload) > 0 && after(end, s.end[dir]) {
		s.end[dir] = end
	}
	if tcp.ACK && (!s.hasAck[1-dir] || after(tcp.Ack, s.acked[1-dir])) {
		s.acked[1-dir], s.hasAck[1-dir] = tcp.Ack, true
	}
}

func (s *stream) open() {
	if s.conn.opened {
		return
	}
	s.conn.opened = true
	s.a.stats.Connections++
	s.conn.MidStream = [2]bool{!s.conn.syn[ToBroker], !s.conn.syn[ToClient]}
	s.a.call(callback{s: s, kind: callOpen}, nil, nil)
}

func (s *stream) ReassembledSG(sg gpr.ScatterGather, ac gpr.AssemblerContext) {
	n, _ := sg.Lengths()
	d, _, end, skip := sg.Info()
	dir := s.dir(d)
	s.nxt[dir] += uint32(max(skip, 0) + n)
	if end && !s.ended[dir] {
		s.ended[dir] = true
		if s.rst[dir] && !s.ended[1-dir] {
			s.a.resets = append(s.a.resets, s)
		}
	}
	if n == 0 && skip == 0 {
		return
	}
	s.open()
	spans := s.a.spansOf(sg, max(n, 1), ac)
	if skip != 0 && !s.conn.MidStream[dir] || skip > 0 {
		s.a.stats.Gaps++
		if skip > 0 {
			s.a.stats.GapBytes += int64(skip)
		}
		s.a.call(callback{s: s, kind: callGap, dir: dir, lost: skip, at: spans[0]}, nil, nil)
	}
	if n > 0 {
		s.a.call(callback{s: s, kind: callData, dir: dir}, sg.Fetch(n), spans)
	}
}

func (s *stream) ReassemblyComplete(gpr.AssemblerContext) bool {
	if !s.dropped {
		s.a.live--
		if s.a.opt.sharedLive != nil {
			s.a.opt.sharedLive.Add(-1)
		}
	}
	if s.conn.opened {
		s.a.call(callback{s: s, kind: callClosed, at: s.last}, nil, nil)
	}
	return true
}
