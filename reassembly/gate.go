package reassembly

import (
	"time"

	"github.com/kidscope/kidscope/capture"

	"github.com/gopacket/gopacket"
)

// Gate admits connections under MaxConnections in capture order, before
// the segments are shared among assemblers: which connections are
// analysed then depends on the capture alone, not on how many assemblers
// there are or how far each has got. It follows each 4-tuple from the
// first segment that would open a connection (a SYN, or data) until an
// RST, a FIN each way, or silence for IdleAfter and FlushAfter together,
// and counts those at once against the cap. Over the cap, a 4-tuple's
// segments are kept from the assemblers until it ends the same way, and
// it counts once in ConnectionsDropped.
//
// An assembler behind a gate may keep a connection a little after the
// gate let it go (its FIN came ahead of missing bytes); it is made with
// Options.Gated, which gives it twice the cap as a bound of its own.
type Gate struct {
	max     int
	idle    time.Duration
	ports   Ports
	expired stamp // when Admit last let go of silent 4-tuples

	keys  map[[2]uint64]int32
	keys6 map[wideKey]int32
	// entries[0] is unused: index 0 is none. The 4-tuples followed are
	// in two lists, oldest segment first: admitted ones and dropped
	// ones.
	entries []gateEntry
	free    []int32
	lists   [2]gateList
	// The entries of the last two segments' flows: segments of one
	// connection mostly come in runs, both ways, and a flow is compared
	// quicker than a key is made.
	recent   [2]recentFlow
	dropped  int64
	segments int64 // segments kept out
}

type recentFlow struct {
	network  gopacket.Flow
	src, dst uint16
	side     uint8
	entry    int32
}

type gateList struct {
	head, tail int32
	n          int
}

type gateEntry struct {
	key        connKey
	last       stamp
	prev, next int32
	fin        [2]bool // a FIN from the key's endpoint
	dropped    bool
}

// NewGate returns a gate for assemblers with these options.
func NewGate(opt Options) *Gate {
	opt = opt.withDefaults()
	return &Gate{max: opt.MaxConnections, idle: opt.IdleAfter + opt.FlushAfter + time.Second, ports: opt.Ports,
		keys: make(map[[2]uint64]int32), keys6: make(map[wideKey]int32),
		entries: make([]gateEntry, 1)}
}

// Gated returns the options for an assembler behind a Gate.
func (o Options) Gated() Options {
	o = o.withDefaults()
	o.MaxConnections *= 2
	return o
}

// Stats returns the connections the gate kept out, and their segments,
// to add to the assemblers' counters.
func (g *Gate) Stats() Stats {
	return Stats{ConnectionsDropped: g.dropped, Segments: g.segments}
}

// AdmitTCP is Admit for a packet whose TCP layer is decoded.
func (g *Gate) AdmitTCP(p *capture.Packet) bool {
	t := p.TCP
	var flags byte
	if t.FIN {
		flags |= flagFIN
	}
	if t.SYN {
		flags |= flagSYN
	}
	if t.RST {
		flags |= flagRST
	}
	return g.admitAt(&p.Network, uint16(t.SrcPort), uint16(t.DstPort), flags, len(t.Payload), p.Time)
}

// TCP flags as the fixed header carries them.
const (
	flagFIN = 1
	flagSYN = 2
	flagRST = 4
)

// Admit reports whether a segment goes to the assemblers: flags are the
// TCP header's flags byte, n the payload's length. Once a second of
// capture time, it first lets go of 4-tuples silent too long.
func (g *Gate) Admit(network *gopacket.Flow, src, dst uint16, flags byte, n int, t time.Time) bool {
	return g.admitAt(network, src, dst, flags, n, t)
}

func (g *Gate) admitAt(network *gopacket.Flow, src, dst uint16, flags byte, n int, t time.Time) bool {
	if !g.ports.carries(src, dst) {
		return true // the assemblers ignore it and count it
	}
	// Room made by time is made before the segment is looked at.
	at := stampOf(t)
	if g.expired == (stamp{}) {
		g.expired = at
	}
	if d := at.sec - g.expired.sec; d > 1 || d == 1 && at.nsec >= g.expired.nsec {
		g.expired = at
		g.Expire(t)
	}
	return g.admit(network, src, dst, flags, n, at)
}

