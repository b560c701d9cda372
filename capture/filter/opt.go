package filter

import (
	"errors"
	"math/bits"
)

// The optimizer works the way libpcap's optimize.c does, so that its
// output is tcpdump's instruction for instruction: global value numbering
// of loads, removal of loads whose value is already in a register, folding
// of branches whose outcome a dominating edge decides (jump threading over
// edge dominators), pulling up repeated tests of one value through "or"
// and "and" chains, dead-store removal, a peephole pass, and finally
// merging identical blocks. The algorithms follow libpcap's design (BSD
// licence, The Regents of the University of California); this is an
// independent Go implementation of them for the instructions the code
// generator emits.

const (
	memWords = 16
	aAtom    = memWords
	xAtom    = memWords + 1
	nAtoms   = memWords + 2
	axAtom   = nAtoms // both A and X

	valUnknown = 0
)

type valKey struct {
	code   int32
	v0, v1 uint32
}

type optimizer struct {
	root     **block
	blocks   []*block
	edges    []*edge
	levels   []*block
	nodeW    int // words of a node set
	edgeW    int // words of an edge set
	done     bool
	nonBr    bool // something other than a branch moved in this pass
	mark     int
	curval   uint32
	vals     map[valKey]uint32
	isConst  []bool
	constVal []uint32
	err      error // what libpcap's optimizer refuses: a division by zero found by folding constants
}

func setInsert(s []uint32, i int)      { s[i/32] |= 1 << (i % 32) }
func setMember(s []uint32, i int) bool { return s[i/32]&(1<<(i%32)) != 0 }
func setIntersect(a, b []uint32) {
	for i := range a {
		a[i] &= b[i]
	}
}

func (o *optimizer) unmarkAll()             { o.mark++ }
func (o *optimizer) isMarked(b *block) bool { return b.mark == o.mark }
func (o *optimizer) setMark(b *block)       { b.mark = o.mark }

// optimize rewrites the graph under *root in place.
func optimize(root **block) error {
	o := &optimizer{root: root, mark: 1}
	o.init()
	o.loop(false)
	if o.err == nil {
		o.loop(true)
	}
	if o.err != nil {
		return o.err
	}
	o.intern()
	optRoot(root)
	return nil
}

func (o *optimizer) fail(msg string) {
	if o.err == nil {
		o.err = errors.New(msg)
	}
}

func (o *optimizer) numberBlocks(b *block) {
	if b == nil || o.isMarked(b) {
		return
	}
	o.setMark(b)
	b.id = len(o.blocks)
	o.blocks = append(o.blocks, b)
	o.numberBlocks(jt(b))
	o.numberBlocks(jf(b))
}

func (o *optimizer) init() {
	o.unmarkAll()
	o.numberBlocks(*o.root)
	n := len(o.blocks)
	o.nodeW = n/32 + 1
	o.edgeW = 2*n/32 + 1
	o.edges = make([]*edge, 2*n)
	for i, b := range o.blocks {
		b.et.id, b.ef.id = i, n+i
		b.et.pred, b.ef.pred = b, b
		o.edges[i], o.edges[n+i] = &b.et, &b.ef
		b.dom = make([]uint32, o.nodeW)
		b.et.edom = make([]uint32, o.edgeW)
		b.ef.edom = make([]uint32, o.edgeW)
	}
	o.levels = make([]*block, n+1)
}

func (o *optimizer) loop(doStmts bool) {
	count := 0
	for {
		o.done = true
		o.nonBr = false
		o.findLevels()
		o.findDom()
		o.findUD()
		o.findEdom()
		o.blks(doStmts)
		if o.done || o.err != nil {
			return
		}
		// A pass that only moves branches around may do so forever (two
		// shapes in turn): give up after 100 of them in a row, as libpcap.
		if o.nonBr {
			count = 0
		} else if count++; count >= 100 {
			return
		}
	}
}

func (o *optimizer) findLevels() {
	for i := range o.levels {
		o.levels[i] = nil
	}
	o.unmarkAll()
	o.findLevelsR(*o.root)
}

