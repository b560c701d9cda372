package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/kidscope/kidscope/kafka"
)

// Options bound what one Conn may hold. The zero value takes the defaults.
type Options struct {
	// Table is the API table (DefaultAPITable when nil).
	Table *APITable
	// MaxFrameSize is the largest frame size believed; larger or negative
	// sizes are a desynchronisation (default 100 MiB, the broker's
	// socket.request.max.bytes).
	MaxFrameSize int32
	// MaxBodySize is the largest body of an API the rules read, or of an
	// answer decoded in full, that is buffered and decoded (default 4 MiB,
	// defaultMaxBodySize); larger ones are passed over and counted.
	MaxBodySize int
	// MaxPending is how many requests may await their responses (default
	// 1024); older ones are forgotten first and counted.
	MaxPending int
	// MaxScan is how many bytes a side keeps while it looks for a frame
	// start (default 1 MiB).
	MaxScan int
	// Scratch, when set, is shared by the Conns for their event lists.
	Scratch *Scratch
	// AllAnswers decodes in full every response body whose version has no
	// top-level ErrorCode at a fixed offset, for its items' codes (frames
	// shows them all). A top-level code at a fixed offset is read from the
	// first bytes of every response and speaks for it. Without AllAnswers
	// the other bodies are decoded only when small (smallAnswer) or when
	// their request may draw a KIP-1313 finding (idWatch), whose verdict
	// needs the items' codes: decoding every answer would cost analyze a
	// copy of every fetched record.
	AllAnswers bool
	// ScanBudget, when set, caps the bytes all the lost sides of the Conns
	// sharing it keep together (MaxScan still caps each side).
	ScanBudget *ScanBudget
	// BodyBudget, when set, caps the bytes the frames in progress of the
	// Conns sharing it buffer together (MaxBodySize still caps each body).
	// Without it each Conn has a budget of its own, of two bodies.
	BodyBudget *BodyBudget
}

// defaultMaxBodySize is Options.MaxBodySize when it is not set. The bodies
// read are small but for three: a PushTelemetry carries metrics up to the
// broker's telemetry.max.bytes (1 MiB by default), a JoinGroup request
// carries a consumer's subscription for each protocol it offers (tens of
// bytes a topic: hundreds of KiB for thousands of topics), and the
// JoinGroup response to a group's leader carries every member's. 4 MiB
// takes the first two with room for raised broker settings and the third
// for groups of dozens of such members; a leader's answer in a larger
// group is passed over and counted, and its top-level error code, at a
// fixed offset, is still read.
const defaultMaxBodySize = 4 << 20

// BodyBudget is how many bytes the frames in progress of many connections
// may buffer in all: the bodies the rules read and the answers decoded in
// full, each kept whole until its last byte, and headers that run long. A
// capture with thousands of connections, each inside a large body whose
// rest never comes, would otherwise hold up to MaxBodySize for each. A
// frame is charged for what it has buffered, not for the size it declares:
// a connection holds budget for the bytes it sent, and one that declares
// megabytes and sends little holds little. A body the budget cannot take
// (up front, when its declared size exceeds what is free; or midway, when
// others took the rest) is passed over by its size like a body over
// MaxBodySize, its message says why (BodyErr) and BodiesSkippedBudget
// counts it; its header still makes its event. Besides the budget each
// frame in progress holds at most frameFree bytes. Like ScanBudget, it is
// for Conns used by one goroutine.
type BodyBudget struct {
	Max  int64
	used int64
}

// Used returns the bytes charged to the budget now.
func (b *BodyBudget) Used() int64 { return b.used }

// frameFree is how much of a frame's buffer is not charged to the body
// budget: more than the 96 bytes first collected of a request, so that no
// header a client really sends is refused when the budget is spent, and
// small enough that the frames in progress of 100,000 connections hold
// little beyond it.
const frameFree = 1 << 10

// ScanBudget is how many bytes the lost sides of many connections may keep
// in all while they look for a frame start: a capture that begins while
// thousands of connections are inside large messages would otherwise hold
// up to MaxScan for each. Near the budget a side keeps less, and may find
// its framing later. Like Scratch, it is for Conns used by one goroutine.
type ScanBudget struct {
	Max  int64
	used int64
}

// minScanKeep is what a lost side may always keep however spent the budget
// is (MaxScan still caps it): enough to see a frame header.
const minScanKeep = 64

func (o Options) withDefaults() Options {
	if o.Table == nil {
		o.Table = DefaultAPITable()
	}
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = 100 << 20
	}
	if o.MaxBodySize <= 0 {
		o.MaxBodySize = defaultMaxBodySize
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 1024
	}
	if o.MaxScan <= 0 {
		o.MaxScan = 1 << 20
	}
	return o
}

// notKafkaAfter is how many bytes a side that never framed a Kafka message
// may hold before the connection is named "not Kafka".
const notKafkaAfter = 64 << 10

