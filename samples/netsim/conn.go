package netsim

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// Sides of a connection, as array indexes.
const (
	client = 0
	server = 1
)

func sideOf(fromClient bool) int {
	if fromClient {
		return client
	}
	return server
}

// Conn is one TCP connection of a Capture. Its methods append frames to the
// capture, so calls on several connections interleave their frames.
type Conn struct {
	c     *Capture
	id    int
	ep    [2]netip.AddrPort // client, server
	mac   [2][6]byte
	iface int
	link  Link
	v6    bool
	ts    bool // TCP timestamps option on
	mss   int

	isn [2]uint32
	nxt [2]uint32 // next sequence number each side sends
	// rcv is how far the peer has received each side's bytes in order: the
	// ACK number the peer sends.
	rcv [2]uint32
	// unacked counts each side's segments the peer has received in order
	// and not acknowledged yet.
	unacked  [2]int
	ipid     [2]uint16
	tsBase   [2]uint32 // each side's TCP timestamp clock at Options.Start
	tsRecent [2]uint32 // the last TSval each side received from the other
	flow     [2]uint32 // IPv6 flow label of each direction
	closed   bool
}

// Client is the connection's connecting endpoint.
func (cn *Conn) Client() netip.AddrPort { return cn.ep[client] }

// Server is the connection's listening endpoint.
func (cn *Conn) Server() netip.AddrPort { return cn.ep[server] }

// SegOpt bends how one Send cuts and writes its segments. Segment indexes
// are 0-based, over the segments after SplitAt and MSS cutting.
type SegOpt struct {
	kind segKind
	i, n int
	offs []int
}

type segKind int

const (
	kSplit segKind = iota
	kReorder
	kRetransmit
	kOverlap
	kLose
	kSnapCut
	kIPv4Length
	kCaplenOverLen
)

// SplitAt cuts the message at these byte offsets; every piece is then cut
// into MSS-sized segments. Offsets 0 and len(data) are no cuts.
func SplitAt(offsets ...int) SegOpt {
	return SegOpt{kind: kSplit, offs: slices.Clone(offsets)}
}

// Reorder swaps segments i and j in capture order: the receiver gets the
// later one early, answers with a duplicate ACK carrying a SACK block, and
// acknowledges at once when the hole fills.
func Reorder(i, j int) SegOpt { return SegOpt{kind: kReorder, i: i, n: j} }

// Retransmit sends segment i once more after the message's other segments
// (the receiver answers the duplicate with a D-SACK). With Lose(i) the
// original is lost on the wire and the retransmission fills the hole.
func Retransmit(i int) SegOpt { return SegOpt{kind: kRetransmit, i: i} }

// Overlap makes segment i start n bytes early, repeating the last n bytes
// before it (as a retransmission after repacketisation does). n must not
// exceed the segment's offset in the message.
func Overlap(i, n int) SegOpt { return SegOpt{kind: kOverlap, i: i, n: n} }

// Lose keeps segment i out of the capture. Unless it is also retransmitted,
// the receiver is taken to have received it (the capture dropped it), so
// later ACKs cover the hole.
func Lose(i int) SegOpt { return SegOpt{kind: kLose, i: i} }

// SnapCut captures only the first n bytes of segment i's TCP payload: the
// frame's captured length is shorter than its length on the wire. It cuts
// the segment's first transmission; a retransmission is captured whole.
func SnapCut(i, n int) SegOpt { return SegOpt{kind: kSnapCut, i: i, n: n} }

// IPv4Length writes total as segment i's IPv4 total length instead of the
// real one, as a capture on a broker host shows its TSO/GSO sends (0: the
// NIC fills it in later) or GRO/LRO merges (a length over the frame). It
// bends the segment's first transmission; IPv4 only.
func IPv4Length(i, total int) SegOpt { return SegOpt{kind: kIPv4Length, i: i, n: total} }

// CaplenOverLen makes segment i's record state an original length n bytes
// shorter than the bytes it holds (a captured length over the original
// length, as some converters write). It bends the segment's first
// transmission; pcap formats only (pcapgo's pcapng writer refuses such
// records).
func CaplenOverLen(i, n int) SegOpt { return SegOpt{kind: kCaplenOverLen, i: i, n: n} }