func (o *optimizer) findLevelsR(b *block) {
	if o.isMarked(b) {
		return
	}
	o.setMark(b)
	b.link = nil
	level := 0
	if jt(b) != nil {
		o.findLevelsR(jt(b))
		o.findLevelsR(jf(b))
		level = max(jt(b).level, jf(b).level) + 1
	}
	b.level = level
	b.link = o.levels[level]
	o.levels[level] = b
}

func (o *optimizer) findDom() {
	for _, b := range o.blocks {
		for i := range b.dom {
			b.dom[i] = 0xffffffff
		}
	}
	root := *o.root
	for i := range root.dom {
		root.dom[i] = 0
	}
	for i := root.level; i >= 0; i-- {
		for b := o.levels[i]; b != nil; b = b.link {
			setInsert(b.dom, b.id)
			if jt(b) == nil {
				continue
			}
			setIntersect(jt(b).dom, b.dom)
			setIntersect(jf(b).dom, b.dom)
		}
	}
}

func atomUse(s *stmt) int {
	c := s.code
	if c == opNOP {
		return -1
	}
	switch bpfClass(c) {
	case bpfRET:
		switch c & 0x18 {
		case bpfA:
			return aAtom
		case bpfX:
			return xAtom
		}
		return -1
	case bpfLD, bpfLDX:
		switch bpfMode(c) {
		case bpfIND:
			return xAtom
		case bpfMEM:
			return int(s.k)
		}
		return -1
	case bpfST:
		return aAtom
	case bpfSTX:
		return xAtom
	case bpfJMP, bpfALU:
		if bpfSrc(c) == bpfX {
			return axAtom
		}
		return aAtom
	case bpfMISC:
		if c&0xf8 == bpfTXA {
			return xAtom
		}
		return aAtom
	}
	return -1
}

func atomDef(s *stmt) int {
	if s.code == opNOP {
		return -1
	}
	switch bpfClass(s.code) {
	case bpfLD, bpfALU:
		return aAtom
	case bpfLDX:
		return xAtom
	case bpfST, bpfSTX:
		return int(s.k)
	case bpfMISC:
		if s.code&0xf8 == bpfTAX {
			return xAtom
		}
		return aAtom
	}
	return -1
}

func addUse(use *uint32, def uint32, atom int) {
	if atom == axAtom {
		if def&(1<<xAtom) == 0 {
			*use |= 1 << xAtom
		}
		if def&(1<<aAtom) == 0 {
			*use |= 1 << aAtom
		}
	} else if def&(1<<atom) == 0 {
		*use |= 1 << atom
	}
}

func computeLocalUD(b *block) {
	var def, use, killed uint32
	for _, s := range b.stmts {
		if s.code == opNOP {
			continue
		}
		if a := atomUse(s); a >= 0 {
			addUse(&use, def, a)
		}
		if a := atomDef(s); a >= 0 {
			if use&(1<<a) == 0 {
				killed |= 1 << a
			}
			def |= 1 << a
		}
	}
	if bpfClass(b.s.code) == bpfJMP {
		if a := atomUse(&b.s); a >= 0 {
			addUse(&use, def, a)
		}
	}
	b.def, b.kill, b.inUse = def, killed, use
}

func (o *optimizer) findUD() {
	root := *o.root
	for i := root.level; i >= 0; i-- {
		for b := o.levels[i]; b != nil; b = b.link {
			computeLocalUD(b)
			b.outUse = 0
		}
	}
	for i := 1; i <= root.level; i++ {
		for b := o.levels[i]; b != nil; b = b.link {
			b.outUse |= jt(b).inUse | jf(b).inUse
			b.inUse |= b.outUse &^ b.kill
		}
	}
}

func (o *optimizer) propEdom(e *edge) {
	setInsert(e.edom, e.id)
	if e.succ != nil {
		setIntersect(e.succ.et.edom, e.edom)
		setIntersect(e.succ.ef.edom, e.edom)
	}
}

func (o *optimizer) findEdom() {
	for _, e := range o.edges {
		for i := range e.edom {
			e.edom[i] = 0xffffffff
		}
	}
	root := *o.root
	clear(root.et.edom)
	clear(root.ef.edom)
	for i := root.level; i >= 0; i-- {
		for b := o.levels[i]; b != nil; b = b.link {
			o.propEdom(&b.et)
			o.propEdom(&b.ef)
		}
	}
}