// Counters are a connection's running totals.
type Counters struct {
	Requests, Responses   int64
	Unmatched             int64 // responses with no pending request
	Unanswered            int64 // requests known to get no response (a later one was answered, or evicted)
	Resyncs               int64
	SkippedBytes          int64 // bytes passed over while looking for a frame start
	Malformed             int64
	UnknownAPI            int64 // requests with an API key or version not in the table
	SASLTokens            int64
	PendingEvicted        int64
	BodiesSkippedTooLarge int64
	// BodiesSkippedBudget counts bodies passed over because the body
	// budget (Options.BodyBudget) could not take them, and response
	// headers too long for it.
	BodiesSkippedBudget int64
	NoResponse          int64 // requests that get no response by design (Produce with acks = 0)
}

// Conn decodes the Kafka traffic of one TCP connection, both sides. Feed it
// each side's reassembled bytes in order; it returns the events they
// complete.
type Conn struct {
	opt     Options
	side    [2]framer
	pending pendingSet
	events  []Event
	cnt     Counters

	ids idWatch

	clientID      string // the last non-null client ID seen, for resynchronisation
	knowsClientID bool
	saslTokens    bool // SaslHandshake v0 succeeded: raw tokens follow
	dead          bool // not Kafka: bytes are only counted
	// notKafkaReason says what the bytes were when dead.
	notKafkaReason string
	// candidate is true while the lost client side waits on candidate
	// request starts, to be confirmed by the next frame or by a response
	// to their correlation IDs.
	candidate bool
}

// NewConn returns the decoder of one connection.
func NewConn(opt Options) *Conn {
	c := &Conn{opt: opt.withDefaults()}
	if c.opt.BodyBudget == nil {
		c.opt.BodyBudget = &BodyBudget{Max: 2 * int64(c.opt.MaxBodySize)}
	}
	c.side[kafka.ToBroker].side = kafka.ToBroker
	c.side[kafka.ToClient].side = kafka.ToClient
	return c
}

// Outcome is what a decoder made of its connection, once it ended.
type Outcome struct {
	Counters Counters
	// ClientID is the last non-null client ID the connection showed.
	ClientID string
	// NotKafka names what the connection carried when it was not Kafka
	// ("TLS", …); empty for Kafka.
	NotKafka string
	// TLS is the TLS the connection's bytes were decrypted from ("TLS 1.3
	// TLS_AES_128_GCM_SHA256"); empty for plaintext. The decoder never
	// sets it: the pipeline does, which decrypts before decoding.
	TLS string
}

// Outcome returns what the decoder made of the connection so far.
func (c *Conn) Outcome() Outcome {
	return Outcome{Counters: c.cnt, ClientID: c.clientID, NotKafka: c.notKafkaReason}
}

// Start tells the decoder that a side begins; midStream means its first
// byte may sit anywhere inside a frame (the capture missed the handshake).
func (c *Conn) Start(s kafka.Direction, midStream bool) {
	f := &c.side[s]
	f.midStart = midStream
	if midStream {
		c.lose(f)
	}
}

// Lost tells the decoder that n bytes of a side are missing: framing is
// resynchronised on the bytes that follow.
func (c *Conn) Lost(s kafka.Direction) {
	c.lose(&c.side[s])
	c.accountScan()
}

// Feed decodes the next bytes of one side. spans map offsets in data to
// the frame where they became available. The events returned are valid
// until the next call (on any Conn sharing the Options' Scratch).
func (c *Conn) Feed(s kafka.Direction, data []byte, spans []kafka.Span) []Event {
	c.begin()
	defer c.end()
	if c.dead || len(data) == 0 {
		return c.events
	}
	f := &c.side[s]
	if !f.synced && !f.lost && f.got == 0 && f.nSize == 0 && s == kafka.ToBroker && isTLSStart(data) {
		c.notKafka(s, spans[0].At, "TLS")
		return c.events
	}
	if f.lost {
		f.appendScan(data, spans, c.scanLimit(f), &c.cnt)
		c.resync(f, false)
		return c.events
	}
	c.frameBytes(f, data, spans)
	if s == kafka.ToBroker {
		c.rescanBroker()
	}
	return c.events
}

// begin readies the event list of a call: the shared scratch one if the
// Options give one (a connection then holds none between calls).
func (c *Conn) begin() {
	if c.opt.Scratch != nil {
		c.events = c.opt.Scratch.events
	}
	c.events = c.events[:0]
}

// end hands the event list back to the scratch, unless it grew long.
func (c *Conn) end() {
	if cap(c.events) > maxKeptEvents {
		c.events = nil // the caller has the events; the next call starts a short list
	}
	if c.opt.Scratch != nil {
		c.opt.Scratch.events = c.events
		c.events = nil
	}
	if c.dead {
		// Not Kafka: its bytes are only counted from here on, and
		// nothing is scanned.
		for s := range c.side {
			c.side[s].lostState = nil
			c.resetFrame(&c.side[s])
		}
	}
	c.accountScan()
}

// accountScan brings the scan budget up to date with both sides' scans.
func (c *Conn) accountScan() {
	b := c.opt.ScanBudget
	if b == nil {
		return
	}
	for s := range c.side {
		f := &c.side[s]
		n := 0
		if f.lostState != nil {
			n = len(f.scan)
		}
		b.used += int64(n - f.scanCounted)
		f.scanCounted = n
	}
}