type span struct{ start, end int }

// addSpan inserts s into sorted disjoint spans, merging touching ones.
func addSpan(spans []span, s span) []span {
	out := make([]span, 0, len(spans)+1)
	for _, x := range spans {
		switch {
		case x.end < s.start:
			out = append(out, x)
		case s.end < x.start:
			out = append(out, s)
			s = x
		default:
			s = span{min(s.start, x.start), max(s.end, x.end)}
		}
	}
	return append(out, s)
}

// segment cuts a message of n bytes at the SplitAt offsets and then at
// every MSS bytes.
func (cn *Conn) segment(n int, opts []SegOpt) []span {
	cuts := []int{}
	for _, o := range opts {
		if o.kind != kSplit {
			continue
		}
		for _, off := range o.offs {
			if off < 0 || off > n {
				panic(fmt.Sprintf("netsim: SplitAt offset %d outside the %d-byte message", off, n))
			}
			if off > 0 && off < n {
				cuts = append(cuts, off)
			}
		}
	}
	cuts = append(cuts, n)
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var segs []span
	start := 0
	for _, end := range cuts {
		for ; start < end; start += cn.mss {
			segs = append(segs, span{start, min(start+cn.mss, end)})
		}
		start = end
	}
	return segs
}

// tx is one transmission of (part of) a message.
type tx struct {
	start, end int
	write      bool // captured
	deliver    bool // received by the peer
	cut        int  // payload bytes captured, -1 for all
	ipLen      int  // the IPv4 total length to write, -1 for the real one
	short      int  // the record's original length is this much short
}

// Send writes data as one message (one write on the socket) from the client
// or the server: full segments of MSS bytes, PSH on the last one, the
// peer's ACKs between them. It returns the 1-based frame number at which the
// whole message has been captured: the frame of its last segment, or, when
// segments are reordered or retransmitted, the one that filled the last
// hole. It returns 0 when some byte of the message is never captured (Lose
// without Retransmit, SnapCut, Options.Snaplen) and when data is empty.
func (cn *Conn) Send(fromClient bool, data []byte, opts ...SegOpt) int {
	if len(data) == 0 {
		if cn.closed {
			panic("netsim: Send on a closed connection")
		}
		return 0
	}
	return cn.send(fromClient, data, []int{len(data)}, opts)[0]
}

// SendParts writes several messages in one write on the socket, so that a
// segment can hold the end of one and the start of the next (as a client
// that pipelines requests, or Nagle's algorithm, makes them). SegOpts apply
// to the whole write, with offsets counted from the start of the first part.
// It returns, for each part, the frame at which the bytes from the start of
// the write to the end of that part have all been captured (0 when some of
// them never are, and for an empty part).
func (cn *Conn) SendParts(fromClient bool, parts [][]byte, opts ...SegOpt) []int {
	var data []byte
	ends := make([]int, len(parts))
	for i, p := range parts {
		data = append(data, p...)
		ends[i] = len(data)
	}
	if len(data) == 0 {
		if cn.closed {
			panic("netsim: Send on a closed connection")
		}
		return make([]int, len(parts))
	}
	done := cn.send(fromClient, data, ends, opts)
	for i, p := range parts {
		if len(p) == 0 {
			done[i] = 0
		}
	}
	return done
}

