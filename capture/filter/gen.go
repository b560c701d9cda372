package filter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/gopacket/gopacket/layers"
)

// The code generator builds the same graph of blocks as libpcap's
// gencode.c does for the subset: each primitive becomes a few blocks (a
// list of loads and one conditional jump), joined by and/or/not through
// backpatched exit lists. Building the very same graph, in the same shape,
// is what lets the optimizer (opt.go) arrive at tcpdump's own programs.

// Classic BPF opcodes.
const (
	bpfLD   = 0x00
	bpfLDX  = 0x01
	bpfST   = 0x02
	bpfSTX  = 0x03
	bpfALU  = 0x04
	bpfJMP  = 0x05
	bpfRET  = 0x06
	bpfMISC = 0x07

	bpfW = 0x00
	bpfH = 0x08
	bpfB = 0x10

	bpfIMM = 0x00
	bpfABS = 0x20
	bpfIND = 0x40
	bpfMEM = 0x60
	bpfLEN = 0x80
	bpfMSH = 0xa0

	bpfADD = 0x00
	bpfSUB = 0x10
	bpfMUL = 0x20
	bpfDIV = 0x30
	bpfOR  = 0x40
	bpfAND = 0x50
	bpfLSH = 0x60
	bpfRSH = 0x70
	bpfNEG = 0x80
	bpfMOD = 0x90
	bpfXOR = 0xa0

	bpfJA   = 0x00
	bpfJEQ  = 0x10
	bpfJGT  = 0x20
	bpfJGE  = 0x30
	bpfJSET = 0x40

	bpfK = 0x00
	bpfX = 0x08
	bpfA = 0x10 // ret A

	bpfTAX = 0x00
	bpfTXA = 0x80

	opNOP = -1 // a statement the optimizer removed
)

func bpfClass(c int32) int32 { return c & 0x07 }
func bpfSize(c int32) int32  { return c & 0x18 }
func bpfMode(c int32) int32  { return c & 0xe0 }
func bpfOp(c int32) int32    { return c & 0xf0 }
func bpfSrc(c int32) int32   { return c & 0x08 }

// DefaultSnaplen is what a matching program returns when no snap length is
// given: tcpdump's default.
const DefaultSnaplen = 262144

type stmt struct {
	code int32 // opNOP when removed
	k    uint32
}

type edge struct {
	id   int
	code int32 // the branch's code, negated for the false edge
	edom []uint32
	succ *block
	pred *block
	next *edge // in the successor's list of in-edges
}

type block struct {
	id             int
	stmts          []*stmt
	s              stmt // the branch, or the return
	mark           int
	longjt, longjf int
	level          int
	offset         int
	sense          bool
	et, ef         edge
	head           *block
	link           *block
	dom            []uint32
	inEdges        *edge
	def, kill      uint32
	inUse, outUse  uint32
	oval           uint32
	val            [nAtoms]uint32
}

func jt(b *block) *block { return b.et.succ }
func jf(b *block) *block { return b.ef.succ }

func newBlock(code int32, k uint32, stmts ...*stmt) *block {
	b := &block{s: stmt{code: code, k: k}, stmts: stmts}
	b.head = b
	return b
}

func newStmt(code int32, k uint32) *stmt { return &stmt{code: code, k: k} }

// backpatch points every exit on the list at target.
func backpatch(list, target *block) {
	for list != nil {
		var next *block
		if !list.sense {
			next = jt(list)
			list.et.succ = target
		} else {
			next = jf(list)
			list.ef.succ = target
		}
		list = next
	}
}

// merge appends list b1 to list b0.
func merge(b0, b1 *block) {
	p := &b0
	for *p != nil {
		if !(*p).sense {
			p = &(*p).et.succ
		} else {
			p = &(*p).ef.succ
		}
	}
	*p = b1
}

func genAnd(b0, b1 *block) {
	backpatch(b0, b1.head)
	b0.sense = !b0.sense
	b1.sense = !b1.sense
	merge(b1, b0)
	b1.sense = !b1.sense
	b1.head = b0.head
}

func genOr(b0, b1 *block) {
	b0.sense = !b0.sense
	backpatch(b0, b1.head)
	b0.sense = !b0.sense
	merge(b1, b0)
	b1.head = b0.head
}

