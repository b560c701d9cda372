package filter

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The parser reads the tcpdump subset into a tree of primitives joined by
// and, or and not. It follows libpcap's grammar, including the parts that
// surprise: "and" and "or" have the same precedence and group from the left
// ("a or b and c" is "(a or b) and c"), "not" binds tighter than both, and a
// bare value after "and" or "or" takes the qualifiers of the primitive before
// it ("port 1 or 2" is "port 1 or port 2", "not port 1 or 2" is
// "(not port 1) or port 2").

// Qualifiers, as libpcap has them.
type protoQual uint8

const (
	qProtoDefault protoQual = iota
	qIP
	qIP6
	qTCP
	qUDP
)

type dirQual uint8

const (
	qDirDefault dirQual = iota
	qSrc
	qDst
	qSrcOrDst
	qSrcAndDst
)

type addrQual uint8

const (
	qAddrDefault addrQual = iota
	qHost
	qNet
	qPort
	qPortrange
)

// qual is what a bare value inherits: the qualifiers of the primitive
// before it. bad is libpcap's "qerr": there is nothing to inherit (at the
// start, or after a protocol name such as "tcp" or after "vlan").
type qual struct {
	proto protoQual
	dir   dirQual
	addr  addrQual
	bad   bool
}

var qualNone = qual{bad: true}

type nodeOp uint8

const (
	opPrim nodeOp = iota
	opAnd
	opOr
	opNot
)

type primKind uint8

const (
	pHost4     primKind = iota // host or net, IPv4: addr/mask
	pHost6                     // host or net, IPv6: addr6/mask6
	pPort                      // port
	pPortrange                 // portrange
	pIP                        // ip
	pIP6                       // ip6
	pTCP                       // tcp
	pUDP                       // udp
	pVlan                      // vlan [ID]
	pICMP                      // icmp
	pICMP6                     // icmp6
	pSCTP                      // sctp
	pARP                       // arp
	pRARP                      // rarp
	pRel                       // a comparison of two arithmetic expressions
	pLen                       // less N, greater N
)

// node is one node of the expression tree; an in-order walk visits the
// primitives in the order of the text, which is the order libpcap generates
// them in (it matters for vlan, which moves the offsets of what follows).
type node struct {
	op   nodeOp
	l, r *node // and/or: both; not: l
	prim prim
}

type prim struct {
	kind   primKind
	q      qual
	addr   uint32   // pHost4
	mask   uint32   // pHost4
	addr6  [16]byte // pHost6
	mask6  [16]byte // pHost6
	p1, p2 uint32   // pPort (p1), pPortrange (p1 <= p2)
	vlan   int      // pVlan: the ID, or -1 for any
	rel    *relation
	lenJmp int32 // pLen: bpfJGT (less, negated) or bpfJGE (greater), against p1
}

// relation is "l relop r": the jump code and whether the branch is
// negated, as libpcap reads <= as not >, < as not >=, != as not =.
type relation struct {
	code     int32
	reversed bool
	l, r     *arith
}

type arithKind uint8

const (
	aNum  arithKind = iota // v
	aLen                   // len: the frame's length
	aLoad                  // proto[x:size]
	aBin                   // x op y
	aNeg                   // -x
)

// loadProto is what a byte offset is relative to.
type loadProto uint8

const (
	lpLink loadProto = iota // ether, link: the link-layer header
	lpIP
	lpIP6
	lpARP
	lpRARP
	lpTCP
	lpUDP
	lpSCTP
	lpICMP
	lpICMP6
)

var loadProtos = map[string]loadProto{
	"ether": lpLink, "link": lpLink, "ip": lpIP, "ip6": lpIP6, "arp": lpARP, "rarp": lpRARP,
	"tcp": lpTCP, "udp": lpUDP, "sctp": lpSCTP, "icmp": lpICMP, "icmp6": lpICMP6,
}

// arith is one node of an arithmetic expression.
type arith struct {
	kind  arithKind
	v     uint32    // aNum
	proto loadProto // aLoad
	size  int32     // aLoad: bpfB, bpfH or bpfW
	op    int32     // aBin: bpfADD...
	x, y  *arith    // aLoad: x is the offset; aBin: both; aNeg: x
}

// SyntaxError is an expression that is not in the supported subset, with
// the 1-based byte position in the expression where the problem was found.
type SyntaxError struct {
	Expr string
	Pos  int // 1-based; len(Expr)+1 at the end
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("filter %q: position %d: %s", e.Expr, e.Pos, e.Msg)
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tLParen
	tRParen
	tSlash // also division
	tNot
	tAnd
	tOr
	tWord   // a keyword or a value
	tLBrack // [
	tRBrack // ]
	tColon  // the size in proto[expr:size]
	tOp     // an arithmetic operator other than "/": + - * % & | ^ << >>
	tRel    // a comparison: > < >= <= = == !=
)