// send writes data as one write and returns, for each offset in ends, the
// frame at which data[:end] has all been captured.
func (cn *Conn) send(fromClient bool, data []byte, ends []int, opts []SegOpt) []int {
	if cn.closed {
		panic("netsim: Send on a closed connection")
	}
	from := sideOf(fromClient)
	to := 1 - from
	segs := cn.segment(len(data), opts)
	n := len(segs)

	starts := make([]int, n)
	lost := make([]bool, n)
	cut := make([]int, n)
	ipLen := make([]int, n)
	short := make([]int, n)
	order := make([]int, n)
	for i, s := range segs {
		starts[i] = s.start
		cut[i] = -1
		ipLen[i] = -1
		order[i] = i
	}
	var retrans []int
	retransmitted := make([]bool, n)
	check := func(what string, i int) {
		if i < 0 || i >= n {
			panic(fmt.Sprintf("netsim: %s(%d): the message has %d segments", what, i, n))
		}
	}
	for _, o := range opts {
		switch o.kind {
		case kSplit:
		case kReorder:
			check("Reorder", o.i)
			check("Reorder", o.n)
			pi, pj := slices.Index(order, o.i), slices.Index(order, o.n)
			order[pi], order[pj] = order[pj], order[pi]
		case kRetransmit:
			check("Retransmit", o.i)
			retrans = append(retrans, o.i)
			retransmitted[o.i] = true
		case kOverlap:
			check("Overlap", o.i)
			if o.n < 1 || o.n > segs[o.i].start {
				panic(fmt.Sprintf("netsim: Overlap(%d, %d): segment starts at offset %d", o.i, o.n, segs[o.i].start))
			}
			starts[o.i] = segs[o.i].start - o.n
		case kLose:
			check("Lose", o.i)
			lost[o.i] = true
		case kSnapCut:
			check("SnapCut", o.i)
			if o.n < 0 {
				panic(fmt.Sprintf("netsim: SnapCut(%d, %d): negative length", o.i, o.n))
			}
			cut[o.i] = o.n
		case kIPv4Length:
			check("IPv4Length", o.i)
			if cn.v6 || o.n < 0 || o.n > 0xffff {
				panic(fmt.Sprintf("netsim: IPv4Length(%d, %d): needs IPv4 and a 16-bit length", o.i, o.n))
			}
			ipLen[o.i] = o.n
		case kCaplenOverLen:
			check("CaplenOverLen", o.i)
			if cn.c.opt.Format == PcapNG || o.n < 1 {
				panic(fmt.Sprintf("netsim: CaplenOverLen(%d, %d): needs a pcap format and n > 0", o.i, o.n))
			}
			short[o.i] = o.n
		default:
			panic("netsim: zero SegOpt")
		}
	}
	txs := make([]tx, 0, n+len(retrans))
	for _, i := range order {
		txs = append(txs, tx{starts[i], segs[i].end, !lost[i], !(lost[i] && retransmitted[i]), cut[i], ipLen[i], short[i]})
	}
	for _, i := range retrans {
		txs = append(txs, tx{segs[i].start, segs[i].end, true, true, -1, -1, 0})
	}

	base := cn.nxt[from]
	abs := func(s span) [2]uint32 { return [2]uint32{base + uint32(s.start), base + uint32(s.end)} }
	var covered, ooo []span // captured bytes; bytes the peer holds out of order
	rcvd := 0               // bytes the peer has in order
	done := make([]int, len(ends))
	for _, t := range txs {
		fl := fACK
		if t.end == len(data) {
			fl |= fPSH
		}
		frameNo, got := cn.emit(out{from: from, seq: base + uint32(t.start), fl: fl,
			payload: data[t.start:t.end], write: t.write, deliver: t.deliver, cut: t.cut, ipLen: t.ipLen, short: t.short})
		if frameNo > 0 && got > 0 && done[len(done)-1] == 0 {
			covered = addSpan(covered, span{t.start, t.start + got})
			for i, end := range ends {
				if done[i] == 0 && covered[0].start == 0 && covered[0].end >= end {
					done[i] = frameNo
				}
			}
		}
		if !t.deliver {
			continue
		}
		s := span{t.start, t.end}
		switch {
		case t.start > rcvd: // out of order: a duplicate ACK with SACK at once
			ooo = addSpan(ooo, s)
			cn.ack(to, cn.sackBlocks(ooo, s, nil, abs))
		case t.end <= rcvd: // all duplicate: a duplicate ACK with D-SACK at once
			cn.ack(to, cn.sackBlocks(ooo, span{}, &s, abs))
		default:
			rcvd = t.end
			holes := len(ooo) > 0
			for len(ooo) > 0 && ooo[0].start <= rcvd {
				rcvd = max(rcvd, ooo[0].end)
				ooo = ooo[1:]
			}
			cn.rcv[from] = base + uint32(rcvd)
			cn.unacked[from]++
			// Linux acknowledges every second segment, and at once while
			// it holds data out of order.
			if holes || cn.unacked[from] >= 2 {
				cn.ack(to, cn.sackBlocks(ooo, span{}, nil, abs))
			}
		}
	}
	if rcvd != len(data) {
		panic(fmt.Sprintf("netsim: internal error: peer received %d of %d bytes", rcvd, len(data)))
	}
	cn.nxt[from] = base + uint32(len(data))
	return done
}

