package decode

import "github.com/kidscope/kidscope/kafka"

// pendingReq is a request that awaits its response.
type pendingReq struct {
	h  RequestHeader
	at kafka.FrameRef
	// answer: decode the response in full for its error codes (idWatch).
	answer bool
}

type pendingEntry struct {
	corr int32
	req  pendingReq
	// idCost is the client ID bytes this entry holds alone: none when it
	// shares the string of the entry before it.
	idCost int
}

// pendingSet holds a connection's requests awaiting responses in the order
// they were sent. It is small in practice (the requests in flight), so a
// slice searched from the front beats a map. The entries are buf[head:]:
// forgetting the oldest moves head, and the slice is compacted only once
// head passes half of it, so a flood of requests never answered (each one
// forgetting the oldest of a full set) costs a constant per request, not
// a copy of the whole set.
type pendingSet struct {
	buf     []pendingEntry
	head    int
	idBytes int // the client ID bytes the entries hold
}

// list is the entries, oldest first.
func (p *pendingSet) list() []pendingEntry { return p.buf[p.head:] }

// maxPendingIDBytes caps the client ID bytes a connection's pending
// requests hold: two IDs of the longest a header carries (32,767 bytes).
// A client sends one ID, which its requests share; without the cap,
// MaxPending requests with distinct long IDs would hold 32 MiB.
const maxPendingIDBytes = 64 << 10

func (p *pendingSet) len() int { return len(p.buf) - p.head }

func (p *pendingSet) clear() { p.buf, p.head, p.idBytes = p.buf[:0], 0, 0 }

// add appends a request; when the set is full, or its client IDs over
// maxPendingIDBytes, the oldest are forgotten and add says how many.
func (p *pendingSet) add(corr int32, r pendingReq, max int) (evicted int) {
	e := pendingEntry{corr: corr, req: r, idCost: len(r.h.ClientID)}
	if n := len(p.buf); n > p.head && p.buf[n-1].req.h.ClientID == r.h.ClientID {
		e.req.h.ClientID, e.idCost = p.buf[n-1].req.h.ClientID, 0
	}
	for p.len() > 0 && (p.len() >= max || p.idBytes+e.idCost > maxPendingIDBytes) {
		p.drop(1)
		evicted++
		if p.len() == 0 {
			e.idCost = len(r.h.ClientID) // the string it shared is its own now
		}
	}
	if p.head > 0 && p.head >= len(p.buf)/2 {
		n := copy(p.buf, p.buf[p.head:])
		clear(p.buf[n:]) // the forgotten entries' strings
		p.buf, p.head = p.buf[:n], 0
	}
	p.buf = append(p.buf, e)
	p.idBytes += e.idCost
	return evicted
}

// drop removes the first n entries; the first one left holds its ID alone.
func (p *pendingSet) drop(n int) {
	for _, e := range p.list()[:n] {
		p.idBytes -= e.idCost
	}
	clear(p.buf[p.head : p.head+n])
	p.head += n
	if p.head == len(p.buf) {
		p.buf, p.head = p.buf[:0], 0
	}
	if l := p.list(); len(l) > 0 && l[0].idCost == 0 {
		l[0].idCost = len(l[0].req.h.ClientID)
		p.idBytes += l[0].idCost
	}
}

func (p *pendingSet) get(corr int32) (pendingReq, bool) {
	l := p.list()
	for i := range l {
		if l[i].corr == corr {
			return l[i].req, true
		}
	}
	return pendingReq{}, false
}

// has reports whether a request with this correlation ID is pending.
func (p *pendingSet) has(corr int32) bool {
	_, ok := p.get(corr)
	return ok
}

// take removes the request with this correlation ID and every request sent
// before it, and returns how many of those earlier ones it removed.
func (p *pendingSet) take(corr int32) int {
	for i, e := range p.list() {
		if e.corr == corr {
			p.drop(i + 1)
			return i
		}
	}
	return 0
}