type token struct {
	kind tokKind
	text string
	pos  int // 0-based byte offset
}

// keywords of the subset, and those of tcpdump's that it does not support,
// so the error can say which.
var keywords = map[string]bool{
	"host": true, "net": true, "mask": true, "port": true, "portrange": true,
	"src": true, "dst": true, "ip": true, "ip6": true, "tcp": true, "udp": true,
	"vlan": true, "and": true, "or": true, "not": true,
	"icmp": true, "icmp6": true, "sctp": true, "arp": true, "rarp": true,
	"ether": true, "link": true, "len": true, "length": true, "less": true, "greater": true,
}

var unsupported = map[string]bool{
	"igmp": true, "gateway": true, "proto": true, "protochain": true, "broadcast": true,
	"multicast": true, "mpls": true, "pppoed": true,
	"pppoes": true, "geneve": true, "inbound": true, "outbound": true, "ifname": true,
	"decnet": true, "llc": true, "wlan": true, "type": true,
	"subtype": true, "dir": true, "ra": true, "ta": true, "addr1": true, "addr2": true,
	"addr3": true, "addr4": true, "iso": true, "isis": true, "atalk": true, "aarp": true,
	"ipx": true, "netbeui": true, "stp": true, "lat": true, "mopdl": true, "moprc": true,
	"sca": true, "vrrp": true, "carp": true, "pim": true, "ah": true, "esp": true,
	"radio": true, "fddi": true, "tr": true, "ppp": true, "slip": true, "byte": true,
	"igrp": true, "ifindex": true,
}

// namedNumbers are the names libpcap's scanner reads as numbers
// (pcap-filter(7)): header field offsets and values for ICMP, ICMPv6 and
// TCP.
var namedNumbers = map[string]uint32{
	"icmptype": 0, "icmpcode": 1, "icmp-echoreply": 0, "icmp-unreach": 3,
	"icmp-sourcequench": 4, "icmp-redirect": 5, "icmp-echo": 8, "icmp-routeradvert": 9,
	"icmp-routersolicit": 10, "icmp-timxceed": 11, "icmp-paramprob": 12, "icmp-tstamp": 13,
	"icmp-tstampreply": 14, "icmp-ireq": 15, "icmp-ireqreply": 16, "icmp-maskreq": 17,
	"icmp-maskreply": 18,
	"icmp6type":      0, "icmp6code": 1, "icmp6-destinationunreach": 1, "icmp6-packettoobig": 2,
	"icmp6-timeexceeded": 3, "icmp6-parameterproblem": 4, "icmp6-echo": 128,
	"icmp6-echoreply": 129, "icmp6-multicastlistenerquery": 130,
	"icmp6-multicastlistenerreportv1": 131, "icmp6-multicastlistenerdone": 132,
	"icmp6-routersolicit": 133, "icmp6-routeradvert": 134, "icmp6-neighborsolicit": 135,
	"icmp6-neighboradvert": 136, "icmp6-redirect": 137, "icmp6-routerrenum": 138,
	"icmp6-nodeinformationquery": 139, "icmp6-nodeinformationresponse": 140,
	"icmp6-ineighbordiscoverysolicit": 141, "icmp6-ineighbordiscoveryadvert": 142,
	"icmp6-multicastlistenerreportv2": 143, "icmp6-homeagentdiscoveryrequest": 144,
	"icmp6-homeagentdiscoveryreply": 145, "icmp6-mobileprefixsolicit": 146,
	"icmp6-mobileprefixadvert": 147, "icmp6-certpathsolicit": 148, "icmp6-certpathadvert": 149,
	"icmp6-multicastrouteradvert": 151, "icmp6-multicastroutersolicit": 152,
	"icmp6-multicastrouterterm": 153,
	"tcpflags":                  13, "tcp-fin": 0x01, "tcp-syn": 0x02, "tcp-rst": 0x04, "tcp-push": 0x08,
	"tcp-ack": 0x10, "tcp-urg": 0x20, "tcp-ece": 0x40, "tcp-cwr": 0x80,
}

// numberWord reads a word that libpcap's scanner makes a number: digits (see
// parseNum) or one of the named numbers.
func numberWord(w string) (uint32, bool) {
	if v, ok := namedNumbers[w]; ok {
		return v, true
	}
	return parseNum(w)
}