// scanLimit is how many bytes side f may keep while lost: MaxScan, or
// less when the budget shared with other connections is nearly spent.
func (c *Conn) scanLimit(f *framer) int {
	b := c.opt.ScanBudget
	if b == nil {
		return c.opt.MaxScan
	}
	free := b.Max - (b.used - int64(f.scanCounted))
	return int(min(int64(c.opt.MaxScan), max(free, minScanKeep)))
}

// Scratch is memory that many Conns share: the events of one call, and
// spare messages and frame buffers. With thousands of connections it saves
// a buffer per connection and an allocation per frame; the events a call
// returns are then valid only until the next call on any of them.
type Scratch struct {
	events []Event
	msgs   []*Message
	bufs   [][]byte
	// The last ApiVersions response body decoded and the last few Metadata
	// answers, with what came of them. Every connection of a client starts
	// with these two exchanges, and a broker answers ApiVersions to all
	// its clients byte for byte alike, Metadata to the clients of one
	// application (the same topics) too: with thousands of connections,
	// decoding each with kmsg was a tenth of the run. A body equal to a
	// remembered one takes its results (read only: events share them).
	versions memo
	metadata [metadataMemos]memo
	nextMeta int // the metadata memo the next new body replaces
}

// metadataMemos is how many Metadata answers a Scratch remembers: one per
// application whose clients a capture interleaves, for a few dozen of them
// (at most 128 KiB: bodies over maxMemo are not kept).
const metadataMemos = 32

// memo is a response body and what decoding it gave.
type memo struct {
	version int16
	body    []byte
	decoded Body   // ApiVersions
	code    int16  // ApiVersions: its error code
	answer  Answer // Metadata: its nested codes
	set     bool
}

// maxKeptEvents caps the event list kept between calls: a chunk of
// thousands of frames of a few bytes makes one long list, which would
// otherwise be kept for the run at over 400 bytes an event.
const maxKeptEvents = 4096

// maxMemo is the largest body kept in a memo.
const maxMemo = 4 << 10

// hit reports whether b at version is the body the memo holds.
func (m *memo) hit(version int16, b []byte) bool {
	return m.set && m.version == version && bytes.Equal(m.body, b)
}

// keep makes b at version the memo's body, when it is small enough.
func (m *memo) keep(version int16, b []byte) bool {
	if len(b) > maxMemo {
		m.set = false
		return false
	}
	m.version, m.body, m.set = version, append(m.body[:0], b...), true
	return true
}

// The Scratch keeps at most maxSpare messages and as many buffers, each of
// at most maxSpareBuf bytes: what frames in progress on other connections
// return while theirs are still being read.
const (
	maxSpare    = 256
	maxSpareBuf = 16 << 10
)

// Finish ends both sides: a side still searching accepts a last candidate
// that ends exactly at the end of its bytes; a frame cut short is reported;
// requests still pending are counted unanswered.
func (c *Conn) Finish() []Event {
	c.begin()
	defer c.end()
	if c.dead {
		return c.events
	}
	for s := range c.side {
		f := &c.side[s]
		if f.lost {
			c.resync(f, true)
		}
		if !f.lost && (f.nSize > 0 || f.got > 0) {
			c.events = append(c.events, Event{Kind: EventTruncated, Side: f.side, At: f.lastAt,
				Err: fmt.Errorf("stream ends inside a %s frame: %d of %d bytes", f.side.Carries(), f.got, f.size)})
		}
	}
	c.cnt.Unanswered += int64(c.pending.len())
	c.pending.clear()
	for s := range c.side {
		// The connection is over: end gives its scan back to the scan
		// budget, and resetFrame its frame buffer to the body budget.
		c.side[s].lostState = nil
		c.resetFrame(&c.side[s])
	}
	return c.events
}

// framer follows the frames of one side.
type framer struct {
	side   kafka.Direction
	synced bool // a frame was decoded on this side
	// midStart: the side began inside the stream, possibly inside a
	// message larger than any scan, so only TLS records prove it is not
	// Kafka (checkNotKafka).
	midStart bool
	lost     bool // looking for the next frame start

	sizeBuf [4]byte
	nSize   int
	size    int    // size field of the current frame
	got     int    // bytes of the current frame consumed after the size
	want    int    // bytes of the frame to collect into buf before parsing further
	buf     []byte // the collected prefix (or whole) of the current frame
	// bufCounted is the part of cap(buf) the BodyBudget counts.
	bufCounted int64
	// headKeep, while a body is collected (want is the frame's size), is
	// the prefix of buf to keep if the budget makes it give the body up.
	headKeep int
	headed   bool // the header is parsed; msg holds it; the rest is skipped or collected
	kind     EventKind
	msg      *Message // the frame in progress (nil between frames: thousands of connections)
	answer   bool     // the response in progress is decoded in full for its error codes
	// needed: its codes were asked for (a watched request, AllAnswers), so
	// a body that does not decode is malformed; a small answer decoded
	// only because it is cheap keeps its top-level code silently.
	needed bool
	lastAt kafka.FrameRef

	// lostState is there only while the side is lost: most of 100,000
	// connections never are, and need not carry it.
	*lostState
	scanCounted int // len(scan) as the ScanBudget counts it
}