// Value numbering.

func (o *optimizer) initVal() {
	o.curval = 0
	o.vals = make(map[valKey]uint32)
	o.isConst = o.isConst[:0]
	o.constVal = o.constVal[:0]
	o.isConst = append(o.isConst, false)
	o.constVal = append(o.constVal, 0)
}

func (o *optimizer) f(code int32, v0, v1 uint32) uint32 {
	key := valKey{code, v0, v1}
	if v, ok := o.vals[key]; ok {
		return v
	}
	o.curval++
	v := o.curval
	o.vals[key] = v
	c := bpfMode(code) == bpfIMM && (bpfClass(code) == bpfLD || bpfClass(code) == bpfLDX)
	o.isConst = append(o.isConst, c)
	o.constVal = append(o.constVal, v0)
	return v
}

func (o *optimizer) kval(k uint32) uint32 { return o.f(bpfLD|bpfIMM|bpfW, k, 0) }

func vstore(s *stmt, valp *uint32, newval uint32, alter bool) {
	if alter && newval != valUnknown && *valp == newval {
		s.code = opNOP
	} else {
		*valp = newval
	}
}

// foldOp computes a constant ALU operation into a load of the result.
func (o *optimizer) foldOp(s *stmt, v0, v1 uint32) {
	a, b := o.constVal[v0], o.constVal[v1]
	switch bpfOp(s.code) {
	case bpfADD:
		a += b
	case bpfSUB:
		a -= b
	case bpfMUL:
		a *= b
	case bpfDIV:
		if b == 0 {
			o.fail("division by zero")
			return
		}
		a /= b
	case bpfMOD:
		if b == 0 {
			o.fail("modulus by zero")
			return
		}
		a %= b
	case bpfAND:
		a &= b
	case bpfOR:
		a |= b
	case bpfXOR:
		a ^= b
	case bpfLSH:
		a = shl(a, b)
	case bpfRSH:
		a = shr(a, b)
	}
	s.k = a
	s.code = bpfLD | bpfIMM
	o.nonBr = true
	o.done = false
}