var ops1 = map[byte]tokKind{'(': tLParen, ')': tRParen, '/': tSlash, '!': tNot, '[': tLBrack, ']': tRBrack,
	':': tColon, '+': tOp, '-': tOp, '*': tOp, '%': tOp, '&': tOp, '|': tOp, '^': tOp,
	'<': tRel, '>': tRel, '=': tRel}

// two-character operators, longest first as the scanner matches them.
var ops2 = map[string]tokKind{">=": tRel, "<=": tRel, "!=": tRel, "==": tRel, "<<": tOp, ">>": tOp, "&&": tAnd, "||": tOr}

func lex(expr string) ([]token, *SyntaxError) {
	var toks []token
	i := 0
	for i < len(expr) {
		c := expr[i]
		if i+1 < len(expr) {
			if k, ok := ops2[expr[i:i+2]]; ok {
				toks = append(toks, token{k, expr[i : i+2], i})
				i += 2
				continue
			}
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isAlnum(c) || c == ':' && i+1 < len(expr) && expr[i+1] == ':':
			j := i
			colons := 0
			for j < len(expr) && isWordByte(expr[j]) {
				if expr[j] == ':' {
					colons++
				}
				j++
			}
			w := expr[i:j]
			if colons == 1 {
				// "12:1" in tcp[12:1]: a number and the size, as
				// libpcap's scanner has no word with a single colon.
				w = w[:strings.IndexByte(w, ':')]
			} else if colons >= 2 && j < len(expr) && expr[j] == '%' && j+1 < len(expr) && isAlnum(expr[j+1]) {
				// An IPv6 zone, kept with the address so that the
				// error names it.
				for j++; j < len(expr) && isWordByte(expr[j]); j++ {
				}
				w = expr[i:j]
			}
			// As libpcap's scanner, a word does not end in "-" or "_":
			// "len-" is len and a minus.
			for len(w) > 1 && (w[len(w)-1] == '-' || w[len(w)-1] == '_') {
				w = w[:len(w)-1]
			}
			t := token{tWord, w, i}
			switch w {
			case "and":
				t.kind = tAnd
			case "or":
				t.kind = tOr
			case "not":
				t.kind = tNot
			}
			toks = append(toks, t)
			i += len(w)
		default:
			k, ok := ops1[c]
			if !ok {
				return nil, &SyntaxError{expr, i + 1, fmt.Sprintf("unexpected character %q", c)}
			}
			toks = append(toks, token{k, expr[i : i+1], i})
			i++
		}
	}
	toks = append(toks, token{tEOF, "", len(expr)})
	return toks, nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isWordByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == ':' || c == '-' || c == '_'
}

type parser struct {
	expr string
	toks []token
	i    int
}

// parse reads expr into a tree; an empty expression (only blanks) gives nil,
// which matches everything.
func parse(expr string) (*node, error) {
	toks, serr := lex(expr)
	if serr != nil {
		return nil, serr
	}
	p := &parser{expr: expr, toks: toks}
	if p.peek().kind == tEOF {
		return nil, nil
	}
	n, _, err := p.expr1(qualNone)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		if t.kind == tRParen {
			return nil, p.errAt(t, "unbalanced \")\"")
		}
		if t.kind == tWord && unsupported[t.text] {
			return nil, p.errAt(t, fmt.Sprintf("%q is not supported", t.text))
		}
		return nil, p.errAt(t, fmt.Sprintf("\"and\" or \"or\" expected before %q", t.text))
	}
	return n, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, msg string) *SyntaxError {
	return &SyntaxError{Expr: p.expr, Pos: t.pos + 1, Msg: msg}
}

// expr1: term (("and"|"or") (term|id))*, all of one precedence, from the
// left. q is the qualifier a bare value would inherit at the start.
func (p *parser) expr1(q qual) (*node, qual, error) {
	left, q, err := p.termOrID(q, false)
	if err != nil {
		return nil, q, err
	}
	for {
		t := p.peek()
		if t.kind != tAnd && t.kind != tOr {
			return left, q, nil
		}
		p.next()
		right, q2, err := p.termOrID(q, true)
		if err != nil {
			return nil, q, err
		}
		op := opAnd
		if t.kind == tOr {
			op = opOr
		}
		left = &node{op: op, l: left, r: right}
		q = q2
	}
}