// lostState is what a lost side keeps while it looks for a frame start.
type lostState struct {
	scan    []byte       // bytes kept while lost
	marks   []kafka.Span // spans of scan
	scanAt  int64        // bytes dropped from the front of scan while lost
	scanned int          // scan positions before this one are judged
	// tlsLooked is how many bytes the side had when its scan was last
	// searched for TLS records.
	tlsLooked int64
	waits     []int // scan positions of candidates waiting for evidence
}

// lose starts a resynchronisation of side f: the frame in progress is
// given up, and its buffer with it.
func (c *Conn) lose(f *framer) {
	c.dropBuf(f)
	f.lost = true
	f.nSize, f.got, f.headed, f.headKeep = 0, 0, false, 0
	if f.lostState == nil {
		f.lostState = new(lostState)
	}
	f.clearScan()
}

func (f *framer) clearScan() {
	if f.lostState == nil {
		return
	}
	f.scan, f.marks, f.waits = f.scan[:0], f.marks[:0], f.waits[:0]
	f.scanAt, f.scanned, f.tlsLooked = 0, 0, 0
}

// resetFrame readies the framer for the next frame. Its buffer and message
// are needed only until the frame is decoded: kept by each of 100,000 idle
// connections, such buffers were most of the heap. They go back to the
// Scratch, if any, for the next frame of any connection sharing it, so
// that a frame costs no allocation; a buffer grown for a large body is let
// go.
func (c *Conn) resetFrame(f *framer) {
	f.nSize, f.got, f.headed, f.headKeep = 0, 0, false, 0
	if s := c.opt.Scratch; s != nil {
		if f.msg != nil && len(s.msgs) < maxSpare {
			*f.msg = Message{}
			s.msgs = append(s.msgs, f.msg)
		}
		if cap(f.buf) > 0 && cap(f.buf) <= maxSpareBuf && len(s.bufs) < maxSpare {
			s.bufs = append(s.bufs, f.buf[:0])
		}
	}
	c.dropBuf(f)
	f.msg = nil
	f.answer, f.needed = false, false
}

// charge makes the body budget count a frame buffer of capacity n for f,
// and reports whether it could; when it could not, nothing changed.
func (c *Conn) charge(f *framer, n int) bool {
	b := c.opt.BodyBudget
	want := int64(max(0, n-frameFree))
	d := want - f.bufCounted
	if d > 0 && b.used+d > b.Max {
		return false
	}
	b.used += d
	f.bufCounted = want
	return true
}

// dropBuf lets f's frame buffer go, and gives its charge back.
func (c *Conn) dropBuf(f *framer) {
	f.buf = nil
	c.charge(f, 0)
}

// budgetFree is how many bytes of the body budget f could hold in all.
func (c *Conn) budgetFree(f *framer) int64 {
	b := c.opt.BodyBudget
	return b.Max - b.used + f.bufCounted
}

// room readies f.buf to take n more bytes, within the body budget. It
// grows by doubling up to what is wanted of the frame, so that a body's
// buffer holds about what was sent of it, not the size it declares.
func (c *Conn) room(f *framer, n int) bool {
	need := len(f.buf) + n
	if need <= cap(f.buf) {
		return true
	}
	size := min(max(need, 2*cap(f.buf), 512), max(f.want, need))
	if !c.charge(f, size) {
		return false
	}
	b := make([]byte, len(f.buf), size)
	copy(b, f.buf)
	f.buf = b
	return true
}

// noRoom deals with a frame whose buffer the body budget cannot grow. A
// body is passed over by its size, its head kept; a request header that
// long cannot be read, and framing is lost as for a bad one; a response
// header's tagged fields are passed over with the rest of the frame.
func (c *Conn) noRoom(f *framer) {
	switch {
	case f.headKeep > 0:
		keep := min(len(f.buf), f.headKeep)
		head := make([]byte, keep) // no larger than buf: its charge can only fall
		copy(head, f.buf)
		f.buf = head
		c.charge(f, cap(head))
		f.want, f.headKeep = keep, 0
		f.answer = false
		c.budgetSkip(f)
	case f.side == kafka.ToClient && f.msg != nil:
		c.budgetSkip(f)
		f.want, f.headed = len(f.buf), true
	default:
		c.malformed(f, f.lastAt, fmt.Errorf("%s header over %d bytes: the body budget cannot hold it", f.side.Carries(), len(f.buf)))
		c.loseWith(f, f.rawSoFar())
	}
}

// budgetSkip marks the frame's body as passed over for the body budget.
func (c *Conn) budgetSkip(f *framer) {
	c.cnt.BodiesSkippedBudget++
	f.msg.BodyErr = fmt.Errorf("body of %d bytes not decoded: the body budget of %d bytes is spent", f.size, c.opt.BodyBudget.Max)
}

