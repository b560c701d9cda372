package decode

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/kidscope/kidscope/kafka"
)

// verdict is what the resynchroniser thinks of a candidate frame start.
type verdict uint8

const (
	reject verdict = iota // not a frame start
	wait                  // plausible; the evidence that decides has not arrived yet
	accept                // a frame start
)

// maxWaiting caps the candidate frame starts a side keeps waiting on.
const maxWaiting = 64

// resync looks for the next frame start in a lost side's scan buffer.
// atEnd says that no more bytes will come.
//
// A candidate whose evidence lies past the bytes at hand waits; positions
// after it are judged too, and the first one accepted now wins, since a
// waiting candidate cannot be checked yet. Rejections are final, so each
// position is judged once, except the waiting ones, judged again as bytes
// arrive.
func (c *Conn) resync(f *framer, atEnd bool) {
	judge, minLen := c.judgeRequest, 12
	if f.side == kafka.ToClient {
		judge, minLen = c.judgeResponse, 8
	}
	waits := f.waits[:0]
	for _, p := range f.waits {
		switch judge(f.scan[p:], atEnd) {
		case accept:
			c.regain(f, p)
			return
		case wait:
			waits = append(waits, p)
		}
	}
	p := f.scanned
	// Both judges begin with the size field: most positions fail it, and
	// are passed over here without the call; most of those already on the
	// size's first byte, over that of the largest size.
	top := byte(uint32(c.opt.MaxFrameSize) >> 24)
	scan := f.scan
	for ; p+minLen <= len(scan); p++ {
		// Eight positions at a time: on to the first whose first byte is
		// small enough (in random bytes, most runs of eight have none).
		if p+8+minLen <= len(scan) {
			small := bytesAtMost(binary.LittleEndian.Uint64(scan[p:]), top)
			if small == 0 {
				p += 7
				continue
			}
			p += bits.TrailingZeros64(small) / 8
		} else if scan[p] > top {
			continue
		}
		if !c.frameSize(f.side, int(int32(binary.BigEndian.Uint32(scan[p:])))) {
			continue
		}
		switch judge(scan[p:], atEnd) {
		case accept:
			c.regain(f, p)
			return
		case wait:
			if len(waits) == maxWaiting {
				waits = waits[:copy(waits, waits[1:])]
			}
			waits = append(waits, p)
		}
	}
	f.waits, f.scanned = waits, p
	if f.side == kafka.ToBroker {
		c.candidate = len(waits) > 0
	}
	c.checkNotKafka(f, atEnd)
	// Keep the bytes from the oldest waiting candidate, or else a tail that
	// could begin a frame.
	drop := len(f.scan) - (minLen - 1)
	if len(waits) > 0 {
		drop = waits[0]
	}
	if drop > 0 {
		c.cnt.SkippedBytes += int64(drop)
		f.dropScan(drop)
	}
}

// bytesAtMost flags the bytes of x that are at most n (n < 128) with
// their top bit: a byte below n+1 borrows in the subtraction, which sets
// its top bit while the byte's own is clear. The lowest such byte gets no
// borrow from below, so it is flagged, and no byte below it is; a higher
// one may be flagged falsely. The caller wants the lowest.
func bytesAtMost(x uint64, n byte) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (x - ones*uint64(n+1)) &^ x & highs
}

// waitingFor returns the position of the client side's waiting candidate
// with this correlation ID, if there is one.
func (c *Conn) waitingFor(corr int32) (int, bool) {
	f := &c.side[kafka.ToBroker]
	if !c.candidate || !f.lost {
		return 0, false
	}
	for _, p := range f.waits {
		if p+12 > len(f.scan) || int32(binary.BigEndian.Uint32(f.scan[p+8:])) != corr {
			continue
		}
		// Only a candidate whose whole header is in and plausible counts. One
		// with an empty client ID is too easily made of zero bytes (a header
		// of zeros is a valid Produce v0) to be confirmed by a correlation
		// ID alone: it needs the next frame.
		size := int(int32(binary.BigEndian.Uint32(f.scan[p:])))
		h, n, err := parseRequestHeader(f.scan[p+4:min(len(f.scan), p+4+size)], c.opt.Table)
		if err == nil && n <= size && plausibleClientID(h) && (h.ClientIDNull || h.ClientID != "") {
			return p, true
		}
	}
	return 0, false
}