// startsID reports whether the tokens from the current one, past any "("
// and "not", begin a bare value (libpcap's "id") rather than a term.
func (p *parser) startsID() bool {
	for j := p.i; j < len(p.toks); j++ {
		switch t := p.toks[j]; t.kind {
		case tLParen, tNot:
			continue
		case tWord:
			if keywords[t.text] || unsupported[t.text] {
				return false
			}
			// A number followed by an operator or a comparison
			// begins an arithmetic comparison, not a value: "port 1
			// or 2 > 1" is "port 1 or (2 > 1)", as in libpcap.
			if _, ok := numberWord(t.text); ok {
				k := j + 1
				for k < len(p.toks) && p.toks[k].kind == tRParen {
					k++
				}
				switch p.toks[k].kind {
				case tOp, tRel, tSlash:
					return false
				}
			}
			return true
		default:
			return false
		}
	}
	return false
}

// startsArith reports whether the tokens from the current one, past any
// "(", begin an arithmetic expression.
func (p *parser) startsArith() bool {
	j := p.i
	for p.toks[j].kind == tLParen {
		j++
	}
	switch t := p.toks[j]; t.kind {
	case tOp:
		return t.text == "-"
	case tWord:
		if t.text == "len" || t.text == "length" {
			return true
		}
		if _, ok := loadProtos[t.text]; ok {
			return p.toks[j+1].kind == tLBrack
		}
		_, ok := numberWord(t.text)
		return ok
	}
	return false
}

func (p *parser) termOrID(q qual, afterOp bool) (*node, qual, error) {
	if afterOp && p.startsID() {
		n, err := p.id(q)
		return n, q, err
	}
	return p.term(q)
}

// term: "not" term | primitive | "(" expr ")".
func (p *parser) term(q qual) (*node, qual, error) {
	t := p.peek()
	switch t.kind {
	case tNot:
		p.next()
		x, q2, err := p.term(q)
		if err != nil {
			return nil, q, err
		}
		return &node{op: opNot, l: x}, q2, nil
	case tLParen:
		if p.startsArith() {
			// "(" may open an arithmetic expression, "(len) > 1" or
			// "(tcp[0] + 1) = 2", or an expression, "(tcp[0] = 1 or
			// udp)": try the first, then the second.
			save := p.i
			n, aerr := p.relation()
			if aerr == nil {
				return n, qualNone, nil
			}
			p.i = save
			x, q2, err := p.paren(q)
			if err != nil {
				if se, ok := err.(*SyntaxError); ok && aerr.Pos > se.Pos {
					return nil, q, aerr
				}
				return nil, q, err
			}
			return x, q2, nil
		}
		return p.paren(q)
	case tOp:
		if t.text == "-" {
			n, err := p.relation()
			if err != nil {
				return nil, q, err
			}
			return n, qualNone, nil
		}
	case tWord:
		if p.startsArith() {
			n, err := p.relation()
			if err != nil {
				return nil, q, err
			}
			return n, qualNone, nil
		}
		return p.primitive()
	case tEOF:
		return nil, q, p.errAt(t, "expression expected at the end")
	}
	return nil, q, p.errAt(t, fmt.Sprintf("unexpected %q", t.text))
}

// paren reads "(" expr ")".
func (p *parser) paren(q qual) (*node, qual, error) {
	p.next()
	x, _, err := p.expr1(q)
	if err != nil {
		return nil, q, err
	}
	if c := p.next(); c.kind != tRParen {
		return nil, q, p.errAt(c, "\")\" expected")
	}
	// libpcap: after "( expr )" a bare value inherits what it would
	// have inherited before the parenthesis.
	return x, q, nil
}

// id is a bare value with inherited qualifiers: a value, "not" id, or a
// parenthesised list of ids joined by and/or.
func (p *parser) id(q qual) (*node, error) {
	t := p.peek()
	switch t.kind {
	case tNot:
		p.next()
		x, err := p.id(q)
		if err != nil {
			return nil, err
		}
		return &node{op: opNot, l: x}, nil
	case tLParen:
		p.next()
		x, err := p.id(q)
		if err != nil {
			return nil, err
		}
		for {
			c := p.peek()
			if c.kind == tRParen {
				p.next()
				return x, nil
			}
			if c.kind != tAnd && c.kind != tOr {
				return nil, p.errAt(c, "\")\" expected")
			}
			p.next()
			y, err := p.id(q)
			if err != nil {
				return nil, err
			}
			op := opAnd
			if c.kind == tOr {
				op = opOr
			}
			x = &node{op: op, l: x, r: y}
		}
	case tWord:
		if keywords[t.text] || unsupported[t.text] {
			return nil, p.errAt(t, fmt.Sprintf("a value expected, not %q", t.text))
		}
		if q.bad {
			return nil, p.errAt(t, fmt.Sprintf("%q needs a qualifier such as host, net or port before it", t.text))
		}
		n, err := p.value(q)
		return n, err
	}
	return nil, p.errAt(t, "a value expected")
}