func genNot(b *block) { b.sense = !b.sense }

// Offsets are relative to one of these, as in libpcap.
type offrel uint8

const (
	orLinkHdr offrel = iota
	orLinkType
	orLinkPL
	orTranIPv4
	orTranIPv6
)

// EtherTypes and protocol numbers the generator uses.
const (
	etherIP     = 0x0800
	etherIPv6   = 0x86dd
	etherARP    = 0x0806
	etherRARP   = 0x8035
	ether8021Q  = 0x8100
	ether8021AD = 0x88a8
	etherQinQ   = 0x9100

	ipprotoICMP     = 1
	ipprotoICMPv6   = 58
	ipprotoTCP      = 6
	ipprotoUDP      = 17
	ipprotoSCTP     = 132
	ipprotoFragment = 44
	protoUndef      = -1
)

// The raw-IP link types some BSDs write into capture files: their DLT_RAW
// values, which libpcap reads as LINKTYPE_RAW (gopacket's LinkTypeRaw, 101)
// and gopacket does not name.
const (
	LinkTypeRaw12 layers.LinkType = 12
	LinkTypeRaw14 layers.LinkType = 14
)

// AF_INET6 values a NULL or LOOP link header carries for IPv6, in the
// order libpcap tests them when it reads a capture file (BSD, FreeBSD and
// Darwin write 24, 28 and 30). Only a live capture on the host itself would
// carry that host's own AF_INET6, which does not concern files; Linux has no
// NULL links.
var loopbackAF6 = []uint32{30, 24, 28}

type gen struct {
	link        layers.LinkType
	offLinkType int // -1: the link has no type field
	offLinkPL   int
	// Scratch memory words in use by arithmetic, allocated in turn as
	// libpcap does, so the programs name the same M[] words.
	curreg  int
	regused [memWords]bool
}

func newGen(link layers.LinkType) (*gen, error) {
	g := &gen{link: link}
	switch link {
	case layers.LinkTypeEthernet:
		g.offLinkType, g.offLinkPL = 12, 14
	case layers.LinkTypeLinuxSLL:
		g.offLinkType, g.offLinkPL = 14, 16
	case layers.LinkTypeLinuxSLL2:
		g.offLinkType, g.offLinkPL = 0, 20
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		g.offLinkType, g.offLinkPL = 0, 4
	case layers.LinkTypeRaw, LinkTypeRaw12, LinkTypeRaw14, layers.LinkTypeIPv4, layers.LinkTypeIPv6:
		g.offLinkType, g.offLinkPL = -1, 0
	default:
		return nil, fmt.Errorf("link type %d is not supported by the filter", int(link))
	}
	return g, nil
}

func (g *gen) loadA(rel offrel, off int, size int32) []*stmt {
	switch rel {
	case orLinkHdr:
		return []*stmt{newStmt(bpfLD|bpfABS|size, uint32(off))}
	case orLinkType:
		return []*stmt{newStmt(bpfLD|bpfABS|size, uint32(g.offLinkType+off))}
	case orLinkPL:
		return []*stmt{newStmt(bpfLD|bpfABS|size, uint32(g.offLinkPL+off))}
	case orTranIPv4:
		return []*stmt{
			newStmt(bpfLDX|bpfMSH|bpfB, uint32(g.offLinkPL)),
			newStmt(bpfLD|bpfIND|size, uint32(g.offLinkPL+off)),
		}
	case orTranIPv6:
		return []*stmt{newStmt(bpfLD|bpfABS|size, uint32(g.offLinkPL+40+off))}
	}
	panic("filter: bad offset base")
}

func (g *gen) ncmp(rel offrel, off int, size int32, mask uint32, jtype int32, reverse bool, v uint32) *block {
	s := g.loadA(rel, off, size)
	if mask != 0xffffffff {
		s = append(s, newStmt(bpfALU|bpfAND|bpfK, mask))
	}
	b := newBlock(bpfJMP|jtype, v, s...)
	if reverse && (jtype == bpfJGT || jtype == bpfJGE) {
		genNot(b)
	}
	return b
}

func (g *gen) cmp(rel offrel, off int, size int32, v uint32) *block {
	return g.ncmp(rel, off, size, 0xffffffff, bpfJEQ, false, v)
}

