package capture

import (
	"runtime/debug"
	"slices"
	"sync/atomic"
)

// Leases let a mapped file's segments go to other goroutines without a
// copy on the reading goroutine (Reader.NextShared). Two things must hold
// for that, and both are kept here, not by the consumer:
//
//   - a segment stays mapped until its consumer is done with it: the
//     consumer takes a Lease over the segments handed out since the one
//     before and releases it when it is done with them, and the Reader
//     gives back pages only behind the oldest lease not released. How far
//     behind its reader a consumer may fall is its own business;
//   - a file cut shorter while it is read faults when its lost pages are
//     read, by any goroutine. So the consumer reads a segment only through
//     Segment.Bytes, which copies it, with faults caught, into the
//     consumer's scratch buffer: a fault is an error there, and the file's
//     problem in Reader.Problems, never a panic in the consumer's code.
//     That copy is made on the consumer's goroutine, into a buffer it
//     reuses for each packet and reads again at once, not on the reading
//     goroutine every other one waits for.

// Segment is a packet's TCP segment as NextShared hands it out: where it
// lies in a mapped file, or in the caller's buffer.
type Segment struct {
	b     []byte
	m     *mappedRecords // nil when b is in the caller's buffer
	frame int64
	// Fixed is the segment's fixed 20-byte TCP header, copied: its ports
	// and flags can be read without reading the segment.
	Fixed [20]byte
}

// Len is the segment's length in bytes.
func (g *Segment) Len() int { return len(g.b) }

// Bytes returns the segment's bytes: as they are when they lie in the
// caller's buffer (or OwnSegments copied them), or else copied out of the
// mapping into *scratch, grown as needed and valid until it is used again
// (scratch is not used for the others, and may then be nil). Call it
// before the segment's lease is released; it is safe for concurrent use
// with different scratch buffers. When the file became shorter and the
// bytes are gone, it returns a *FrameError naming the file and the frame,
// which Reader.Problems also reports; so do the file's later frames.
func (g *Segment) Bytes(scratch *[]byte) ([]byte, error) {
	if g.m == nil {
		return g.b, nil
	}
	return g.m.copySegment(g, scratch)
}

func (r *mappedRecords) copySegment(g *Segment, scratch *[]byte) ([]byte, error) {
	if lost := r.lostFrom.Load(); lost != 0 && g.frame >= lost {
		return nil, &FrameError{File: r.m.name, Frame: g.frame, Err: errShrank}
	}
	if r.m.copyGuarded(scratch, g.b) {
		r.noteLost(g.frame)
		return nil, &FrameError{File: r.m.name, Frame: g.frame, Err: errShrank}
	}
	return *scratch, nil
}

// OwnSegments copies the mapped ones among n segments, seg(0) to
// seg(n-1), out of their files' mappings into *buf (grown as needed) and
// makes them point there: Bytes then returns them as they are. It is
// Bytes for a batch, with faults caught once for the batch rather than
// once a segment, which costs about as much as copying one; call it on the
// consumer's goroutine before the segments' lease is released. The
// segments of a file found shorter are left to Bytes, which returns the
// error for them. The segments copied stay valid as long as *buf is not
// used again.
func OwnSegments(buf *[]byte, n int, seg func(int) *Segment) {
	total := 0
	for i := range n {
		if g := seg(i); g.m != nil {
			total += len(g.b)
		}
	}
	if total == 0 {
		return
	}
	*buf = slices.Grow((*buf)[:0], total) // so that no segment moves
	for i := 0; i < n; {
		i = ownFrom(buf, n, seg, i)
	}
}

// ownFrom is OwnSegments from segment i on, until a fault; it returns
// where to go on.
func ownFrom(buf *[]byte, n int, seg func(int) *Segment, i int) (next int) {
	at := i
	defer catchAt(debug.SetPanicOnFault(true), seg, &at, &next)
	for ; at < n; at++ {
		g := seg(at)
		if g.m == nil {
			continue
		}
		if lost := g.m.lostFrom.Load(); lost != 0 && g.frame >= lost {
			continue // Bytes returns the error
		}
		off := len(*buf)
		*buf = append(*buf, g.b...)
		g.b, g.m = (*buf)[off:len(*buf):len(*buf)], nil
	}
	return n
}