// primitive reads a protocol name, "vlan", or qualifiers followed by a
// value (libpcap's "head id").
func (p *parser) primitive() (*node, qual, error) {
	t := p.peek()
	var q qual
	hasProto := false
	switch t.text {
	case "ip", "ip6", "tcp", "udp":
		p.next()
		hasProto = true
		q.proto = map[string]protoQual{"ip": qIP, "ip6": qIP6, "tcp": qTCP, "udp": qUDP}[t.text]
	case "icmp", "icmp6", "sctp", "arp", "rarp":
		p.next()
		if n := p.peek(); n.kind == tWord && (n.text == "src" || n.text == "dst" || n.text == "host" ||
			n.text == "net" || n.text == "port" || n.text == "portrange") {
			return nil, q, p.errAt(n, fmt.Sprintf("%q after %q is not supported (only %s alone, or %s[offset])", n.text, t.text, t.text, t.text))
		}
		k := map[string]primKind{"icmp": pICMP, "icmp6": pICMP6, "sctp": pSCTP, "arp": pARP, "rarp": pRARP}[t.text]
		return &node{op: opPrim, prim: prim{kind: k, q: qualNone}}, qualNone, nil
	case "ether", "link":
		return nil, q, p.errAt(t, fmt.Sprintf("%q is supported only as %s[offset]", t.text, t.text))
	case "len", "length":
		return nil, q, p.errAt(t, fmt.Sprintf("%q is only for comparisons, such as len > 100", t.text))
	case "less", "greater":
		// libpcap takes a plain number here, no parentheses.
		p.next()
		v := p.next()
		n, ok := numberWord(v.text)
		if v.kind != tWord || !ok {
			return nil, q, p.errAt(v, "a length expected")
		}
		pr := prim{kind: pLen, q: qualNone, p1: n, lenJmp: bpfJGE}
		if t.text == "less" {
			pr.lenJmp = bpfJGT
		}
		return &node{op: opPrim, prim: pr}, qualNone, nil
	case "vlan":
		p.next()
		id := -1
		if v := p.peek(); v.kind == tWord && !keywords[v.text] && !unsupported[v.text] || v.kind == tLParen && p.parenNumber() {
			n, err := p.number("VLAN ID")
			if err != nil {
				return nil, q, err
			}
			if n > 0x0fff {
				return nil, q, p.errAt(v, fmt.Sprintf("VLAN ID %d greater than the maximum 4095", n))
			}
			id = int(n)
		}
		return &node{op: opPrim, prim: prim{kind: pVlan, vlan: id, q: qualNone}}, qualNone, nil
	}
	// Direction.
	d := p.peek()
	hasDir := false
	if d.kind == tWord && (d.text == "src" || d.text == "dst") {
		p.next()
		hasDir = true
		q.dir = qSrc
		if d.text == "dst" {
			q.dir = qDst
		}
		// "src or dst", "src and dst" (and the other way round).
		if c := p.peek(); (c.kind == tOr || c.kind == tAnd) && p.i+1 < len(p.toks) {
			o := p.toks[p.i+1]
			if o.kind == tWord && (o.text == "src" || o.text == "dst") && o.text != d.text {
				p.next()
				p.next()
				q.dir = qSrcOrDst
				if c.kind == tAnd {
					q.dir = qSrcAndDst
				}
			}
		}
	}
	a := p.peek()
	hasAddr := false
	if a.kind == tWord {
		switch a.text {
		case "host":
			q.addr = qHost
		case "net":
			q.addr = qNet
		case "port":
			q.addr = qPort
		case "portrange":
			q.addr = qPortrange
		}
		if q.addr != qAddrDefault {
			p.next()
			hasAddr = true
		}
	}
	if !hasDir && !hasAddr {
		if hasProto {
			// A protocol name alone: "ip", "tcp"...
			k := map[protoQual]primKind{qIP: pIP, qIP6: pIP6, qTCP: pTCP, qUDP: pUDP}[q.proto]
			return &node{op: opPrim, prim: prim{kind: k, q: qualNone}}, qualNone, nil
		}
		switch {
		case unsupported[t.text]:
			return nil, q, p.errAt(t, fmt.Sprintf("%q is not supported (the subset: host, net, port, portrange, src, dst, ip, ip6, tcp, udp, icmp, icmp6, sctp, arp, rarp, vlan, less, greater, proto[offset] comparisons, and, or, not)", t.text))
		case keywords[t.text]:
			return nil, q, p.errAt(t, fmt.Sprintf("unexpected %q", t.text))
		}
		return nil, q, p.errAt(t, fmt.Sprintf("%q needs a qualifier such as host, net or port before it", t.text))
	}
	// Qualifier checks, with libpcap's wording where it has one.
	switch q.addr {
	case qHost, qNet, qAddrDefault:
		if q.proto == qTCP || q.proto == qUDP {
			return nil, q, p.errAt(a, fmt.Sprintf("'%s' modifier applied to %s", protoName(q.proto), addrName(q.addr)))
		}
	case qPort, qPortrange:
		if q.proto == qIP || q.proto == qIP6 {
			return nil, q, p.errAt(a, fmt.Sprintf("illegal qualifier of '%s'", addrName(q.addr)))
		}
	}
	n, err := p.id(q)
	return n, q, err
}