func (g *gen) mcmp(rel offrel, off int, size int32, v, mask uint32) *block {
	return g.ncmp(rel, off, size, mask, bpfJEQ, false, v)
}

// uncond is libpcap's gen_true/gen_false: "ld #0|#1; jeq #0".
func uncond(sense bool) *block {
	k := uint32(1)
	if sense {
		k = 0
	}
	return newBlock(bpfJMP|bpfJEQ, 0, newStmt(bpfLD|bpfIMM, k))
}

func genTrue() *block  { return uncond(true) }
func genFalse() *block { return uncond(false) }

// linktype tests that the link layer carries the given EtherType.
func (g *gen) linktype(et uint32) *block {
	switch g.link {
	case layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2:
		return g.cmp(orLinkType, 0, bpfH, et)
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		var fams []uint32
		switch et {
		case etherIP:
			fams = []uint32{2}
		case etherIPv6:
			fams = loopbackAF6
		default:
			return genFalse()
		}
		var b *block
		for _, f := range fams {
			if g.link == layers.LinkTypeNull {
				// NULL's family is in the writing host's byte order:
				// little-endian, as libpcap compares it on a
				// little-endian host reading a file written by one.
				f = bits.ReverseBytes32(f)
			}
			c := g.cmp(orLinkHdr, 0, bpfW, f)
			if b != nil {
				genOr(b, c)
			}
			b = c
		}
		return b
	case layers.LinkTypeRaw, LinkTypeRaw12, LinkTypeRaw14:
		switch et {
		case etherIP:
			return g.mcmp(orLinkHdr, 0, bpfB, 0x40, 0xf0)
		case etherIPv6:
			return g.mcmp(orLinkHdr, 0, bpfB, 0x60, 0xf0)
		}
		return genFalse()
	case layers.LinkTypeIPv4:
		if et == etherIP {
			return genTrue()
		}
		return genFalse()
	case layers.LinkTypeIPv6:
		if et == etherIPv6 {
			return genTrue()
		}
		return genFalse()
	}
	return genFalse()
}

// proto is "ip proto v or ip6 proto v" as libpcap writes "tcp".
func (g *gen) proto(v uint32) *block {
	ip4 := g.proto4(v)
	b1 := g.proto6(v)
	genOr(ip4, b1)
	return b1
}

// proto4 is "ip proto v".
func (g *gen) proto4(v uint32) *block {
	b0 := g.linktype(etherIP)
	b1 := g.cmp(orLinkPL, 9, bpfB, v)
	genAnd(b0, b1)
	return b1
}

// proto6 is "ip6 proto v": the next header, or the one behind a fragment
// header.
func (g *gen) proto6(v uint32) *block {
	b0 := g.linktype(etherIPv6)
	b2 := g.cmp(orLinkPL, 6, bpfB, ipprotoFragment)
	b1 := g.cmp(orLinkPL, 40, bpfB, v)
	genAnd(b2, b1)
	b2 = g.cmp(orLinkPL, 6, bpfB, v)
	genOr(b2, b1)
	genAnd(b0, b1)
	return b1
}

func (g *gen) hostop(addr, mask uint32, dir dirQual, et uint32, srcOff, dstOff int) *block {
	var off int
	switch dir {
	case qSrc:
		off = srcOff
	case qDst:
		off = dstOff
	case qSrcAndDst:
		b0 := g.hostop(addr, mask, qSrc, et, srcOff, dstOff)
		b1 := g.hostop(addr, mask, qDst, et, srcOff, dstOff)
		genAnd(b0, b1)
		return b1
	default:
		b0 := g.hostop(addr, mask, qSrc, et, srcOff, dstOff)
		b1 := g.hostop(addr, mask, qDst, et, srcOff, dstOff)
		genOr(b0, b1)
		return b1
	}
	b0 := g.linktype(et)
	b1 := g.mcmp(orLinkPL, off, bpfW, addr, mask)
	genAnd(b0, b1)
	return b1
}