func (o *optimizer) optStmt(s *stmt, val *[nAtoms]uint32, alter bool) {
	switch c := s.code; {
	case c == bpfLD|bpfABS|bpfW || c == bpfLD|bpfABS|bpfH || c == bpfLD|bpfABS|bpfB:
		vstore(s, &val[aAtom], o.f(c, s.k, 0), alter)
	case c == bpfLD|bpfIND|bpfW || c == bpfLD|bpfIND|bpfH || c == bpfLD|bpfIND|bpfB:
		v := val[xAtom]
		if alter && o.isConst[v] {
			s.code = bpfLD | bpfABS | bpfSize(c)
			s.k += o.constVal[v]
			v = o.f(s.code, s.k, 0)
			o.nonBr = true
			o.done = false
		} else {
			v = o.f(c, s.k, v)
		}
		vstore(s, &val[aAtom], v, alter)
	case c == bpfLD|bpfLEN:
		vstore(s, &val[aAtom], o.f(c, 0, 0), alter)
	case c == bpfLD|bpfIMM:
		vstore(s, &val[aAtom], o.kval(s.k), alter)
	case c == bpfLDX|bpfIMM:
		vstore(s, &val[xAtom], o.kval(s.k), alter)
	case c == bpfLDX|bpfMSH|bpfB:
		vstore(s, &val[xAtom], o.f(c, s.k, 0), alter)
	case c == bpfALU|bpfNEG:
		if alter && o.isConst[val[aAtom]] {
			s.code = bpfLD | bpfIMM
			s.k = -o.constVal[val[aAtom]]
			val[aAtom] = o.kval(s.k)
		} else {
			val[aAtom] = o.f(c, val[aAtom], 0)
		}
	case bpfClass(c) == bpfALU && bpfSrc(c) == bpfK:
		op := bpfOp(c)
		if alter {
			if s.k == 0 {
				switch op {
				case bpfADD, bpfLSH, bpfRSH, bpfOR, bpfXOR:
					s.code = opNOP
					return
				case bpfMUL, bpfAND:
					s.code = bpfLD | bpfIMM
					val[aAtom] = o.kval(s.k)
					return
				case bpfDIV:
					o.fail("division by zero")
				case bpfMOD:
					o.fail("modulus by zero")
				}
			}
			if o.isConst[val[aAtom]] {
				o.foldOp(s, val[aAtom], o.kval(s.k))
				val[aAtom] = o.kval(s.k)
				return
			}
		}
		val[aAtom] = o.f(c, val[aAtom], o.kval(s.k))
	case bpfClass(c) == bpfALU && bpfSrc(c) == bpfX:
		op := bpfOp(c)
		if alter && o.isConst[val[xAtom]] {
			if o.isConst[val[aAtom]] {
				o.foldOp(s, val[aAtom], val[xAtom])
				val[aAtom] = o.kval(s.k)
				return
			}
			s.code = bpfALU | bpfK | op
			s.k = o.constVal[val[xAtom]]
			if (op == bpfLSH || op == bpfRSH) && s.k > 31 {
				o.fail("shift by more than 31 bits")
			}
			o.nonBr = true
			o.done = false
			val[aAtom] = o.f(s.code, val[aAtom], o.kval(s.k))
			return
		}
		// An operation on an A known to be 0 may simplify, which can
		// open up further optimizations.
		if alter && o.isConst[val[aAtom]] && o.constVal[val[aAtom]] == 0 {
			switch op {
			case bpfADD, bpfOR, bpfXOR:
				s.code = bpfMISC | bpfTXA
				vstore(s, &val[aAtom], val[xAtom], alter)
				return
			case bpfMUL, bpfDIV, bpfMOD, bpfAND, bpfLSH, bpfRSH:
				s.code = bpfLD | bpfIMM
				s.k = 0
				vstore(s, &val[aAtom], o.kval(s.k), alter)
				return
			}
		}
		val[aAtom] = o.f(c, val[aAtom], val[xAtom])
	case c == bpfMISC|bpfTXA:
		vstore(s, &val[aAtom], val[xAtom], alter)
	case c == bpfLD|bpfMEM:
		v := val[s.k%memWords]
		if alter && o.isConst[v] {
			s.code = bpfLD | bpfIMM
			s.k = o.constVal[v]
			o.nonBr = true
			o.done = false
		}
		vstore(s, &val[aAtom], v, alter)
	case c == bpfMISC|bpfTAX:
		vstore(s, &val[xAtom], val[aAtom], alter)
	case c == bpfLDX|bpfMEM:
		v := val[s.k%memWords]
		if alter && o.isConst[v] {
			s.code = bpfLDX | bpfIMM
			s.k = o.constVal[v]
			o.nonBr = true
			o.done = false
		}
		vstore(s, &val[xAtom], v, alter)
	case c == bpfST:
		vstore(s, &val[s.k%memWords], val[aAtom], alter)
	case c == bpfSTX:
		vstore(s, &val[s.k%memWords], val[xAtom], alter)
	}
}

func nextOp(stmts []*stmt, i int) int {
	for i < len(stmts) && stmts[i].code == opNOP {
		i++
	}
	return i
}

func optNot(b *block) { b.et.succ, b.ef.succ = b.ef.succ, b.et.succ }