func protoName(q protoQual) string {
	return [...]string{"", "ip", "ip6", "tcp", "udp"}[q]
}

func addrName(q addrQual) string {
	return [...]string{"host", "host", "net", "port", "portrange"}[q]
}

// parenNumber reports whether the tokens from here are "(" ... value ")".
func (p *parser) parenNumber() bool {
	j := p.i
	for j < len(p.toks) && p.toks[j].kind == tLParen {
		j++
	}
	return j < len(p.toks) && p.toks[j].kind == tWord && !keywords[p.toks[j].text]
}

// number reads a number, possibly in parentheses as libpcap allows.
func (p *parser) number(what string) (uint32, error) {
	t := p.next()
	if t.kind == tLParen {
		n, err := p.number(what)
		if err != nil {
			return 0, err
		}
		if c := p.next(); c.kind != tRParen {
			return 0, p.errAt(c, "\")\" expected")
		}
		return n, nil
	}
	if t.kind != tWord {
		return 0, p.errAt(t, what+" expected")
	}
	n, ok := numberWord(t.text)
	if !ok {
		return 0, p.errAt(t, what+" expected")
	}
	return n, nil
}

// parseNum reads a number the way libpcap does: decimal, 0x hexadecimal,
// or octal with a leading 0.
func parseNum(s string) (uint32, bool) {
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= '0' && c <= '9' || base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
		if !ok || base == 8 && c > '7' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, base, 32)
	return uint32(n), err == nil
}

// value reads one value for the qualifiers q.
func (p *parser) value(q qual) (*node, error) {
	t := p.next()
	leaf := func(pr prim) *node {
		pr.q = q
		return &node{op: opPrim, prim: pr}
	}
	switch q.addr {
	case qPort:
		n, ok := numberWord(t.text)
		if !ok {
			return nil, p.errAt(t, "port number expected")
		}
		if n > 65535 {
			return nil, p.errAt(t, fmt.Sprintf("port number %d greater than 65535", n))
		}
		return leaf(prim{kind: pPort, p1: n}), nil
	case qPortrange:
		lo, hi, ok := strings.Cut(t.text, "-")
		a, ok1 := parseDecimal(lo)
		b, ok2 := parseDecimal(hi)
		if !ok || !ok1 || !ok2 {
			return nil, p.errAt(t, "port range expected, such as 9092-9094")
		}
		if a > 65535 || b > 65535 {
			return nil, p.errAt(t, "port number greater than 65535 in range")
		}
		if a > b {
			a, b = b, a
		}
		return leaf(prim{kind: pPortrange, p1: a, p2: b}), nil
	}
	// host, net, or an address with only a direction ("src 10.0.0.1").
	if strings.Contains(t.text, ":") {
		return p.value6(q, t, leaf)
	}
	v, parts, ok := parseIPv4(t.text)
	if !ok {
		if q.addr == qNet {
			return nil, p.errAt(t, "network address expected, such as 10.0.0.0/8")
		}
		return nil, p.errAt(t, "IPv4 or IPv6 address expected")
	}
	if q.proto == qIP6 {
		return nil, p.errAt(t, "'ip6' modifier applied to ip host")
	}
	mask := uint32(0xffffffff) << (32 - 8*parts)
	if parts == 4 {
		mask = 0xffffffff
	}
	if c := p.peek(); c.kind == tSlash || c.kind == tWord && c.text == "mask" {
		if q.addr != qNet {
			return nil, p.errAt(c, "mask syntax is for networks only (net)")
		}
		if parts != 4 {
			// libpcap then reads "10.1" as 10.0.0.1: require all four.
			return nil, p.errAt(t, "a network with a mask needs all four parts of the address")
		}
		p.next()
		if c.kind == tSlash {
			n, err := p.number("mask length")
			if err != nil {
				return nil, err
			}
			if n > 32 {
				return nil, p.errAt(p.toks[p.i-1], fmt.Sprintf("mask length %d greater than 32", n))
			}
			mask = 0
			if n > 0 {
				mask = 0xffffffff << (32 - n)
			}
		} else {
			m := p.next()
			mv, mparts, ok := parseIPv4(m.text)
			if !ok || mparts != 4 {
				return nil, p.errAt(m, "netmask expected, such as 255.255.0.0")
			}
			mask = mv
		}
		if v&^mask != 0 {
			return nil, p.errAt(t, fmt.Sprintf("non-network bits set in %q", t.text))
		}
	} else if parts != 4 {
		if q.addr != qNet {
			return nil, p.errAt(t, "IPv4 address with four parts expected (for a network, use net)")
		}
		v <<= 32 - 8*parts
	}
	return leaf(prim{kind: pHost4, addr: v, mask: mask}), nil
}