// bodyFits reports whether a body of the frame's declared size could be
// buffered with the budget as it is: one that could not is passed over
// at once, rather than buffered until the budget runs out.
func (c *Conn) bodyFits(f *framer) bool {
	return int64(f.size-frameFree) <= c.budgetFree(f)
}

// newMessage returns an empty message for a frame: a spare one when the
// Scratch has it.
func (c *Conn) newMessage() *Message {
	if s := c.opt.Scratch; s != nil && len(s.msgs) > 0 {
		m := s.msgs[len(s.msgs)-1]
		s.msgs = s.msgs[:len(s.msgs)-1]
		return m
	}
	return new(Message)
}

// frameBuf returns an empty buffer for a frame's bytes: the framer's own,
// or a spare one from the Scratch.
func (c *Conn) frameBuf(f *framer) []byte {
	if f.buf != nil {
		return f.buf[:0]
	}
	if s := c.opt.Scratch; s != nil && len(s.bufs) > 0 {
		b := s.bufs[len(s.bufs)-1]
		if !c.charge(f, cap(b)) {
			return nil
		}
		s.bufs = s.bufs[:len(s.bufs)-1]
		return b
	}
	return nil
}

// appendScan keeps data while lost, dropping the oldest bytes over max.
func (f *framer) appendScan(data []byte, spans []kafka.Span, max int, cnt *Counters) {
	base := len(f.scan)
	f.scan = append(f.scan, data...)
	for _, sp := range spans {
		f.marks = append(f.marks, kafka.Span{End: base + sp.End, At: sp.At})
	}
	if over := len(f.scan) - max; over > 0 {
		f.dropScan(over)
		cnt.SkippedBytes += int64(over)
	}
}

// dropScan removes the first n bytes of the scan buffer.
func (f *framer) dropScan(n int) {
	f.scan = f.scan[:copy(f.scan, f.scan[n:])]
	f.scanAt += int64(n)
	k := 0
	for _, m := range f.marks {
		if m.End > n {
			m.End -= n
			f.marks[k] = m
			k++
		}
	}
	f.marks = f.marks[:k]
	f.scanned = max(0, f.scanned-n)
	w := 0
	for _, p := range f.waits {
		if p >= n {
			f.waits[w] = p - n
			w++
		}
	}
	f.waits = f.waits[:w]
}

// at returns where the byte at offset off of a chunk became available.
func at(spans []kafka.Span, off int) kafka.FrameRef {
	for _, sp := range spans {
		if off < sp.End {
			return sp.At
		}
	}
	if len(spans) > 0 {
		return spans[len(spans)-1].At
	}
	return kafka.FrameRef{}
}

// frameBytes runs the framing state machine over in-sync bytes.
func (c *Conn) frameBytes(f *framer, b []byte, spans []kafka.Span) {
	off := 0
	for off < len(b) && !c.dead {
		if f.lost {
			// Framing was lost inside this chunk: scan the rest.
			f.appendScan(b[off:], shiftSpans(spans, off), c.scanLimit(f), &c.cnt)
			c.resync(f, false)
			return
		}
		if f.nSize < 4 {
			k := copy(f.sizeBuf[f.nSize:], b[off:])
			f.nSize += k
			off += k
			if f.nSize < 4 {
				return
			}
			f.size = int(int32(binary.BigEndian.Uint32(f.sizeBuf[:])))
			if !c.sizeOK(f.side, f.size) {
				c.malformed(f, at(spans, off-1), fmt.Errorf("frame size %d out of range", f.size))
				c.loseWith(f, f.sizeBuf[1:4])
				continue
			}
			f.want = initialWant(f.side, f.size)
			f.buf = c.frameBuf(f)
			f.got = 0
			if f.size == 0 {
				c.completeFrame(f, at(spans, off-1))
				continue
			}
		}
		k := min(f.size-f.got, len(b)-off)
		if !f.headed || len(f.buf) < f.want {
			// Collect up to want; before the header is known, consume no
			// more than that, so a bad header can be rescanned whole.
			k = min(k, f.want-len(f.buf))
			if !c.room(f, k) {
				c.noRoom(f)
				continue
			}
			f.buf = append(f.buf, b[off:off+k]...)
		}
		f.got += k
		off += k
		if !f.headed && len(f.buf) >= f.want {
			if !c.parseHead(f) {
				// parseHead either grew want (more header to read) or lost framing.
				if f.lost {
					c.loseWith(f, f.rawSoFar())
				}
				continue
			}
		}
		if f.got == f.size {
			f.lastAt = at(spans, off-1)
			if !f.headed && !c.parseHead(f) {
				if f.lost {
					c.loseWith(f, f.rawSoFar())
				}
				continue
			}
			c.completeFrame(f, f.lastAt)
		}
	}
}

// rawSoFar is the bytes of the current frame that were kept, with its size,
// for a rescan after a header turned out to be garbage.
func (f *framer) rawSoFar() []byte {
	out := make([]byte, 0, 3+len(f.buf))
	out = append(out, f.sizeBuf[1:4]...)
	return append(out, f.buf...)
}

