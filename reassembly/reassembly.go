package reassembly

import (
	"sync/atomic"
	"time"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/kafka"
)

// Conn is one TCP connection between a client and a broker.
type Conn struct {
	kafka.Conn
	// Close says how the connection ended, when it did in the capture.
	Close kafka.Close
	// User is the consumer's per-connection state.
	User any
	// Abandoned is set by the Handler when the connection carries
	// something else than what it decodes. A new connection may then take
	// the 4-tuple without a close: at a SYN, or at bytes whose sequence
	// number lies too far from the stream's to belong to it (see
	// Stats.Reused).
	Abandoned bool
}

// Handler receives the connections' streams in capture order.
type Handler interface {
	// Data hands over the next in-order bytes of one direction; data and
	// spans are valid only during the call. The first call for a
	// connection comes after Open.
	Open(c *Conn)
	Data(c *Conn, d kafka.Direction, data []byte, spans []kafka.Span)
	// Gap reports lost bytes before the next Data of that direction
	// (lost < 0: an unknown amount).
	Gap(c *Conn, d kafka.Direction, lost int, at kafka.FrameRef)
	// Closed is the last call for a connection: closed by FIN/RST, idle
	// too long, or the end of the capture.
	Closed(c *Conn, at kafka.FrameRef)
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
	// noReuse keeps a connection on its 4-tuple until it closes, as the
	// gopacket-based assembler did (for the differential test).
	noReuse bool
}

// Split returns the options for n assemblers that share a capture's
// connections between them: MaxConnections counts the connections of all
// of them, and each gets an nth of the total buffer cap, so that together
// they hold what one would. (Connections do not hash evenly enough to
// split their cap too: one assembler would refuse connections while the
// total is under it. At the cap, which new connection an assembler
// refuses then depends on how far each has got: a Gate in front of them
// decides that in capture order instead, and leaves this cap as a bound
// that is not reached.)
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
	Segments           int64 // segments on a broker port
	Ignored            int64 // segments on no broker port
	Rejected           int64 // segments the TCP state machine refused (after RST, …)
	Gaps               int64
	GapBytes           int64 // bytes lost in gaps of known size
	// Reused counts connections ended, without a close, by a new one on
	// their 4-tuple: a SYN on a connection that was closing, idle for
	// FlushAfter or Abandoned, or bytes at a sequence number far from an
	// idle or Abandoned connection's.
	Reused int64
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
	s.Reused += o.Reused
}

// Assembler turns captured TCP segments into in-order byte streams.
type Assembler struct {
	opt   Options
	h     Handler
	stats Stats
	clock *FlushClock // nil with CallerFlushes

	conns  map[[2]uint64]*stream // IPv4 connections
	conns6 map[wideKey]*stream   // IPv6 connections
	// byFile lists the tracked connections of each input file in the
	// order of their first frames: flushes over all connections visit
	// them in that order, the same on every run and for assemblers that
	// share a capture.
	byFile []streamList
	nextID int
	live   int // connections tracked now, dropped ones aside
	pages  int // out-of-order pages held by all connections
	arena  arena
	// farHeld counts segments held ending more than a quarter of the
	// sequence space after next. The pages are ordered by their distance
	// from next; gopacket, and the assembler that copied it, placed a
	// segment by comparing it with each page by seqDiff, which beyond a
	// quarter of the space is no order: there the two may place it
	// differently, and the differential test stops comparing.
	farHeld int
	// quietSince is no later than any tracked connection's last segment
	// (lastSeen only grows, and new connections start at the time of
	// their first), so that Expire can tell without a look at each
	// connection that none is idle yet.
	quietSince stamp

	// resets are connections an RST ended in one direction during Add:
	// Add then ends the other direction too (see endAfterReset).
	resets []*stream

	// Scratch space for one hand-over.
	chunks []chunk
	spans  []kafka.Span
	joined []byte
}

// New returns an assembler that hands streams to h.
func New(opt Options, h Handler) *Assembler {
	a := &Assembler{opt: opt.withDefaults(), h: h, conns: make(map[[2]uint64]*stream), conns6: make(map[wideKey]*stream)}
	if !opt.CallerFlushes {
		a.clock = NewFlushClock(opt.Ports)
	}
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
	ref := frameRef{file: p.File, frame: p.Frame, at: stampOf(p.Time)}
	a.segment(p, ref)
	for i := 0; i < len(a.resets); i++ {
		a.endAfterReset(a.resets[i], ref)
		a.resets[i] = nil
	}
	a.resets = a.resets[:0]
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
	flushBefore, idleBefore := stampOf(now.Add(-a.opt.FlushAfter)), stampOf(now.Add(-a.opt.IdleAfter))
	if a.pages == 0 && !a.quietSince.before(idleBefore) {
		return // nothing held to give up, and no connection idle
	}
	quiet := stampOf(now)
	a.eachStream(func(s *stream) {
		for _, d := range s.flushOrder() {
			a.expireHalf(s, d, flushBefore, idleBefore)
		}
		if !s.removed && s.lastSeen.before(quiet) {
			quiet = s.lastSeen
		}
	})
	a.quietSince = quiet
}

// Finish hands over all data still waiting and closes every connection.
func (a *Assembler) Finish() {
	a.eachStream(func(s *stream) {
		for _, d := range s.flushOrder() {
			for !s.half[d].closed {
				a.skipHole(s, d)
			}
		}
	})
}