// regain resumes framing at offset p of the scan buffer.
func (c *Conn) regain(f *framer, p int) {
	c.cnt.SkippedBytes += int64(p)
	c.cnt.Resyncs++
	skipped := f.scanAt + int64(p)
	rest := append([]byte(nil), f.scan[p:]...)
	spans := make([]kafka.Span, 0, len(f.marks))
	for _, m := range f.marks {
		if m.End > p {
			spans = append(spans, kafka.Span{End: m.End - p, At: m.At})
		}
	}
	f.lost = false
	f.lostState = nil // found: the scan's memory is not needed any more
	c.resetFrame(f)
	if f.side == kafka.ToBroker {
		c.candidate = false
	}
	c.events = append(c.events, Event{Kind: EventResync, Side: f.side, At: at(spans, 0), Skipped: skipped})
	c.frameBytes(f, rest, spans)
	if f.side == kafka.ToBroker {
		c.rescanBroker()
	}
}

// confirmCandidate accepts the client side's waiting candidate with this
// correlation ID: the broker answered it. It reports whether there was one.
func (c *Conn) confirmCandidate(corr int32) bool {
	p, ok := c.waitingFor(corr)
	if ok {
		c.regain(&c.side[kafka.ToBroker], p)
	}
	return ok
}

// rescanBroker looks again at a lost broker side once new requests are
// pending: their correlation IDs are what responses are found by.
func (c *Conn) rescanBroker() {
	if f := &c.side[kafka.ToClient]; f.lost && len(f.scan) >= 8 && c.pending.len() > 0 {
		c.resync(f, false)
	}
}

// judgeRequest decides whether b starts a request frame. A plausible header
// alone is fooled by body bytes (runs of zero UUIDs pass it), so a
// candidate is accepted only with more evidence: its client ID equals the
// one the connection already showed, the next frame parses too, or (see
// parseResponseHead) the broker answers its correlation ID.
func (c *Conn) judgeRequest(b []byte, atEnd bool) verdict {
	if len(b) < 12 {
		return reject
	}
	size := int(int32(binary.BigEndian.Uint32(b)))
	if !c.frameSize(kafka.ToBroker, size) {
		return reject
	}
	if !c.plausibleRequestStart(b[4:], size) {
		return reject
	}
	end := 4 + size
	h, n, err := parseRequestHeader(b[4:min(len(b), end)], c.opt.Table)
	if err == errShort {
		if len(b) >= end || atEnd || len(b) >= c.opt.MaxScan {
			return reject
		}
		return wait
	}
	if err != nil || n > size || !plausibleClientID(h) {
		return reject
	}
	if c.knowsClientID && !h.ClientIDNull && h.ClientID == c.clientID {
		return accept
	}
	named := !h.ClientIDNull && h.ClientID != ""
	switch {
	case len(b) >= end+12:
		if c.plausibleRequestStart(b[end+4:], int(int32(binary.BigEndian.Uint32(b[end:])))) {
			return accept
		}
		return reject
	case atEnd:
		if named && len(b) <= end {
			return accept
		}
		return reject
	}
	// The evidence has not arrived. A candidate whose next frame lies
	// further than the scan may hold is given up when it falls out of it.
	return wait
}

// plausibleRequestStart checks the fixed part of a request header (b starts
// at the api key) against the API table: known key, valid version,
// non-negative correlation ID, and a client ID length that fits the size.
func (c *Conn) plausibleRequestStart(b []byte, size int) bool {
	if len(b) < 8 || !c.frameSize(kafka.ToBroker, size) {
		return false
	}
	key := int16(binary.BigEndian.Uint16(b))
	ver := int16(binary.BigEndian.Uint16(b[2:]))
	corr := int32(binary.BigEndian.Uint32(b[4:]))
	api, ok := c.opt.Table.Lookup(key)
	if !ok || !api.Valid(ver) || corr < 0 {
		return false
	}
	if api.RequestHeaderVersion(ver) == 0 {
		return true
	}
	if len(b) < 10 {
		return true // the client ID length is in the next bytes
	}
	idLen := int(int16(binary.BigEndian.Uint16(b[8:])))
	return idLen >= -1 && idLen <= size-10
}