func (p *parser) value6(q qual, t token, leaf func(prim) *node) (*node, error) {
	a, err := netip.ParseAddr(t.text)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return nil, p.errAt(t, "IPv6 address expected")
	}
	if q.proto == qIP {
		return nil, p.errAt(t, "'ip' modifier applied to ip6 host")
	}
	bits := 128
	if c := p.peek(); c.kind == tSlash {
		if q.addr != qNet {
			return nil, p.errAt(c, "mask syntax is for networks only (net)")
		}
		p.next()
		n, err := p.number("mask length")
		if err != nil {
			return nil, err
		}
		if n > 128 {
			return nil, p.errAt(p.toks[p.i-1], fmt.Sprintf("mask length %d greater than 128", n))
		}
		bits = int(n)
	} else if c.kind == tWord && c.text == "mask" {
		return nil, p.errAt(c, "mask syntax is for IPv4 networks only; use /length")
	}
	addr := a.As16()
	var mask [16]byte
	for i := 0; i < bits; i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	for i := range addr {
		if addr[i]&^mask[i] != 0 {
			return nil, p.errAt(t, fmt.Sprintf("non-network bits set in \"%s/%d\"", t.text, bits))
		}
	}
	return leaf(prim{kind: pHost6, addr6: addr, mask6: mask}), nil
}

func parseDecimal(s string) (uint32, bool) {
	if s == "" || len(s) > 6 {
		return 0, false
	}
	n := uint32(0)
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + uint32(s[i]-'0')
	}
	return n, true
}

// parseIPv4 reads 1 to 4 dotted decimal parts, each 0-255, left-aligned
// parts count returned (libpcap's "10.1" network form).
func parseIPv4(s string) (v uint32, parts int, ok bool) {
	fs := strings.Split(s, ".")
	if len(fs) > 4 {
		return 0, 0, false
	}
	for _, f := range fs {
		n, ok := parseDecimal(f)
		if !ok || n > 255 || len(f) > 3 {
			return 0, 0, false
		}
		v = v<<8 | n
	}
	return v, len(fs), true
}

// relation reads "arith relop arith".
func (p *parser) relation() (*node, *SyntaxError) {
	first := p.peek()
	l, err := p.arith(0)
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != tRel {
		if l.kind == aNum && first.kind == tWord {
			return nil, p.errAt(first, fmt.Sprintf("%q needs a qualifier such as host, net or port before it, or a comparison after it", first.text))
		}
		if t.kind == tEOF {
			return nil, p.errAt(t, "a comparison such as = or > expected at the end")
		}
		return nil, p.errAt(t, fmt.Sprintf("a comparison such as = or > expected before %q", t.text))
	}
	p.next()
	r, err := p.arith(0)
	if err != nil {
		return nil, err
	}
	rel := &relation{l: l, r: r}
	switch t.text {
	case ">":
		rel.code = bpfJGT
	case ">=":
		rel.code = bpfJGE
	case "=", "==":
		rel.code = bpfJEQ
	case "<=":
		rel.code, rel.reversed = bpfJGT, true
	case "<":
		rel.code, rel.reversed = bpfJGE, true
	case "!=":
		rel.code, rel.reversed = bpfJEQ, true
	}
	return &node{op: opPrim, prim: prim{kind: pRel, q: qualNone, rel: rel}}, nil
}