func (g *gen) host4(p *prim) *block {
	if p.q.proto == qIP {
		return g.hostop(p.addr, p.mask, p.q.dir, etherIP, 12, 16)
	}
	// tcpdump's "host" with an IPv4 address also matches ARP and RARP
	// packets about it.
	b0 := g.hostop(p.addr, p.mask, p.q.dir, etherIP, 12, 16)
	b1 := g.hostop(p.addr, p.mask, p.q.dir, etherARP, 14, 24)
	genOr(b0, b1)
	b0 = g.hostop(p.addr, p.mask, p.q.dir, etherRARP, 14, 24)
	genOr(b1, b0)
	return b0
}

func (g *gen) hostop6(p *prim, dir dirQual, srcOff, dstOff int) *block {
	var off int
	switch dir {
	case qSrc:
		off = srcOff
	case qDst:
		off = dstOff
	case qSrcAndDst:
		b0 := g.hostop6(p, qSrc, srcOff, dstOff)
		b1 := g.hostop6(p, qDst, srcOff, dstOff)
		genAnd(b0, b1)
		return b1
	default:
		b0 := g.hostop6(p, qSrc, srcOff, dstOff)
		b1 := g.hostop6(p, qDst, srcOff, dstOff)
		genOr(b0, b1)
		return b1
	}
	a, m := p.addr6[:], p.mask6[:]
	b1 := g.mcmp(orLinkPL, off+12, bpfW, binary.BigEndian.Uint32(a[12:]), binary.BigEndian.Uint32(m[12:]))
	b0 := g.mcmp(orLinkPL, off+8, bpfW, binary.BigEndian.Uint32(a[8:]), binary.BigEndian.Uint32(m[8:]))
	genAnd(b0, b1)
	b0 = g.mcmp(orLinkPL, off+4, bpfW, binary.BigEndian.Uint32(a[4:]), binary.BigEndian.Uint32(m[4:]))
	genAnd(b0, b1)
	b0 = g.mcmp(orLinkPL, off+0, bpfW, binary.BigEndian.Uint32(a[0:]), binary.BigEndian.Uint32(m[0:]))
	genAnd(b0, b1)
	b0 = g.linktype(etherIPv6)
	genAnd(b0, b1)
	return b1
}

// ipfrag is "not a fragment other than the first".
func (g *gen) ipfrag() *block {
	b := newBlock(bpfJMP|bpfJSET, 0x1fff, g.loadA(orLinkPL, 6, bpfH)...)
	genNot(b)
	return b
}

// atom tests one port (lo), or with isRange the ports lo to hi, at off (0
// for the source port, 2 for the destination port) of the transport header.
func (g *gen) atom(rel offrel, off int, lo, hi uint32, isRange bool) *block {
	if !isRange {
		return g.cmp(rel, off, bpfH, lo)
	}
	b1 := g.ncmp(rel, off, bpfH, 0xffffffff, bpfJGE, false, lo)
	b2 := g.ncmp(rel, off, bpfH, 0xffffffff, bpfJGT, true, hi)
	genAnd(b1, b2)
	return b2
}

func (g *gen) portDir(rel offrel, dir dirQual, lo, hi uint32, isRange bool) *block {
	switch dir {
	case qSrc:
		return g.atom(rel, 0, lo, hi, isRange)
	case qDst:
		return g.atom(rel, 2, lo, hi, isRange)
	case qSrcAndDst:
		tmp := g.atom(rel, 0, lo, hi, isRange)
		b1 := g.atom(rel, 2, lo, hi, isRange)
		genAnd(tmp, b1)
		return b1
	}
	tmp := g.atom(rel, 0, lo, hi, isRange)
	b1 := g.atom(rel, 2, lo, hi, isRange)
	genOr(tmp, b1)
	return b1
}

func (g *gen) portop4(proto uint32, dir dirQual, lo, hi uint32, isRange bool) *block {
	tmp := g.cmp(orLinkPL, 9, bpfB, proto)
	b0 := g.ipfrag()
	genAnd(tmp, b0)
	b1 := g.portDir(orTranIPv4, dir, lo, hi, isRange)
	genAnd(b0, b1)
	return b1
}

func (g *gen) portop6(proto uint32, dir dirQual, lo, hi uint32, isRange bool) *block {
	b0 := g.cmp(orLinkPL, 6, bpfB, proto)
	b1 := g.portDir(orTranIPv6, dir, lo, hi, isRange)
	genAnd(b0, b1)
	return b1
}