// catchAt ends ownFrom, deferred with what debug.SetPanicOnFault(true)
// returned: it puts that back and, when copying segment *at faulted in its
// file's mapping, notes the frame as lost and sets *next past it. Any other
// panic goes on.
func catchAt(old bool, seg func(int) *Segment, at, next *int) {
	debug.SetPanicOnFault(old)
	if v := recover(); v != nil {
		g := seg(*at)
		if g.m == nil || !g.m.m.isFault(v) {
			panic(v)
		}
		g.m.noteLost(g.frame)
		*next = *at + 1
	}
}

// copyGuarded copies b, in the mapping, into *dst; it returns true when
// that faulted: the file became shorter, and b's pages are gone.
func (m *mapping) copyGuarded(dst *[]byte, b []byte) (faulted bool) {
	defer m.catch(debug.SetPanicOnFault(true), &faulted)
	*dst = append((*dst)[:0], b...)
	return false
}

// catch ends a function that reads m from a consumer's goroutine, deferred
// with what debug.SetPanicOnFault(true) returned: it puts that back and
// sets *faulted when the function faulted in m. Any other panic goes on.
func (m *mapping) catch(old bool, faulted *bool) {
	debug.SetPanicOnFault(old)
	if v := recover(); v != nil {
		if !m.isFault(v) {
			panic(v)
		}
		*faulted = true
	}
}

// noteLost records frame as one whose bytes are gone, keeping the first.
func (r *mappedRecords) noteLost(frame int64) {
	for {
		lost := r.lostFrom.Load()
		if lost != 0 && lost <= frame || r.lostFrom.CompareAndSwap(lost, frame) {
			return
		}
	}
}

// stopped is what stopped s before its end, if anything: the Reader's own
// problem, or an earlier frame whose bytes a consumer found gone.
func (s *source) stopped() error {
	if s.mapped != nil {
		if lost := s.mapped.lostFrom.Load(); lost != 0 {
			if fe, ok := s.stop.(*FrameError); s.stop == nil || ok && lost < fe.Frame {
				return &FrameError{File: s.name, Frame: lost, Err: errShrank}
			}
		}
	}
	return s.stop
}

// Lease keeps the mapped segments it covers mapped until Release.
type Lease struct {
	released atomic.Bool
}

// Release says the consumer is done with the lease's segments; it may be
// called from any goroutine, and on a nil Lease.
func (l *Lease) Release() {
	if l != nil {
		l.released.Store(true)
	}
}

// hold is a lease over a mapped file's segments from offset from on.
type hold struct {
	lease *Lease
	from  int
}

// Lease returns a lease over the segments NextShared handed out since the
// Lease before (or since the start): they stay mapped until it is
// released. Leases are released in any order; the pages of a file are
// given back only behind its oldest lease not released.
func (r *Reader) Lease() *Lease {
	l := new(Lease)
	for _, s := range r.srcs {
		if m := s.mapped; m != nil && m.pendingFrom >= 0 {
			m.holds = append(m.holds, hold{lease: l, from: m.pendingFrom})
			m.pendingFrom = -1
		}
	}
	return l
}

// keep returns where the bytes still needed start: the read position, or
// the first segment handed out and not leased yet, or the oldest lease not
// released. Leases from later calls start later in the file.
func (r *mappedRecords) keep() int {
	limit := r.off
	if r.pendingFrom >= 0 {
		limit = min(limit, r.pendingFrom)
	}
	for len(r.holds) > 0 && r.holds[0].lease.released.Load() {
		r.holds = r.holds[1:]
	}
	if len(r.holds) > 0 {
		limit = min(limit, r.holds[0].from)
	}
	return limit
}