// binPrec is the precedence of a binary operator, as libpcap's grammar
// declares it (| lowest, then &, shifts, + and -, * and /); 0 for what is
// not one. "%" and "^" have none there, so yacc shifts them: see unary.
func binPrec(t token) int {
	switch {
	case t.kind == tSlash:
		return 5
	case t.kind != tOp:
		return 0
	}
	switch t.text {
	case "|":
		return 1
	case "&":
		return 2
	case "<<", ">>":
		return 3
	case "+", "-":
		return 4
	case "*":
		return 5
	}
	return 0
}

var aluOps = map[string]int32{"+": bpfADD, "-": bpfSUB, "*": bpfMUL, "/": bpfDIV, "%": bpfMOD,
	"&": bpfAND, "|": bpfOR, "^": bpfXOR, "<<": bpfLSH, ">>": bpfRSH}

// arith reads operators of at least precedence min, from the left.
func (p *parser) arith(min int) (*arith, *SyntaxError) {
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		prec := binPrec(t)
		if prec == 0 || prec < min {
			return x, nil
		}
		p.next()
		y, err := p.arith(prec + 1)
		if err != nil {
			return nil, err
		}
		if x, err = p.binop(t, x, y); err != nil {
			return nil, err
		}
	}
}

// unary reads "-" unary, or an operand. libpcap's grammar gives "%" and "^"
// no precedence, so its parser always shifts them: the operand just read
// is their left side and all that follows their right side ("len % 3 + 1"
// is "len % (3 + 1)", "len + 3 % 2" is "len + (3 % 2)").
func (p *parser) unary() (*arith, *SyntaxError) {
	if t := p.peek(); t.kind == tOp && t.text == "-" {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &arith{kind: aNeg, x: x}, nil
	}
	x, err := p.operand()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tOp && (t.text == "%" || t.text == "^") {
		p.next()
		y, err := p.arith(0)
		if err != nil {
			return nil, err
		}
		return p.binop(t, x, y)
	}
	return x, nil
}

// binop makes x op y, refusing what libpcap refuses when it generates the
// code: a division, modulus or shift whose right side starts with a
// constant 0 (or, for a shift, more than 31). libpcap looks at the first
// instruction of the right side only, so "len / (0 + 5)" is refused too.
func (p *parser) binop(t token, x, y *arith) (*arith, *SyntaxError) {
	op := aluOps[t.text]
	first := y
	for first.kind == aBin || first.kind == aNeg || first.kind == aLoad {
		first = first.x
	}
	if first.kind == aNum {
		switch {
		case op == bpfDIV && first.v == 0:
			return nil, p.errAt(t, "division by zero")
		case op == bpfMOD && first.v == 0:
			return nil, p.errAt(t, "modulus by zero")
		case (op == bpfLSH || op == bpfRSH) && first.v > 31:
			return nil, p.errAt(t, "shift by more than 31 bits")
		}
	}
	return &arith{kind: aBin, op: op, x: x, y: y}, nil
}

// operand reads a number, len, proto[offset] or proto[offset:size], or a
// parenthesised arithmetic expression.
func (p *parser) operand() (*arith, *SyntaxError) {
	t := p.next()
	switch t.kind {
	case tLParen:
		x, err := p.arith(0)
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			return nil, p.errAt(c, "\")\" expected")
		}
		return x, nil
	case tWord:
		if t.text == "len" || t.text == "length" {
			return &arith{kind: aLen}, nil
		}
		if v, ok := numberWord(t.text); ok {
			return &arith{kind: aNum, v: v}, nil
		}
		lp, ok := loadProtos[t.text]
		if !ok || p.peek().kind != tLBrack {
			break
		}
		p.next()
		off, err := p.arith(0)
		if err != nil {
			return nil, err
		}
		size := int32(bpfB)
		if c := p.peek(); c.kind == tColon {
			p.next()
			s := p.next()
			n, ok := numberWord(s.text)
			if s.kind != tWord || !ok || n != 1 && n != 2 && n != 4 {
				return nil, p.errAt(s, "data size must be 1, 2, or 4")
			}
			size = map[uint32]int32{1: bpfB, 2: bpfH, 4: bpfW}[n]
		}
		if c := p.next(); c.kind != tRBrack {
			return nil, p.errAt(c, "\"]\" expected")
		}
		return &arith{kind: aLoad, proto: lp, size: size, x: off}, nil
	case tEOF:
		return nil, p.errAt(t, "a number, len or proto[offset] expected at the end")
	}
	return nil, p.errAt(t, fmt.Sprintf("a number, len or proto[offset] expected, not %q", t.text))
}