func (o *optimizer) peep(b *block) {
	if len(b.stmts) == 0 {
		return
	}
	last := b.stmts[0]
	for i := 0; ; {
		i = nextOp(b.stmts, i)
		if i >= len(b.stmts) {
			break
		}
		j := nextOp(b.stmts, i+1)
		if j >= len(b.stmts) {
			break
		}
		s, next := b.stmts[i], b.stmts[j]
		last = next
		i = j
		// st M[k]; ldx M[k] -> st M[k]; tax
		if s.code == bpfST && next.code == bpfLDX|bpfMEM && s.k == next.k {
			o.nonBr = true
			o.done = false
			next.code = bpfMISC | bpfTAX
		}
		// ld #k; tax -> ldx #k; txa
		if s.code == bpfLD|bpfIMM && next.code == bpfMISC|bpfTAX {
			s.code = bpfLDX | bpfIMM
			next.code = bpfMISC | bpfTXA
			o.nonBr = true
			o.done = false
		}
		// ld #k; [ldxb 4*([n]&0xf);] add x; tax; ld [x+m] -> ld [x+m+k],
		// which is what tcp[k] becomes, when nothing after the block
		// uses X.
		if s.code == bpfLD|bpfIMM {
			if b.outUse&(1<<xAtom) != 0 {
				continue
			}
			a := j
			if next.code == bpfLDX|bpfMSH|bpfB {
				a = nextOp(b.stmts, j+1)
			}
			if a >= len(b.stmts) || b.stmts[a].code != bpfALU|bpfADD|bpfX {
				continue
			}
			t := nextOp(b.stmts, a+1)
			if t >= len(b.stmts) || b.stmts[t].code != bpfMISC|bpfTAX {
				continue
			}
			l := nextOp(b.stmts, t+1)
			if l >= len(b.stmts) || bpfClass(b.stmts[l].code) != bpfLD || bpfMode(b.stmts[l].code) != bpfIND {
				continue
			}
			b.stmts[l].k += s.k
			s.code = opNOP
			b.stmts[a].code = opNOP
			b.stmts[t].code = opNOP
			o.nonBr = true
			o.done = false
		}
	}
	if b.s.code == bpfJMP|bpfJEQ|bpfK && b.outUse&(1<<aAtom) == 0 {
		switch {
		case last.code == bpfALU|bpfSUB|bpfX:
			if v := b.val[xAtom]; o.isConst[v] {
				// sub x; jeq #y -> jeq #(x+y), X being a known constant
				b.s.k += o.constVal[v]
				last.code = opNOP
				o.nonBr = true
				o.done = false
			} else if b.s.k == 0 {
				// sub x; jeq #0 -> jeq x
				last.code = opNOP
				b.s.code = bpfJMP | bpfJEQ | bpfX
				o.nonBr = true
				o.done = false
			}
		case last.code == bpfALU|bpfSUB|bpfK:
			// sub #x; jeq #y -> jeq #(x+y)
			last.code = opNOP
			b.s.k += last.k
			o.nonBr = true
			o.done = false
		case last.code == bpfALU|bpfAND|bpfK && b.s.k == 0:
			// and #k; jeq #0 -> jset #k, with the branches swapped
			b.s.k = last.k
			b.s.code = bpfJMP | bpfK | bpfJSET
			last.code = opNOP
			o.nonBr = true
			o.done = false
			optNot(b)
		}
	}
	if b.s.code == bpfJMP|bpfK|bpfJSET {
		if b.s.k == 0 {
			b.et.succ = jf(b)
		}
		if b.s.k == 0xffffffff {
			b.ef.succ = jt(b)
		}
	}
	if v := b.val[xAtom]; o.isConst[v] && bpfSrc(b.s.code) == bpfX {
		b.s.code &^= bpfX
		b.s.k = o.constVal[v]
	}
	if v := b.val[aAtom]; o.isConst[v] && bpfSrc(b.s.code) == bpfK {
		a := o.constVal[v]
		var taken bool
		switch bpfOp(b.s.code) {
		case bpfJEQ:
			taken = a == b.s.k
		case bpfJGT:
			taken = a > b.s.k
		case bpfJGE:
			taken = a >= b.s.k
		case bpfJSET:
			taken = a&b.s.k != 0
		default:
			return
		}
		if jf(b) != jt(b) {
			o.nonBr = true
			o.done = false
		}
		if taken {
			b.ef.succ = jt(b)
		} else {
			b.et.succ = jf(b)
		}
	}
}

func (o *optimizer) deadStmt(s *stmt, last *[nAtoms]*stmt) {
	if a := atomUse(s); a >= 0 {
		if a == axAtom {
			last[xAtom] = nil
			last[aAtom] = nil
		} else {
			last[a] = nil
		}
	}
	if a := atomDef(s); a >= 0 {
		if last[a] != nil {
			o.nonBr = true
			o.done = false
			last[a].code = opNOP
		}
		last[a] = s
	}
}