// port is libpcap's gen_port/gen_portrange (IPv4) or the IPv6 variants:
// ip_proto is TCP, UDP or protoUndef (TCP, UDP and SCTP).
func (g *gen) port(v6 bool, ipProto int, dir dirQual, lo, hi uint32, isRange bool) *block {
	op := g.portop4
	b0 := g.linktype(etherIP)
	if v6 {
		op = g.portop6
		b0 = g.linktype(etherIPv6)
	}
	var b1 *block
	if ipProto == protoUndef {
		tmp := op(ipprotoTCP, dir, lo, hi, isRange)
		b1 = op(ipprotoUDP, dir, lo, hi, isRange)
		genOr(tmp, b1)
		tmp = op(ipprotoSCTP, dir, lo, hi, isRange)
		genOr(tmp, b1)
	} else {
		b1 = op(uint32(ipProto), dir, lo, hi, isRange)
	}
	genAnd(b0, b1)
	return b1
}

func (g *gen) vlan(id int) (*block, error) {
	if g.link != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("no VLAN support for %s", linkName(g.link))
	}
	b0 := g.linktype(ether8021Q)
	b1 := g.linktype(ether8021AD)
	genOr(b0, b1)
	b0 = b1
	b1 = g.linktype(etherQinQ)
	genOr(b0, b1)
	b0 = b1
	if id >= 0 {
		b1 = g.mcmp(orLinkPL, 0, bpfH, uint32(id), 0x0fff)
		genAnd(b0, b1)
		b0 = b1
	}
	// What follows "vlan" looks behind the tag, also on the other side of
	// an "or": libpcap moves the offsets for the rest of the expression.
	g.offLinkPL += 4
	g.offLinkType += 4
	return b0, nil
}

// expr generates the tree in order.
func (g *gen) expr(n *node) (*block, error) {
	switch n.op {
	case opAnd, opOr:
		b0, err := g.expr(n.l)
		if err != nil {
			return nil, err
		}
		b1, err := g.expr(n.r)
		if err != nil {
			return nil, err
		}
		if n.op == opAnd {
			genAnd(b0, b1)
		} else {
			genOr(b0, b1)
		}
		return b1, nil
	case opNot:
		b, err := g.expr(n.l)
		if err != nil {
			return nil, err
		}
		genNot(b)
		return b, nil
	}
	p := &n.prim
	switch p.kind {
	case pIP:
		return g.linktype(etherIP), nil
	case pIP6:
		return g.linktype(etherIPv6), nil
	case pTCP:
		return g.proto(ipprotoTCP), nil
	case pUDP:
		return g.proto(ipprotoUDP), nil
	case pVlan:
		return g.vlan(p.vlan)
	case pICMP:
		return g.proto4(ipprotoICMP), nil
	case pICMP6:
		return g.proto6(ipprotoICMPv6), nil
	case pSCTP:
		return g.proto(ipprotoSCTP), nil
	case pARP:
		return g.linktype(etherARP), nil
	case pRARP:
		return g.linktype(etherRARP), nil
	case pLen:
		// libpcap's gen_less and gen_greater: "less" is not "len > N".
		b := newBlock(bpfJMP|p.lenJmp|bpfK, p.p1, newStmt(bpfLD|bpfLEN, 0))
		if p.lenJmp == bpfJGT {
			genNot(b)
		}
		return b, nil
	case pRel:
		return g.relation(p.rel)
	case pHost4:
		return g.host4(p), nil
	case pHost6:
		return g.hostop6(p, p.q.dir, 8, 24), nil
	case pPort, pPortrange:
		ipProto := protoUndef
		switch p.q.proto {
		case qTCP:
			ipProto = ipprotoTCP
		case qUDP:
			ipProto = ipprotoUDP
		}
		isRange := p.kind == pPortrange
		b := g.port(false, ipProto, p.q.dir, p.p1, p.p2, isRange)
		genOr(g.port(true, ipProto, p.q.dir, p.p1, p.p2, isRange), b)
		return b, nil
	}
	return nil, fmt.Errorf("filter: unknown primitive")
}

