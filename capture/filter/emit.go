package filter

import "golang.org/x/net/bpf"

// emit lays the graph out as libpcap's icode_to_fcode does: a block comes
// before everything reachable from it, its true successor's code before its
// false successor's (the layout fills the program from the end, visiting
// the false branch first), and a branch farther than 255 instructions goes
// through an extra "ja".
func emit(root *block) []bpf.RawInstruction {
	for {
		e := &emitter{mark: 1}
		n := e.count(root)
		e.prog = make([]bpf.RawInstruction, n)
		e.tail = n
		e.mark++
		if e.convert(root) {
			return e.prog
		}
		// A branch was too long: convert marked it, lay out again.
		clearMarks(root, make(map[*block]bool))
	}
}

func clearMarks(b *block, seen map[*block]bool) {
	if b == nil || seen[b] {
		return
	}
	seen[b] = true
	b.mark = 0
	clearMarks(jt(b), seen)
	clearMarks(jf(b), seen)
}

type emitter struct {
	prog []bpf.RawInstruction
	tail int
	mark int
}

func slength(stmts []*stmt) int {
	n := 0
	for _, s := range stmts {
		if s.code != opNOP {
			n++
		}
	}
	return n
}

func (e *emitter) count(b *block) int {
	if b == nil || b.mark == e.mark {
		return 0
	}
	b.mark = e.mark
	n := e.count(jt(b)) + e.count(jf(b))
	return slength(b.stmts) + n + 1 + b.longjt + b.longjf
}

func (e *emitter) convert(b *block) bool {
	if b == nil || b.mark == e.mark {
		return true
	}
	b.mark = e.mark
	if !e.convert(jf(b)) || !e.convert(jt(b)) {
		return false
	}
	slen := slength(b.stmts)
	e.tail -= slen + 1 + b.longjt + b.longjf
	b.offset = e.tail
	dst := e.tail
	for _, s := range b.stmts {
		if s.code == opNOP {
			continue
		}
		e.prog[dst] = bpf.RawInstruction{Op: uint16(s.code), K: s.k}
		dst++
	}
	ins := &e.prog[dst]
	*ins = bpf.RawInstruction{Op: uint16(b.s.code), K: b.s.k}
	if jt(b) == nil {
		return true
	}
	extra := 0
	off := jt(b).offset - (b.offset + slen) - 1
	if off >= 256 {
		if b.longjt == 0 {
			b.longjt++
			return false
		}
		ins.Jt = uint8(extra)
		extra++
		e.prog[dst+extra] = bpf.RawInstruction{Op: bpfJMP | bpfJA, K: uint32(off - extra)}
	} else {
		ins.Jt = uint8(off)
	}
	off = jf(b).offset - (b.offset + slen) - 1
	if off >= 256 {
		if b.longjf == 0 {
			b.longjf++
			return false
		}
		ins.Jf = uint8(extra)
		extra++
		e.prog[dst+extra] = bpf.RawInstruction{Op: bpfJMP | bpfJA, K: uint32(off - extra)}
	} else {
		ins.Jf = uint8(off)
	}
	return true
}