func (o *optimizer) deadStores(b *block) {
	var last [nAtoms]*stmt
	for _, s := range b.stmts {
		o.deadStmt(s, &last)
	}
	o.deadStmt(&b.s, &last)
	for a := 0; a < nAtoms; a++ {
		if last[a] != nil && b.outUse&(1<<a) == 0 {
			last[a].code = opNOP
			b.val[a] = valUnknown
			o.nonBr = true
			o.done = false
		}
	}
}

func (o *optimizer) blk(b *block, doStmts bool) {
	if e := b.inEdges; e == nil {
		b.val = [nAtoms]uint32{}
	} else {
		b.val = e.pred.val
		for e = e.next; e != nil; e = e.next {
			for i := range b.val {
				if b.val[i] != e.pred.val[i] {
					b.val[i] = valUnknown
				}
			}
		}
	}
	aval, xval := b.val[aAtom], b.val[xAtom]
	for _, s := range b.stmts {
		o.optStmt(s, &b.val, doStmts)
	}
	if doStmts && (b.outUse == 0 && aval != valUnknown && b.val[aAtom] == aval &&
		xval != valUnknown && b.val[xAtom] == xval || bpfClass(b.s.code) == bpfRET) {
		if len(b.stmts) != 0 {
			b.stmts = nil
			o.nonBr = true
			o.done = false
		}
	} else {
		o.peep(b)
		o.deadStores(b)
	}
	if bpfSrc(b.s.code) == bpfK {
		b.oval = o.kval(b.s.k)
	} else {
		b.oval = b.val[xAtom]
	}
	b.et.code = b.s.code
	b.ef.code = -b.s.code
}

// useConflict reports whether a register used on leaving succ holds a
// different value on leaving b.
func useConflict(b, succ *block) bool {
	use := succ.outUse
	if use == 0 {
		return false
	}
	for a := 0; a < nAtoms; a++ {
		if use&(1<<a) != 0 && b.val[a] != succ.val[a] {
			return true
		}
	}
	return false
}

// foldEdge returns where child's branch goes when edge e was taken on the
// way to it, if e decides it, or nil.
func foldEdge(child *block, e *edge) *block {
	code := e.code
	sense := true
	if code < 0 {
		code, sense = -code, false
	}
	if child.s.code != code {
		return nil
	}
	if child.val[aAtom] != e.pred.val[aAtom] {
		return nil
	}
	if child.oval == e.pred.oval {
		if sense {
			return jt(child)
		}
		return jf(child)
	}
	if sense && code == bpfJMP|bpfJEQ|bpfK {
		return jf(child)
	}
	return nil
}

func (o *optimizer) optJ(e *edge) {
	if jt(e.succ) == nil {
		return
	}
	if jt(e.succ) == jf(e.succ) {
		if !useConflict(e.pred, jt(e.succ)) {
			o.nonBr = true
			o.done = false
			e.succ = jt(e.succ)
		}
	}
top:
	for i := 0; i < o.edgeW; i++ {
		x := e.edom[i]
		for x != 0 {
			k := bits.TrailingZeros32(x)
			x &^= 1 << k
			k += i * 32
			target := foldEdge(e.succ, o.edges[k])
			if target != nil && !useConflict(e.pred, target) {
				o.done = false
				e.succ = target
				if jt(target) != nil {
					goto top
				}
				return
			}
		}
	}
}

// pullup is libpcap's or_pullup (or true) and and_pullup (or false).
func (o *optimizer) pullup(b *block, or bool) {
	same := func(x *block) *block { // the shared exit
		if or {
			return jt(x)
		}
		return jf(x)
	}
	chain := func(x *block) **block { // the way down the chain
		if or {
			return &x.ef.succ
		}
		return &x.et.succ
	}
	e := b.inEdges
	if e == nil {
		return
	}
	val := e.pred.val[aAtom]
	for e = e.next; e != nil; e = e.next {
		if val != e.pred.val[aAtom] {
			return
		}
	}
	var diffp **block
	if jt(b.inEdges.pred) == b {
		diffp = &b.inEdges.pred.et.succ
	} else {
		diffp = &b.inEdges.pred.ef.succ
	}
	atTop := true
	for {
		if *diffp == nil || same(*diffp) != same(b) || !setMember((*diffp).dom, b.id) {
			return
		}
		if (*diffp).val[aAtom] != val {
			break
		}
		diffp = chain(*diffp)
		atTop = false
	}
	samep := chain(*diffp)
	for {
		if *samep == nil || same(*samep) != same(b) || !setMember((*samep).dom, b.id) {
			return
		}
		if (*samep).val[aAtom] == val {
			break
		}
		samep = chain(*samep)
	}
	pull := *samep
	*samep = *chain(pull)
	*chain(pull) = *diffp
	if atTop {
		for e := b.inEdges; e != nil; e = e.next {
			if jt(e.pred) == b {
				e.pred.et.succ = pull
			} else {
				e.pred.ef.succ = pull
			}
		}
	} else {
		*diffp = pull
	}
	o.done = false
}

