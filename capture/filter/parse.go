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
	tSlash
	tNot
	tAnd
	tOr
	tWord // a keyword or a value
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
}

var unsupported = map[string]bool{
	"ether": true, "arp": true, "rarp": true, "sctp": true, "icmp": true, "icmp6": true,
	"igmp": true, "gateway": true, "proto": true, "protochain": true, "broadcast": true,
	"multicast": true, "less": true, "greater": true, "mpls": true, "pppoed": true,
	"pppoes": true, "geneve": true, "inbound": true, "outbound": true, "ifname": true,
	"link": true, "decnet": true, "len": true, "llc": true, "wlan": true, "type": true,
	"subtype": true, "dir": true, "ra": true, "ta": true, "addr1": true, "addr2": true,
	"addr3": true, "addr4": true, "iso": true, "isis": true, "atalk": true, "aarp": true,
	"ipx": true, "netbeui": true, "stp": true, "lat": true, "mopdl": true, "moprc": true,
	"sca": true, "vrrp": true, "carp": true, "pim": true, "ah": true, "esp": true,
	"radio": true, "fddi": true, "tr": true, "ppp": true, "slip": true,
}

func lex(expr string) ([]token, *SyntaxError) {
	var toks []token
	i := 0
	for i < len(expr) {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			toks = append(toks, token{tLParen, "(", i})
			i++
		case c == ')':
			toks = append(toks, token{tRParen, ")", i})
			i++
		case c == '/':
			toks = append(toks, token{tSlash, "/", i})
			i++
		case c == '!':
			toks = append(toks, token{tNot, "!", i})
			i++
		case c == '&' || c == '|':
			if i+1 >= len(expr) || expr[i+1] != c {
				return nil, &SyntaxError{expr, i + 1, fmt.Sprintf("%q expected", string([]byte{c, c}))}
			}
			k := tAnd
			if c == '|' {
				k = tOr
			}
			toks = append(toks, token{k, expr[i : i+2], i})
			i += 2
		case isWordByte(c):
			j := i
			for j < len(expr) && isWordByte(expr[j]) {
				j++
			}
			w := expr[i:j]
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
			i = j
		default:
			return nil, &SyntaxError{expr, i + 1, fmt.Sprintf("unexpected character %q", c)}
		}
	}
	toks = append(toks, token{tEOF, "", len(expr)})
	return toks, nil
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == ':' || c == '-' || c == '_' || c == '%'
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
			return !keywords[t.text] && !unsupported[t.text]
		default:
			return false
		}
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
	case tWord:
		return p.primitive()
	case tEOF:
		return nil, q, p.errAt(t, "expression expected at the end")
	}
	return nil, q, p.errAt(t, fmt.Sprintf("unexpected %q", t.text))
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
			return nil, q, p.errAt(t, fmt.Sprintf("%q is not supported (the subset: host, net, port, portrange, src, dst, ip, ip6, tcp, udp, vlan, and, or, not)", t.text))
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
	n, ok := parseNum(t.text)
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
		n, ok := parseNum(t.text)
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
