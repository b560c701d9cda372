package reassembly

// The pages a direction holds out of order are kept in a treap ordered by
// sequence number, so that placing a segment that arrives in any order
// costs a number of steps logarithmic in the pages held, not linear: a
// capture of segments in random order would otherwise take time
// quadratic in the pages a connection may hold. The nodes live in an
// arena of the assembler, named by index, so that held pages cost no
// allocation of their own and the tree holds no pointer for the garbage
// collector to follow but the pages' bytes.
//
// Pages are ordered by how far they lie after the direction's next
// sequence number, modulo 2^32: every held page lies after it, and the
// bytes held span far less than 2^32, so that order is total and does not
// change as next moves on (it only moves to held pages or before them).

// node is a held page in the tree; index 0 is no node.
type node struct {
	page
	left, right int32
	prio        uint32
}

// heldTree is a direction's held pages.
type heldTree struct {
	root int32
	n    int // pages held
}

// arena holds the tree nodes of every connection of an
// assembler.
type arena struct {
	nodes []node // nodes[0] is unused: index 0 is no node
	free  []int32
	rng   uint32
	// steps counts the nodes visited by tree operations, so that tests can
	// check the work done stays logarithmic per segment whatever the order
	// the segments come in.
	steps int64
}

func (ps *arena) alloc(p page) int32 {
	if len(ps.nodes) == 0 {
		ps.nodes = append(ps.nodes, node{})
		ps.rng = 0x9e3779b9
	}
	// xorshift: priorities need only be spread, not unpredictable, and a
	// fixed sequence keeps runs the same.
	ps.rng ^= ps.rng << 13
	ps.rng ^= ps.rng >> 17
	ps.rng ^= ps.rng << 5
	nd := node{page: p, prio: ps.rng}
	if k := len(ps.free); k > 0 {
		i := ps.free[k-1]
		ps.free = ps.free[:k-1]
		ps.nodes[i] = nd
		return i
	}
	ps.nodes = append(ps.nodes, nd)
	return int32(len(ps.nodes) - 1)
}

func (ps *arena) release(i int32) {
	ps.nodes[i] = node{} // drop its bytes
	ps.free = append(ps.free, i)
}

// off is how far sequence number seq lies after base.
func off(seq, base uint32) int64 { return int64(seq - base) }

// split divides tree t into the pages before offset k from base and those
// at or after it.
func (ps *arena) split(t int32, k int64, base uint32) (l, r int32) {
	if t == 0 {
		return 0, 0
	}
	ps.steps++
	nd := &ps.nodes[t]
	if off(nd.seq, base) < k {
		a, b := ps.split(nd.right, k, base)
		ps.nodes[t].right = a
		return t, b
	}
	a, b := ps.split(nd.left, k, base)
	ps.nodes[t].left = b
	return a, t
}

// merge joins trees l and r, every page of l before every page of r.
func (ps *arena) merge(l, r int32) int32 {
	if l == 0 {
		return r
	}
	if r == 0 {
		return l
	}
	ps.steps++
	if ps.nodes[l].prio > ps.nodes[r].prio {
		ps.nodes[l].right = ps.merge(ps.nodes[l].right, r)
		return l
	}
	ps.nodes[r].left = ps.merge(l, ps.nodes[r].left)
	return r
}

// first returns the first page of t (t not empty).
func (ps *arena) first(t int32) int32 {
	for ps.nodes[t].left != 0 {
		ps.steps++
		t = ps.nodes[t].left
	}
	return t
}

// last returns the last page of t (t not empty).
func (ps *arena) last(t int32) int32 {
	for ps.nodes[t].right != 0 {
		ps.steps++
		t = ps.nodes[t].right
	}
	return t
}

// popFirst takes the first page out of t and returns the new root and the
// page's node, which the caller releases.
func (ps *arena) popFirst(t int32) (root, first int32) {
	if ps.nodes[t].left == 0 {
		root = ps.nodes[t].right
		ps.nodes[t].right = 0
		return root, t
	}
	parent := t
	for {
		ps.steps++
		l := ps.nodes[parent].left
		if ps.nodes[l].left == 0 {
			ps.nodes[parent].left = ps.nodes[l].right
			ps.nodes[l].right = 0
			return t, l
		}
		parent = l
	}
}

// eachBackward calls f on the pages of t from the last to the first.
func (ps *arena) eachBackward(t int32, f func(p *page)) {
	for t != 0 {
		ps.eachBackward(ps.nodes[t].right, f)
		f(&ps.nodes[t].page)
		t = ps.nodes[t].left
	}
}

// releaseAll releases every node of t.
func (ps *arena) releaseAll(t int32) {
	for t != 0 {
		ps.releaseAll(ps.nodes[t].right)
		l := ps.nodes[t].left
		ps.release(t)
		t = l
	}
}