// sackBlocks lists the SACK blocks of an ACK: the D-SACK block first, then
// the out-of-order block holding the latest segment, then the others, at
// most as many as fit beside the timestamps.
func (cn *Conn) sackBlocks(ooo []span, latest span, dup *span, abs func(span) [2]uint32) [][2]uint32 {
	limit := 4
	if cn.ts {
		limit = 3
	}
	var blocks [][2]uint32
	if dup != nil {
		blocks = append(blocks, abs(*dup))
	}
	first := -1
	for i, s := range ooo {
		if latest.end > latest.start && s.start <= latest.start && latest.end <= s.end {
			first = i
			blocks = append(blocks, abs(s))
		}
	}
	for i, s := range ooo {
		if i != first {
			blocks = append(blocks, abs(s))
		}
	}
	if len(blocks) > limit {
		blocks = blocks[:limit]
	}
	return blocks
}

// ack writes a pure ACK from side.
func (cn *Conn) ack(side int, sack [][2]uint32) {
	cn.emit(out{from: side, seq: cn.nxt[side], fl: fACK, sack: sack, write: true, deliver: true, cut: -1, ipLen: -1})
}

func (cn *Conn) handshake() {
	cn.emit(out{from: client, seq: cn.isn[client], fl: fSYN, write: true, deliver: true, cut: -1, ipLen: -1})
	cn.nxt[client] = cn.isn[client] + 1
	cn.rcv[client] = cn.isn[client] + 1
	cn.emit(out{from: server, seq: cn.isn[server], fl: fSYN | fACK, write: true, deliver: true, cut: -1, ipLen: -1})
	cn.nxt[server] = cn.isn[server] + 1
	cn.rcv[server] = cn.isn[server] + 1
	cn.ack(client, nil)
}

// Close ends the connection the orderly way, started by the client or the
// server: FIN/ACK, FIN/ACK from the peer, ACK.
func (cn *Conn) Close(fromClient bool) {
	if cn.closed {
		panic("netsim: Close on a closed connection")
	}
	x := sideOf(fromClient)
	p := 1 - x
	cn.fin(x)
	cn.fin(p)
	cn.ack(x, nil)
	cn.closed = true
}

func (cn *Conn) fin(side int) {
	cn.emit(out{from: side, seq: cn.nxt[side], fl: fFIN | fACK, write: true, deliver: true, cut: -1, ipLen: -1})
	cn.nxt[side]++
	cn.rcv[side]++
}

// Reset aborts the connection: one RST/ACK from the client or the server.
func (cn *Conn) Reset(fromClient bool) {
	if cn.closed {
		panic("netsim: Reset on a closed connection")
	}
	x := sideOf(fromClient)
	cn.emit(out{from: x, seq: cn.nxt[x], fl: fRST | fACK, write: true, deliver: true, cut: -1, ipLen: -1})
	cn.closed = true
}

type tcpFlags uint8

const (
	fFIN tcpFlags = 1 << iota
	fSYN
	fRST
	fPSH
	fACK
)

// out is one TCP segment to send.
type out struct {
	from    int
	seq     uint32
	fl      tcpFlags
	sack    [][2]uint32
	payload []byte
	write   bool // captured
	deliver bool // received by the peer
	cut     int  // payload bytes captured, -1 for all
	ipLen   int  // the IPv4 total length to write, -1 for the real one
	short   int  // the record's original length is this much short
}