// program generates the whole graph: the expression, then the two return
// blocks its exits go to. A nil tree matches everything.
func (g *gen) program(n *node, snaplen uint32) (*block, error) {
	if n == nil {
		return newBlock(bpfRET|bpfK, snaplen), nil
	}
	b, err := g.expr(n)
	if err != nil {
		return nil, err
	}
	backpatch(b, newBlock(bpfRET|bpfK, snaplen))
	b.sense = !b.sense
	backpatch(b, newBlock(bpfRET|bpfK, 0))
	return b.head, nil
}

// linkName names a link type as libpcap's messages do.
func linkName(l layers.LinkType) string {
	switch l {
	case layers.LinkTypeEthernet:
		return "Ethernet"
	case layers.LinkTypeLinuxSLL:
		return "Linux cooked v1"
	case layers.LinkTypeLinuxSLL2:
		return "Linux cooked v2"
	case layers.LinkTypeRaw, LinkTypeRaw12, LinkTypeRaw14:
		return "Raw IP"
	case layers.LinkTypeIPv4:
		return "Raw IPv4"
	case layers.LinkTypeIPv6:
		return "Raw IPv6"
	case layers.LinkTypeNull:
		return "BSD loopback"
	case layers.LinkTypeLoop:
		return "OpenBSD loopback"
	}
	return fmt.Sprintf("link type %d", int(l))
}

// Arithmetic, as libpcap's gencode.c generates it: every value lives in a
// scratch memory word; an operation loads its operands from theirs into X
// and A, and stores its result in a new one. The optimizer then folds
// constants and removes the stores nothing reads.

// arth is a value being computed: its statements, the word that holds it,
// and the protocol tests a load in it needs (nil: none).
type arth struct {
	b     *block
	s     []*stmt
	regno int
}

var errRegisters = errors.New("too many registers needed to evaluate expression")

// allocReg returns the next free scratch word from the current one on.
func (g *gen) allocReg() (int, error) {
	for n := memWords; n > 0; n-- {
		if !g.regused[g.curreg] {
			g.regused[g.curreg] = true
			return g.curreg, nil
		}
		g.curreg = (g.curreg + 1) % memWords
	}
	return 0, errRegisters
}

func (g *gen) freeReg(n int) { g.regused[n] = false }

func (g *gen) arith(a *arith) (*arth, error) {
	switch a.kind {
	case aNum, aLen:
		r, err := g.allocReg()
		if err != nil {
			return nil, err
		}
		var ld *stmt
		if a.kind == aLen {
			ld = newStmt(bpfLD|bpfLEN, 0)
		} else {
			ld = newStmt(bpfLD|bpfIMM, a.v)
		}
		return &arth{s: []*stmt{ld, newStmt(bpfST, uint32(r))}, regno: r}, nil
	case aNeg:
		x, err := g.arith(a.x)
		if err != nil {
			return nil, err
		}
		r := uint32(x.regno)
		x.s = append(x.s, newStmt(bpfLD|bpfMEM, r), newStmt(bpfALU|bpfNEG, 0), newStmt(bpfST, r))
		return x, nil
	case aBin:
		a0, err := g.arith(a.x)
		if err != nil {
			return nil, err
		}
		a1, err := g.arith(a.y)
		if err != nil {
			return nil, err
		}
		a0.s = append(a0.s, a1.s...)
		a0.s = append(a0.s, newStmt(bpfLDX|bpfMEM, uint32(a1.regno)), newStmt(bpfLD|bpfMEM, uint32(a0.regno)),
			newStmt(bpfALU|bpfX|a.op, 0))
		g.freeReg(a0.regno)
		g.freeReg(a1.regno)
		r, err := g.allocReg()
		if err != nil {
			return nil, err
		}
		a0.s = append(a0.s, newStmt(bpfST, uint32(r)))
		a0.regno = r
		// As in libpcap, the protocol tests of the right side are
		// not kept: "ip[0] + tcp[0] > 0" does not test for TCP.
		return a0, nil
	case aLoad:
		return g.load(a)
	}
	return nil, fmt.Errorf("filter: unknown arithmetic node")
}