func shiftSpans(spans []kafka.Span, off int) []kafka.Span {
	out := make([]kafka.Span, 0, len(spans))
	for _, sp := range spans {
		if sp.End > off {
			out = append(out, kafka.Span{End: sp.End - off, At: sp.At})
		}
	}
	return out
}

// loseWith starts a resynchronisation whose scan begins with seen (bytes
// already taken from the stream that must be looked at again).
func (c *Conn) loseWith(f *framer, seen []byte) {
	keepAt := f.lastAt
	c.lose(f)
	f.scan = append(f.scan, seen...)
	f.marks = append(f.marks, kafka.Span{End: len(f.scan), At: keepAt})
	if over := len(f.scan) - c.scanLimit(f); over > 0 {
		f.dropScan(over)
		c.cnt.SkippedBytes += int64(over)
	}
}

func (c *Conn) sizeOK(s kafka.Direction, size int) bool {
	if c.saslTokens {
		return size >= 0 && size <= int(c.opt.MaxFrameSize) // a SASL token may have any size, even zero
	}
	return c.frameSize(s, size)
}

// frameSize reports whether size can be the size field of a Kafka frame on
// side s: from its fixed header (a request's API key, version and
// correlation ID; a response's correlation ID) to MaxFrameSize.
func (c *Conn) frameSize(s kafka.Direction, size int) bool {
	least := 4
	if s == kafka.ToBroker {
		least = 8
	}
	return size >= least && size <= int(c.opt.MaxFrameSize)
}

// initialWant is how much of a frame to collect before the first parse:
// enough for most headers, never more than the frame.
func initialWant(s kafka.Direction, size int) int {
	if s == kafka.ToBroker {
		return min(size, 96)
	}
	return min(size, 4)
}

// parseHead parses the header from f.buf. It returns true when the header
// is known; false when it asked for more bytes (f.want grew) or lost
// framing (f.lost set).
func (c *Conn) parseHead(f *framer) bool {
	if f.side == kafka.ToBroker {
		return c.parseRequestHead(f)
	}
	return c.parseResponseHead(f)
}

func (c *Conn) parseRequestHead(f *framer) bool {
	h, n, err := parseRequestHeader(f.buf, c.opt.Table)
	if errors.Is(err, errShort) && len(f.buf) < f.size {
		f.want = min(f.size, max(2*f.want, 256))
		return false
	}
	if err == nil && n > f.size {
		err = errShort
	}
	if c.saslTokens {
		// After SaslHandshake v0, raw tokens follow until a frame reads as
		// a real request again; a token is never parsed further.
		if err != nil || !h.Known || !plausibleClientID(h) {
			f.kind = EventSASLToken
			f.headed = true
			return true
		}
		c.saslTokens = false
	}
	if err != nil {
		c.malformed(f, f.lastAt, fmt.Errorf("request header: %w", err))
		f.lost = true
		return false
	}
	noResponse := false
	if h.APIKey == keyProduce && h.Known {
		acks, need, ok := produceAcks(h.APIVersion, f.buf[n:])
		if need > 0 && n+need <= f.size && len(f.buf) < f.size {
			f.want = min(f.size, max(n+need, 2*f.want))
			return false
		}
		noResponse = ok && acks == 0
	}
	f.kind = EventRequest
	f.msg = c.newMessage()
	f.msg.Size, f.msg.Request, f.msg.NoResponse = int32(f.size), h, noResponse
	f.headed = true
	if wantsRequestBody(h.APIKey) && h.Known {
		switch {
		case f.size > c.opt.MaxBodySize:
			c.cnt.BodiesSkippedTooLarge++
			f.msg.BodyErr = fmt.Errorf("body of %d bytes not decoded (over %d)", f.size, c.opt.MaxBodySize)
		case !c.bodyFits(f):
			c.budgetSkip(f)
		default:
			f.want, f.headKeep = f.size, n
		}
	}
	return true
}

