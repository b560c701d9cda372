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
}

// pendingSet holds a connection's requests awaiting responses in the order
// they were sent. It is small in practice (the requests in flight), so a
// slice searched from the front beats a map.
type pendingSet struct{ list []pendingEntry }

func (p *pendingSet) len() int { return len(p.list) }

func (p *pendingSet) clear() { p.list = p.list[:0] }

// add appends a request; when the set is full the oldest is forgotten and
// add reports it.
func (p *pendingSet) add(corr int32, r pendingReq, max int) (evicted bool) {
	if len(p.list) >= max {
		p.list = p.list[:copy(p.list, p.list[1:])]
		evicted = true
	}
	p.list = append(p.list, pendingEntry{corr, r})
	return evicted
}

func (p *pendingSet) get(corr int32) (pendingReq, bool) {
	for i := range p.list {
		if p.list[i].corr == corr {
			return p.list[i].req, true
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
	for i := range p.list {
		if p.list[i].corr == corr {
			p.list = p.list[:copy(p.list, p.list[i+1:])]
			return i
		}
	}
	return 0
}