// Window values as Linux sends them: the SYN's window is the largest
// multiple of the advertised MSS up to 65535, the SYN/ACK's a multiple of
// the segment size, later windows are scaled by 2^7.
func windowFor(mss int) uint16 {
	w := 65535 / mss * mss
	if w == 0 {
		w = 65535
	}
	return uint16(w)
}

var established = [2]uint16{502, 509}

// emit sends one segment: it builds the frame and, if written, appends it
// to the capture. It returns the frame number (0 when not written) and how
// many payload bytes the frame captured.
func (cn *Conn) emit(o out) (frameNo, captured int) {
	c := cn.c
	peer := 1 - o.from
	t := &layers.TCP{
		SrcPort: layers.TCPPort(cn.ep[o.from].Port()),
		DstPort: layers.TCPPort(cn.ep[peer].Port()),
		Seq:     o.seq,
		FIN:     o.fl&fFIN != 0,
		SYN:     o.fl&fSYN != 0,
		RST:     o.fl&fRST != 0,
		PSH:     o.fl&fPSH != 0,
		ACK:     o.fl&fACK != 0,
		Window:  established[o.from],
	}
	if t.ACK {
		t.Ack = cn.rcv[peer]
		cn.unacked[peer] = 0
	}
	tsval := cn.tsBase[o.from] + uint32(c.now.Sub(c.opt.Start)/time.Millisecond)
	tsecr := cn.tsRecent[o.from]
	nop := layers.TCPOption{OptionType: layers.TCPOptionKindNop}
	tsOpt := layers.TCPOption{OptionType: layers.TCPOptionKindTimestamps, OptionData: be32(tsval, tsecr)}
	if t.SYN {
		mssOpt := cn.mss
		if cn.ts {
			mssOpt += 12
		}
		mss := layers.TCPOption{OptionType: layers.TCPOptionKindMSS, OptionData: be16(uint16(min(mssOpt, 65535)))}
		sackOK := layers.TCPOption{OptionType: layers.TCPOptionKindSACKPermitted}
		wscale := layers.TCPOption{OptionType: layers.TCPOptionKindWindowScale, OptionData: []byte{7}}
		if cn.ts {
			t.Options = []layers.TCPOption{mss, sackOK, tsOpt, nop, wscale}
		} else {
			t.Options = []layers.TCPOption{mss, nop, nop, sackOK, nop, wscale}
		}
		if t.ACK {
			t.Window = windowFor(cn.mss)
		} else {
			t.Window = windowFor(mssOpt)
		}
	} else if cn.ts {
		t.Options = []layers.TCPOption{nop, nop, tsOpt}
	}
	if len(o.sack) > 0 {
		data := make([]byte, 0, 8*len(o.sack))
		for _, b := range o.sack {
			data = append(data, be32(b[0], b[1])...)
		}
		t.Options = append(t.Options, nop, nop, layers.TCPOption{OptionType: layers.TCPOptionKindSACK, OptionData: data})
	}
	if o.deliver && cn.ts {
		cn.tsRecent[peer] = tsval
	}
	ipid := cn.ipid[o.from]
	cn.ipid[o.from]++
	if !o.write {
		return 0, 0
	}

	data, hdr := cn.build(o.from, t, o.payload, ipid, o.ipLen)
	caplen := len(data)
	if o.cut >= 0 {
		caplen = min(caplen, hdr+o.cut)
	}
	caplen = min(caplen, c.opt.Snaplen)
	captured = min(max(caplen-hdr, 0), len(o.payload))
	if o.short > len(data) {
		panic(fmt.Sprintf("netsim: CaplenOverLen: %d bytes short of a %d-byte frame", o.short, len(data)))
	}
	c.frames = append(c.frames, frame{iface: cn.iface, ts: c.now, data: data, caplen: caplen, short: o.short})
	c.numbered++
	c.now = c.now.Add(c.opt.Step)
	return c.numbered, captured
}

func be16(v uint16) []byte { return []byte{byte(v >> 8), byte(v)} }

func be32(vs ...uint32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return b
}