func (c *Conn) parseResponseHead(f *framer) bool {
	if len(f.buf) < 4 {
		// Only a SASL token can be shorter than a correlation ID (sizeOK
		// lets it through); anything else waits for more bytes.
		if f.size < 4 {
			f.kind, f.headed = EventSASLToken, true
			return true
		}
		f.want = 4
		return false
	}
	if f.msg == nil { // first look: the correlation ID is in
		corr := int32(binary.BigEndian.Uint32(f.buf))
		p, ok := c.pending.get(corr)
		if !ok && c.confirmCandidate(corr) {
			p, ok = c.pending.get(corr)
		}
		if !ok && c.saslTokens {
			f.kind = EventSASLToken
			f.headed = true
			return true
		}
		f.kind = EventResponse
		f.msg = c.newMessage()
		f.msg.Size, f.msg.Matched = int32(f.size), ok
		f.msg.Response.CorrelationID = corr
		if !ok {
			f.headed = true // nothing tells its layout: skip it by size
			return true
		}
		f.msg.Request, f.msg.RequestAt = p.h, p.at
		// Where the top-level code sits at a fixed offset it speaks for the
		// answer, and the body (a Fetch's records) is not decoded for more.
		// Elsewhere a small answer costs little to decode whole, and an
		// answer that rejects a request is small (no records, codes
		// alone): reading them all lets broker-rejected-valid see every
		// rejection.
		inItems := p.h.Known && topAt(p.h.APIKey, p.h.APIVersion) < 0
		f.needed = inItems && (p.answer || c.opt.AllAnswers)
		f.answer = f.needed || inItems && f.size <= smallAnswer && hasNested(p.h.APIKey, p.h.APIVersion)
		hv := 0
		if api, known := c.opt.Table.Lookup(p.h.APIKey); known && p.h.Known {
			hv = api.ResponseHeaderVersion(p.h.APIVersion)
		}
		f.msg.Response.HeaderVersion = hv
		want := 4
		if hv == 1 {
			want = min(f.size, 64)
		}
		if off := topAt(p.h.APIKey, p.h.APIVersion); off >= 0 {
			want = max(want, min(f.size, 4+hv+off+2))
		}
		if (wantsBody(p.h.APIKey) || f.answer) && p.h.Known {
			switch {
			case f.size > c.opt.MaxBodySize:
				c.cnt.BodiesSkippedTooLarge++
				f.msg.BodyErr = fmt.Errorf("body of %d bytes not decoded (over %d)", f.size, c.opt.MaxBodySize)
			case !c.bodyFits(f):
				c.budgetSkip(f)
			default:
				f.headKeep, want = want, f.size
			}
		}
		f.want = max(want, 4)
		if len(f.buf) < f.want {
			return false
		}
	}
	if f.msg.Response.HeaderVersion == 1 {
		h, _, err := parseResponseHeader(f.buf, 1)
		if errors.Is(err, errShort) && len(f.buf) < f.size {
			f.want = min(f.size, 2*f.want)
			return false
		}
		if err != nil {
			f.msg.BodyErr = fmt.Errorf("response header: %w", err)
		} else {
			f.msg.Response = h
		}
	}
	f.headed = true
	return true
}

// completeFrame emits the event of a frame whose last byte has arrived.
func (c *Conn) completeFrame(f *framer, w kafka.FrameRef) {
	f.synced = true
	f.lastAt = w
	if f.size == 0 && c.saslTokens {
		f.kind, f.headed = EventSASLToken, true
	}
	switch {
	case !f.headed:
		c.malformed(f, w, fmt.Errorf("empty %s frame", f.side.Carries()))
	case f.kind == EventSASLToken:
		c.cnt.SASLTokens++
		c.events = append(c.events, Event{Kind: EventSASLToken, Side: f.side, At: w})
	case f.kind == EventRequest:
		c.completeRequest(f, w)
	default:
		c.completeResponse(f, w)
	}
	c.resetFrame(f)
}

func (c *Conn) completeRequest(f *framer, w kafka.FrameRef) {
	m := *f.msg
	h := m.Request
	c.cnt.Requests++
	if !h.Known {
		c.cnt.UnknownAPI++
	}
	if !h.ClientIDNull && h.HeaderVersion > 0 {
		if h.ClientID == c.clientID {
			h.ClientID = c.clientID // one copy for all the connection's requests
			m.Request.ClientID = h.ClientID
		}
		c.clientID, c.knowsClientID = h.ClientID, true
	}
	if wantsRequestBody(h.APIKey) && h.Known && m.BodyErr == nil && len(f.buf) == f.size {
		_, hn, _ := parseRequestHeader(f.buf, c.opt.Table)
		body, err := safeDecode(func() (Body, error) { return decodeRequestBody(h.APIKey, h.APIVersion, f.buf[hn:]) })
		if err != nil {
			m.BodyErr = err
			c.cnt.Malformed++
		} else {
			m.Body, m.HasBody = body, true
		}
	}
	watched := c.ids.marks(&h)
	if m.NoResponse {
		c.cnt.NoResponse++
	} else if evicted := c.pending.add(h.CorrelationID, pendingReq{h: h, at: w, answer: watched}, c.opt.MaxPending); evicted > 0 {
		c.cnt.PendingEvicted += int64(evicted)
		c.cnt.Unanswered += int64(evicted)
	}
	c.events = append(c.events, Event{Kind: EventRequest, Side: kafka.ToBroker, At: w, Msg: m})
}