func (o *optimizer) findInEdges() {
	for _, b := range o.blocks {
		b.inEdges = nil
	}
	root := *o.root
	for i := root.level; i > 0; i-- {
		for b := o.levels[i]; b != nil; b = b.link {
			b.et.next = jt(b).inEdges
			jt(b).inEdges = &b.et
			b.ef.next = jf(b).inEdges
			jf(b).inEdges = &b.ef
		}
	}
}

func (o *optimizer) blks(doStmts bool) {
	o.initVal()
	root := *o.root
	maxLevel := root.level
	o.findInEdges()
	for i := maxLevel; i >= 0; i-- {
		for b := o.levels[i]; b != nil; b = b.link {
			o.blk(b, doStmts)
		}
	}
	if doStmts {
		return
	}
	for i := 1; i <= maxLevel; i++ {
		for b := o.levels[i]; b != nil; b = b.link {
			o.optJ(&b.et)
			o.optJ(&b.ef)
		}
	}
	o.findInEdges()
	for i := 1; i <= maxLevel; i++ {
		for b := o.levels[i]; b != nil; b = b.link {
			o.pullup(b, true)
			o.pullup(b, false)
		}
	}
}

func eqStmts(x, y []*stmt) bool {
	i, j := 0, 0
	for {
		i, j = nextOp(x, i), nextOp(y, j)
		if i >= len(x) || j >= len(y) {
			return i >= len(x) && j >= len(y)
		}
		if x[i].code != y[j].code || x[i].k != y[j].k {
			return false
		}
		i++
		j++
	}
}

func eqBlk(a, b *block) bool {
	return a.s.code == b.s.code && a.s.k == b.s.k && jt(a) == jt(b) && jf(a) == jf(b) &&
		eqStmts(a.stmts, b.stmts)
}

func (o *optimizer) markCode(b *block) {
	if b == nil || o.isMarked(b) {
		return
	}
	o.setMark(b)
	o.markCode(jt(b))
	o.markCode(jf(b))
}

// intern merges identical blocks until none are left.
func (o *optimizer) intern() {
	n := len(o.blocks)
	for {
		done := true
		for _, b := range o.blocks {
			b.link = nil
		}
		o.unmarkAll()
		o.markCode(*o.root)
		for i := n - 1; i > 0; {
			i--
			if !o.isMarked(o.blocks[i]) {
				continue
			}
			for j := i + 1; j < n; j++ {
				if !o.isMarked(o.blocks[j]) {
					continue
				}
				if eqBlk(o.blocks[i], o.blocks[j]) {
					if o.blocks[j].link != nil {
						o.blocks[i].link = o.blocks[j].link
					} else {
						o.blocks[i].link = o.blocks[j]
					}
					break
				}
			}
		}
		for _, p := range o.blocks {
			if jt(p) == nil {
				continue
			}
			if jt(p).link != nil {
				done = false
				p.et.succ = jt(p).link
			}
			if jf(p).link != nil {
				done = false
				p.ef.succ = jf(p).link
			}
		}
		if done {
			return
		}
	}
}

// optRoot skips root branches that go the same way either way, keeping
// their statements, as libpcap does.
func optRoot(root **block) {
	s := (*root).stmts
	(*root).stmts = nil
	for bpfClass((*root).s.code) == bpfJMP && jt(*root) == jf(*root) {
		*root = jt(*root)
	}
	s = append(s, (*root).stmts...)
	(*root).stmts = s
	if bpfClass((*root).s.code) == bpfRET {
		(*root).stmts = nil
	}
}