func (g *Gate) admit(network *gopacket.Flow, src, dst uint16, flags byte, n int, at stamp) bool {
	var (
		i    int32
		side uint8
	)
	if r := &g.recent[0]; r.entry != 0 && r.src == src && r.dst == dst && r.network == *network {
		i, side = r.entry, r.side
	} else if r := &g.recent[1]; r.entry != 0 && r.src == src && r.dst == dst && r.network == *network {
		i, side = r.entry, r.side
	} else {
		var k connKey
		k, side = keyOf(network, src, dst)
		if k.isV6 {
			i = g.keys6[k.v6]
		} else {
			i = g.keys[k.v4]
		}
		if i == 0 {
			if flags&flagSYN == 0 && n == 0 {
				return true // opens no connection (see Assembler.segment)
			}
			i = g.add(k, at)
		}
		g.recent[1] = g.recent[0]
		g.recent[0] = recentFlow{network: *network, src: src, dst: dst, side: side, entry: i}
	}
	if e := &g.entries[i]; e.last.sec != at.sec {
		// Kept in the order of their last segments to the second, which
		// is as fine as Expire looks.
		l := &g.lists[b2i(e.dropped)]
		l.unlink(g.entries, i)
		e.last = at
		l.push(g.entries, i)
	} else {
		e.last = at
	}
	e := &g.entries[i]
	pass := !e.dropped
	if !pass {
		g.segments++
	}
	switch {
	case flags&flagRST != 0:
		g.remove(i)
	case flags&flagFIN != 0:
		e.fin[side] = true
		if e.fin[1-side] {
			g.remove(i)
		}
	}
	return pass
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *Gate) add(k connKey, at stamp) int32 {
	e := gateEntry{key: k, last: at, dropped: g.lists[0].n >= g.max}
	if e.dropped {
		g.dropped++
		if g.lists[1].n >= g.max {
			// Dropped 4-tuples are remembered only up to the cap too: the
			// oldest is forgotten, and counts again if it comes back.
			g.remove(g.lists[1].head)
		}
	}
	var i int32
	if n := len(g.free); n > 0 {
		i = g.free[n-1]
		g.free = g.free[:n-1]
		g.entries[i] = e
	} else {
		g.entries = append(g.entries, e)
		i = int32(len(g.entries) - 1)
	}
	if k.isV6 {
		g.keys6[k.v6] = i
	} else {
		g.keys[k.v4] = i
	}
	g.lists[b2i(e.dropped)].push(g.entries, i)
	return i
}

func (g *Gate) remove(i int32) {
	e := &g.entries[i]
	g.lists[b2i(e.dropped)].unlink(g.entries, i)
	if e.key.isV6 {
		delete(g.keys6, e.key.v6)
	} else {
		delete(g.keys, e.key.v4)
	}
	*e = gateEntry{}
	g.free = append(g.free, i)
	for j := range g.recent {
		if g.recent[j].entry == i {
			g.recent[j].entry = 0
		}
	}
}

// Expire lets go of the 4-tuples silent since before now less IdleAfter
// and FlushAfter.
func (g *Gate) Expire(now time.Time) {
	before := stampOf(now.Add(-g.idle))
	for l := range g.lists {
		for h := g.lists[l].head; h != 0 && g.entries[h].last.before(before); h = g.lists[l].head {
			g.remove(h)
		}
	}
}

func (l *gateList) push(es []gateEntry, i int32) {
	es[i].prev, es[i].next = l.tail, 0
	if l.tail == 0 {
		l.head = i
	} else {
		es[l.tail].next = i
	}
	l.tail = i
	l.n++
}

func (l *gateList) unlink(es []gateEntry, i int32) {
	e := &es[i]
	if e.prev == 0 {
		l.head = e.next
	} else {
		es[e.prev].next = e.next
	}
	if e.next == 0 {
		l.tail = e.prev
	} else {
		es[e.next].prev = e.prev
	}
	e.prev, e.next = 0, 0
	l.n--
}