func (c *Conn) completeResponse(f *framer, w kafka.FrameRef) {
	m := *f.msg
	c.cnt.Responses++
	if !m.Matched {
		c.cnt.Unmatched++
	} else {
		// Brokers answer a connection's requests in order: the requests
		// sent before this one that are still pending will get no answer
		// (acks=0 produce, or their answers were lost).
		c.cnt.Unanswered += int64(c.pending.take(m.Response.CorrelationID))
		key := m.Request.APIKey
		hn := 4
		if m.Response.HeaderVersion == 1 {
			_, hn, _ = parseResponseHeader(f.buf, 1)
		}
		if m.Request.Known && hn <= len(f.buf) {
			m.ErrorCode, m.HasErrorCode = peekTop(key, m.Request.APIVersion, f.buf[hn:])
		}
		whole := m.Request.Known && m.BodyErr == nil && len(f.buf) == f.size && hn <= len(f.buf)
		switch {
		case wantsBody(key) && whole:
			c.decodeReadBody(&m, f.buf[hn:])
		case whole && f.answer:
			if a, err := c.readAnswer(key, m.Request.APIVersion, f.buf[hn:]); err == nil {
				m.Answer = a
			} else if f.needed && topAt(key, m.Request.APIVersion) != topUnreadable {
				// A body kmsg cannot read (a short or newer layout) keeps
				// the top-level code its first bytes hold.
				m.BodyErr = err
				c.cnt.Malformed++
			}
		}
	}
	c.events = append(c.events, Event{Kind: EventResponse, Side: kafka.ToClient, At: w, Msg: m})
}

// decodeReadBody decodes the body of a response the rules read: its fields
// and its top-level error code (such bodies have no nested codes).
func (c *Conn) decodeReadBody(m *Message, b []byte) {
	key := m.Request.APIKey
	var memo *memo
	if c.opt.Scratch != nil && key == KeyApiVersions {
		memo = &c.opt.Scratch.versions
		if memo.hit(m.Request.APIVersion, b) {
			m.Body, m.HasBody = memo.decoded, true
			m.ErrorCode, m.HasErrorCode, m.NestedRead = memo.code, true, true
			return
		}
	}
	var code int16
	var has bool
	body, err := safeDecode(func() (Body, error) {
		b, cd, h, err := decodeResponseBody(key, m.Request.APIVersion, b)
		code, has = cd, h
		return b, err
	})
	if err != nil {
		m.BodyErr = err
		c.cnt.Malformed++
		return
	}
	m.Body, m.HasBody = body, true
	m.ErrorCode, m.HasErrorCode, m.NestedRead = code, has, true
	if memo != nil && has && memo.keep(m.Request.APIVersion, b) {
		memo.decoded, memo.code = body, code
	}
	if key == KeySaslHandshake && code == ErrNone && m.Request.APIVersion == 0 {
		c.saslTokens = true
	}
}

// readAnswer is ReadAnswer, through the Scratch's memo for Metadata.
func (c *Conn) readAnswer(key, version int16, b []byte) (Answer, error) {
	if c.opt.Scratch == nil || key != keyMetadata {
		return ReadAnswer(key, version, b)
	}
	sc := c.opt.Scratch
	for i := range sc.metadata {
		if sc.metadata[i].hit(version, b) {
			return sc.metadata[i].answer, nil
		}
	}
	a, err := ReadAnswer(key, version, b)
	if memo := &sc.metadata[sc.nextMeta]; err == nil && memo.keep(version, b) {
		memo.answer = a
		sc.nextMeta = (sc.nextMeta + 1) % metadataMemos
	}
	return a, err
}

// safeDecode runs a body decoder, turning a panic in a third-party parser
// into an error: no input may crash the program.
func safeDecode(fn func() (Body, error)) (b Body, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("body decoder failed: %v", r)
		}
	}()
	return fn()
}

func (c *Conn) malformed(f *framer, w kafka.FrameRef, err error) {
	c.cnt.Malformed++
	c.events = append(c.events, Event{Kind: EventMalformed, Side: f.side, At: w, Err: err})
}

func (c *Conn) notKafka(s kafka.Direction, w kafka.FrameRef, reason string) {
	c.dead, c.notKafkaReason = true, reason
	c.events = append(c.events, Event{Kind: EventNotKafka, Side: s, At: w, Reason: reason})
}

// isTLSStart reports whether b starts like a TLS handshake record.
func isTLSStart(b []byte) bool {
	return len(b) >= 3 && b[0] == 0x16 && b[1] == 0x03 && b[2] <= 0x04
}

// plausibleClientID is a client ID that a real client would send: null, or
// valid UTF-8 without control characters.
func plausibleClientID(h RequestHeader) bool {
	if h.ClientIDNull {
		return true
	}
	if !utf8.ValidString(h.ClientID) {
		return false
	}
	for _, r := range h.ClientID {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// Add adds o's counts to c (the totals of several connections).
func (c *Counters) Add(o Counters) {
	c.Requests += o.Requests
	c.Responses += o.Responses
	c.Unmatched += o.Unmatched
	c.Unanswered += o.Unanswered
	c.Resyncs += o.Resyncs
	c.SkippedBytes += o.SkippedBytes
	c.Malformed += o.Malformed
	c.UnknownAPI += o.UnknownAPI
	c.SASLTokens += o.SASLTokens
	c.PendingEvicted += o.PendingEvicted
	c.BodiesSkippedTooLarge += o.BodiesSkippedTooLarge
	c.BodiesSkippedBudget += o.BodiesSkippedBudget
	c.NoResponse += o.NoResponse
}