// protoAbbrev is the test a load relative to a protocol's header needs.
func (g *gen) protoAbbrev(lp loadProto) *block {
	switch lp {
	case lpIP:
		return g.linktype(etherIP)
	case lpIP6:
		return g.linktype(etherIPv6)
	case lpARP:
		return g.linktype(etherARP)
	case lpRARP:
		return g.linktype(etherRARP)
	case lpTCP:
		return g.proto(ipprotoTCP)
	case lpUDP:
		return g.proto(ipprotoUDP)
	case lpSCTP:
		return g.proto(ipprotoSCTP)
	case lpICMP:
		return g.proto4(ipprotoICMP)
	}
	return g.proto6(ipprotoICMPv6)
}

// load is proto[x:size]: x is an offset from the start of the protocol's
// header. For the transport protocols that is behind the IPv4 header
// (options included), on unfragmented packets and first fragments only:
// libpcap does not look for them in IPv6, and neither does this.
func (g *gen) load(a *arith) (*arth, error) {
	inst, err := g.arith(a.x)
	if err != nil {
		return nil, err
	}
	regno, err := g.allocReg()
	if err != nil {
		return nil, err
	}
	g.freeReg(inst.regno)
	idx := uint32(inst.regno)
	pl := uint32(g.offLinkPL)
	switch a.proto {
	case lpLink:
		inst.s = append(inst.s, newStmt(bpfLDX|bpfMEM, idx), newStmt(bpfLD|bpfIND|a.size, 0))
	case lpIP, lpIP6, lpARP, lpRARP:
		inst.s = append(inst.s, newStmt(bpfLDX|bpfMEM, idx), newStmt(bpfLD|bpfIND|a.size, pl))
		b := g.protoAbbrev(a.proto)
		if inst.b != nil {
			genAnd(inst.b, b)
		}
		inst.b = b
	case lpTCP, lpUDP, lpSCTP, lpICMP:
		inst.s = append(inst.s, newStmt(bpfLDX|bpfMSH|bpfB, pl), newStmt(bpfLD|bpfMEM, idx),
			newStmt(bpfALU|bpfADD|bpfX, 0), newStmt(bpfMISC|bpfTAX, 0), newStmt(bpfLD|bpfIND|a.size, pl))
		b := g.ipfrag()
		genAnd(g.protoAbbrev(a.proto), b)
		if inst.b != nil {
			genAnd(inst.b, b)
		}
		genAnd(g.linktype(etherIP), b)
		inst.b = b
	case lpICMP6:
		// libpcap: ICMPv6 right after the fixed IPv6 header only.
		b := g.linktype(etherIPv6)
		if inst.b != nil {
			genAnd(inst.b, b)
		}
		inst.b = b
		b = g.cmp(orLinkPL, 6, bpfB, ipprotoICMPv6)
		genAnd(inst.b, b)
		inst.b = b
		inst.s = append(inst.s, newStmt(bpfLDX|bpfMEM, idx), newStmt(bpfLD|bpfIND|a.size, pl+40))
	}
	inst.regno = regno
	inst.s = append(inst.s, newStmt(bpfST, uint32(regno)))
	return inst, nil
}

// relation compares two values: A (the left) against X (the right), or for
// equality A-X against 0, which the optimizer turns into a comparison with
// a constant.
func (g *gen) relation(rel *relation) (*block, error) {
	a0, err := g.arith(rel.l)
	if err != nil {
		return nil, err
	}
	a1, err := g.arith(rel.r)
	if err != nil {
		return nil, err
	}
	s := append(a0.s, a1.s...)
	s = append(s, newStmt(bpfLDX|bpfMEM, uint32(a1.regno)), newStmt(bpfLD|bpfMEM, uint32(a0.regno)))
	var b *block
	if rel.code == bpfJEQ {
		s = append(s, newStmt(bpfALU|bpfSUB|bpfX, 0))
		b = newBlock(bpfJMP|bpfJEQ|bpfK, 0, s...)
	} else {
		b = newBlock(bpfJMP|rel.code|bpfX, 0, s...)
	}
	if rel.reversed {
		genNot(b)
	}
	g.freeReg(a0.regno)
	g.freeReg(a1.regno)
	tmp := a1.b
	if a0.b != nil {
		tmp = a0.b
		if a1.b != nil {
			genAnd(a0.b, a1.b)
			tmp = a1.b
		}
	}
	if tmp != nil {
		genAnd(tmp, b)
	}
	return b, nil
}