// judgeResponse decides whether b starts a response frame: a size in range
// and the correlation ID of a pending request (or of the client side's
// waiting candidate), and then either the next frame looks like a response
// too or the bytes end exactly where this frame does.
func (c *Conn) judgeResponse(b []byte, atEnd bool) verdict {
	size := int(int32(binary.BigEndian.Uint32(b)))
	if !c.frameSize(kafka.ToClient, size) {
		return reject
	}
	corr := int32(binary.BigEndian.Uint32(b[4:]))
	end := 4 + size
	if !c.pending.has(corr) {
		if _, ok := c.waitingFor(corr); !ok {
			return c.judgeUnmatchedResponse(b, corr, end, atEnd)
		}
	}
	switch {
	case len(b) >= end+8:
		nsize := int32(binary.BigEndian.Uint32(b[end:]))
		ncorr := int32(binary.BigEndian.Uint32(b[end+4:]))
		if c.frameSize(kafka.ToClient, int(nsize)) && (ncorr > corr || c.pending.has(ncorr)) {
			return accept
		}
		return reject
	case len(b) == end || atEnd:
		return accept
	}
	return wait
}

// unmatchedWaitLimit is the largest response, answering a request the
// capture did not show, that the resynchroniser waits for to see the
// response after it.
const unmatchedWaitLimit = 64 << 10

// judgeUnmatchedResponse decides on a response whose request the capture
// did not show (it began before the capture or in a gap): it is accepted
// only when the next frame is the response to a pending request, with a
// later correlation ID, since brokers answer in order.
func (c *Conn) judgeUnmatchedResponse(b []byte, corr int32, end int, atEnd bool) verdict {
	if corr < 0 {
		return reject
	}
	if len(b) < end+8 {
		if atEnd || end > unmatchedWaitLimit {
			return reject
		}
		return wait
	}
	nsize := int32(binary.BigEndian.Uint32(b[end:]))
	ncorr := int32(binary.BigEndian.Uint32(b[end+4:]))
	if !c.frameSize(kafka.ToClient, int(nsize)) || ncorr <= corr {
		return reject
	}
	if _, waiting := c.waitingFor(ncorr); c.pending.has(ncorr) || waiting {
		return accept
	}
	return reject
}

// checkNotKafka names a connection that never showed a Kafka frame once a
// side has held enough bytes to tell (or the stream ended).
func (c *Conn) checkNotKafka(f *framer, atEnd bool) {
	if c.dead || c.side[kafka.ToBroker].synced || c.side[kafka.ToClient].synced {
		return
	}
	seen := f.scanAt + int64(len(f.scan))
	// Look for TLS records in the first bytes only, and again only after
	// 4 KiB more: rescanning the buffer on every chunk would cost O(n²).
	if seen <= notKafkaAfter && (f.tlsLooked == 0 || seen-f.tlsLooked >= 4<<10 || atEnd) {
		f.tlsLooked = seen
		if looksLikeTLS(f.scan) {
			c.notKafka(f.side, at(f.marks, 0), "TLS")
			return
		}
	}
	// A side that began mid-stream may have shown only the tail of one
	// large message: only TLS records prove such a side is not Kafka.
	if !f.midStart && (seen >= notKafkaAfter || atEnd && seen > 0 && f.side == kafka.ToBroker) {
		c.notKafka(f.side, at(f.marks, 0), fmt.Sprintf("no Kafka frame in %d bytes", seen))
	}
}

// looksLikeTLS finds two chained TLS record headers (content type 20–23,
// version 3.x, a length that leads to the next header) in b.
func looksLikeTLS(b []byte) bool {
	isRecord := func(p int) bool {
		return p+5 <= len(b) && b[p] >= 20 && b[p] <= 23 && b[p+1] == 3 && b[p+2] <= 4
	}
	for p := 0; p+5 <= len(b) && p < 32<<10; p++ {
		if !isRecord(p) {
			continue
		}
		l := int(binary.BigEndian.Uint16(b[p+3:]))
		if l > 0 && l <= 18432 && isRecord(p+5+l) {
			return true
		}
	}
	return false
}
