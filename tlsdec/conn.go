package tlsdec

import (
	"bytes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/kidscope/kidscope/kafka"
)

// Record content types.
const (
	typeCCS       = 20
	typeAlert     = 21
	typeHandshake = 22
	typeAppData   = 23
)

// MaxRecord is the largest record body (after the 5-byte header) taken:
// 2^14 bytes of plaintext and 256 of expansion (RFC 8446 §5.2; the AEAD
// suites of TLS 1.2 expand by 24). A header that declares more loses the
// side until a plausible header is found again.
const MaxRecord = 1<<14 + 256

// Defaults of Options.
const (
	DefaultMaxPending = 1 << 20
	DefaultSeqWindow  = 64
)

// maxHandshakeMsg is the largest handshake message read (a ClientHello,
// ServerHello, Finished or KeyUpdate); bigger ones are skipped.
const maxHandshakeMsg = 1 << 16

// hrrRandom is the ServerHello random of a HelloRetryRequest (RFC 8446 §4.1.3).
var hrrRandom = [32]byte{0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c}

// Options bound a Conn.
type Options struct {
	// MaxPending is how many bytes of ciphertext records a Conn holds, both
	// sides together, while their keys are not known (the client random not
	// yet in the key log, or a TLS 1.3 client record before the
	// ServerHello). Over it the Conn gives up: KeyGaveUp. 0: DefaultMaxPending.
	MaxPending int
	// SeqWindow is how many sequence numbers are tried on the first record
	// after a gap. 0: DefaultSeqWindow.
	SeqWindow int
	// Scratch, when set, holds the plaintext Feed returns, shared by the
	// Conns given the same one: what Feed returns is then valid until the
	// next call on any of them. Thousands of connections need one output
	// buffer between them, not one each grown to their largest Feed.
	Scratch *Scratch
}

// Scratch is what Conns share (Options.Scratch): the output buffer, and
// the record buffers that directions between records give back, for the
// next direction that needs one.
type Scratch struct {
	out   []byte
	spans []kafka.Span
	free  [][]byte
}

// maxIdleBuffer is the room a direction between records keeps for its
// next one; a larger buffer (a big record's) goes back to the Scratch.
const maxIdleBuffer = 1 << 10

// maxFreeBuffers bounds the record buffers a Scratch keeps.
const maxFreeBuffers = 64

// recordBuffer is the size of a buffer taken for a big record: the
// largest record and a segment's worth past it.
const recordBuffer = MaxRecord + 5 + 2048

// take returns an empty buffer with room for n bytes, a given-back one if
// there is one.
func (sc *Scratch) take(n int) []byte {
	if sc != nil && n <= recordBuffer {
		if k := len(sc.free); k > 0 {
			b := sc.free[k-1]
			sc.free = sc.free[:k-1]
			return b[:0]
		}
	}
	return make([]byte, 0, max(n, recordBuffer))
}

// give takes back a buffer no longer needed.
func (sc *Scratch) give(b []byte) {
	if sc != nil && cap(b) == recordBuffer && len(sc.free) < maxFreeBuffers {
		sc.free = append(sc.free, b)
	}
}

// KeyStatus says whether a connection's keys were found.
type KeyStatus uint8

const (
	KeyNone    KeyStatus = iota // no handshake seen (yet): no client random to look up
	KeyFound                    // the key log holds the connection's secrets
	KeyMissing                  // the client random is not (yet) in the key log
	KeyGaveUp                   // still missing when the held ciphertext reached MaxPending
)

func (k KeyStatus) String() string {
	switch k {
	case KeyFound:
		return "key found"
	case KeyMissing:
		return "no key"
	case KeyGaveUp:
		return "key not yet known"
	}
	return "no handshake"
}

// Counters count one direction's records.
type Counters struct {
	Records     int64 // records framed (whole)
	Decrypted   int64 // records whose tag verified
	AppRecords  int64 // of those, application data records
	AppBytes    int64 // plaintext bytes of application data handed out
	TagFailures int64 // records whose tag did not verify: dropped, the sequence number advanced
	Lost        int64 // records lost to gaps, counted by the sequence numbers skipped at resync
	Gaps        int64 // gaps signalled by Gap
	Resyncs     int64 // records framed again after a gap or a bad header
	BadHeaders  int64 // headers refused (oversized, unknown type or version)
	Dropped     int64 // encrypted records not decrypted for want of keys
	// Abandoned is set when a resync met MaxFalseHeaders plausible headers
	// in a row whose records did not verify: the direction is not read any
	// further (each try costs SeqWindow decryptions of up to a record).
	Abandoned bool
	// SkippedBytes are the bytes of an abandoned direction not read.
	SkippedBytes int64
}

// MaxFalseHeaders is how many plausible headers a resync tries, whose
// records verify at none of the window's sequence numbers, before it
// abandons the direction. By chance a header is plausible at about one
// offset in 10^8 of ciphertext: more than a few in a row is not chance.
const MaxFalseHeaders = 8

// State is what a Conn has found, for the report.
type State struct {
	TLS     bool   // the connection carries TLS records; false: undecided or passed through
	Plain   bool   // the first bytes were not TLS: everything is passed through as is
	Version string // "TLS 1.2" or "TLS 1.3"; "" before the ServerHello
	Suite   string // the cipher suite's IANA name, or "0x%04x" for one not supported
	Key     KeyStatus
	Side    [2]Counters // by kafka.Direction
}

// Summary is a short line for the report, e.g. "TLS 1.3
// TLS_AES_128_GCM_SHA256, key found" or "TLS, key not yet known".
func (s State) Summary() string {
	if s.Plain {
		return "not TLS"
	}
	if !s.TLS {
		return "no data"
	}
	if s.Key == KeyGaveUp {
		return "TLS, key not yet known"
	}
	if s.Version == "" {
		return "TLS, " + s.Key.String()
	}
	return fmt.Sprintf("%s %s, %s", s.Version, s.Suite, s.Key)
}

// RecordError is a problem met on one direction's records. It never
// carries secret or plaintext bytes.
type RecordError struct {
	Side   kafka.Direction
	At     kafka.FrameRef
	Reason string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("TLS %s frame %d: %s", e.Side, e.At.Frame, e.Reason)
}

type mode uint8

const (
	undecided mode = iota
	isTLS
	isPlain
)

// record is a whole record held while its keys are not known.
type record struct {
	raw      []byte // header and body
	at       kafka.FrameRef
	afterGap bool
}

// side is one direction's state.
type side struct {
	buf       []byte       // bytes not yet framed
	base      []byte       // buf's array from its start, to move buf back to
	spans     []kafka.Span // their spans, End relative to buf
	lost      bool         // after a gap or a bad header: looking for a plausible header
	falseHdrs int          // plausible headers of this resync that did not verify
	gap       bool         // the next record decrypted follows a gap: its sequence number is unknown

	hs hsReader

	encrypted bool // TLS 1.2: past ChangeCipherSpec; TLS 1.3: past the ServerHello
	epoch     int  // TLS 1.3: 1 handshake keys, 2 application keys
	secret    []byte
	aead      cipher.AEAD
	iv        []byte
	seq       uint64
	updates   int // TLS 1.3 key updates applied

	pending []record
	cnt     Counters
}

// Conn decrypts one TCP connection's TLS records, both directions. Feed
// gives it each direction's reassembled bytes in order; it returns the
// plaintext application data.
type Conn struct {
	keys *KeyLog
	opt  Options
	mode mode

	cr, sr       [32]byte
	haveCR       bool
	haveSH       bool
	version      uint16 // 0x0303 or 0x0304 once the ServerHello is read
	suiteID      uint16
	suite        *suite
	sec          *secrets
	key          KeyStatus
	pendingBytes int

	side [2]side

	out      []byte
	outSpans []kafka.Span
	err      error
}

// NewConn returns a Conn that finds its keys in keys (which may grow
// between calls: while the client random is missing, each Feed and Flush
// looks it up again).
func NewConn(keys *KeyLog, opt Options) *Conn {
	if opt.MaxPending <= 0 {
		opt.MaxPending = DefaultMaxPending
	}
	if opt.SeqWindow <= 0 {
		opt.SeqWindow = DefaultSeqWindow
	}
	return &Conn{keys: keys, opt: opt}
}

// State returns what the Conn has found so far.
func (c *Conn) State() State {
	st := State{TLS: c.mode == isTLS, Plain: c.mode == isPlain, Key: c.key}
	switch c.version {
	case 0x0303:
		st.Version = "TLS 1.2"
	case 0x0304:
		st.Version = "TLS 1.3"
	case 0:
	default:
		st.Version = fmt.Sprintf("TLS 0x%04x", c.version)
	}
	if c.suite != nil {
		st.Suite = c.suite.name
	} else if c.haveSH {
		st.Suite = fmt.Sprintf("0x%04x", c.suiteID)
	}
	st.Side[0], st.Side[1] = c.side[0].cnt, c.side[1].cnt
	return st
}

// Pending is how many ciphertext bytes direction s holds awaiting keys.
func (c *Conn) Pending(s kafka.Direction) int {
	n := 0
	for _, r := range c.side[s&1].pending {
		n += len(r.raw)
	}
	return n
}

// Held is how many ciphertext bytes the Conn holds awaiting keys, both
// directions together.
func (c *Conn) Held() int { return c.pendingBytes }

// GiveUp drops what the Conn holds while its keys are not known, and holds
// nothing more: the caller's budget for held ciphertext, shared among
// connections, is spent. State's Key is KeyGaveUp from then on; a Conn
// whose keys were found is not changed.
func (c *Conn) GiveUp() {
	if c.key == KeyFound {
		return
	}
	c.key = KeyGaveUp
	for i := range c.side {
		g := &c.side[i]
		g.cnt.Dropped += int64(len(g.pending))
		g.pending = nil
	}
	c.pendingBytes = 0
}

// Gap tells the Conn that bytes of direction s were lost before the next
// ones fed: the record they were in is lost, and the next record is framed
// at the first plausible header and its sequence number found by trial.
func (c *Conn) Gap(s kafka.Direction) {
	f := &c.side[s&1]
	f.cnt.Gaps++
	f.buf, f.spans = f.buf[:0], f.spans[:0]
	f.lost, f.gap = true, true
	f.falseHdrs = 0
	f.hs = hsReader{}
}

// Flush retries the key lookup and decrypts what direction s holds if the
// keys are now known: call it for both directions after the key log grew,
// and for ToBroker after a ToClient Feed whose ServerHello let the client's
// held records be read. The result is as Feed's.
func (c *Conn) Flush(s kafka.Direction) ([]byte, []kafka.Span, error) {
	return c.Feed(s, nil, nil)
}

// Feed takes the next bytes of direction s, with the spans that say which
// frame completed them (as reassembly gives them), and returns the
// plaintext application data it decrypted, with spans that attribute each
// record's plaintext to the frame that completed the record. The returned
// slices are the Conn's and valid until its next call. The error is the
// first problem met in this call (the Conn carries on; State counts them).
// When the connection's first bytes are not TLS, data and spans come back
// as they are.
func (c *Conn) Feed(s kafka.Direction, data []byte, spans []kafka.Span) ([]byte, []kafka.Span, error) {
	sc := c.opt.Scratch
	if sc == nil {
		return c.feed(s, data, spans)
	}
	c.out, c.outSpans = sc.out, sc.spans
	out, outSpans, err := c.feed(s, data, spans)
	sc.out, sc.spans = out, outSpans
	c.out, c.outSpans = nil, nil
	return out, outSpans, err
}

func (c *Conn) feed(s kafka.Direction, data []byte, spans []kafka.Span) ([]byte, []kafka.Span, error) {
	s &= 1
	c.out, c.outSpans, c.err = c.out[:0], c.outSpans[:0], nil
	f := &c.side[s]
	if c.mode == undecided && len(data) > 0 && !f.lost {
		hdr := append(append([]byte{}, f.buf...), data[:min(len(data), 5)]...)
		if len(hdr) < 5 {
			f.append(data, spans, c.opt.Scratch) // too few bytes to tell
			return c.out, c.outSpans, nil
		}
		if plausible(hdr, false) {
			c.mode = isTLS
		} else {
			c.mode = isPlain
		}
	}
	if c.mode == isPlain {
		if len(f.buf) > 0 { // the few bytes held while undecided
			pre := append(f.buf, data...)
			ps := append([]kafka.Span{}, f.spans...)
			for _, sp := range spans {
				ps = append(ps, kafka.Span{End: len(f.buf) + sp.End, At: sp.At})
			}
			f.buf, f.spans = nil, nil
			return pre, ps, nil
		}
		return data, spans, nil
	}
	if f.cnt.Abandoned {
		f.cnt.SkippedBytes += int64(len(data))
		return c.out, c.outSpans, nil
	}
	c.lookup()
	c.drain(s)
	f.append(data, spans, c.opt.Scratch)
	c.frame(s)
	if len(f.buf) == 0 {
		if cap(f.base) > maxIdleBuffer {
			c.opt.Scratch.give(f.base)
			f.base = nil
		}
		f.buf, f.spans = f.base[:0], f.spans[:0]
	}
	return c.out, c.outSpans, c.err
}

func (f *side) append(data []byte, spans []kafka.Span, sc *Scratch) {
	if len(data) == 0 {
		return
	}
	base := len(f.buf)
	need := len(f.buf) + len(data)
	switch {
	case need > cap(f.buf) && need <= cap(f.base):
		f.buf = f.base[:copy(f.base[:cap(f.base)], f.buf)] // move to the front, not grow
	case need > cap(f.base) && need > maxIdleBuffer && need <= recordBuffer:
		// A record too big for the small buffer: a record buffer, one
		// given back by another direction if there is one.
		b := sc.take(need)
		b = append(b, f.buf...)
		sc.give(f.base)
		f.buf, f.base = b, b[:0]
	}
	grow := len(f.buf)+len(data) > cap(f.buf)
	f.buf = append(f.buf, data...)
	if grow {
		f.base = f.buf[:0]
	}
	last := kafka.FrameRef{}
	prev := 0
	for _, sp := range spans {
		e := min(sp.End, len(data))
		if e <= prev {
			continue // empty, or out of order: the spans are the caller's
		}
		f.spans = append(f.spans, kafka.Span{End: base + e, At: sp.At})
		prev, last = e, sp.At
	}
	if prev < len(data) {
		f.spans = append(f.spans, kafka.Span{End: base + len(data), At: last})
	}
}

// at is the frame that completed byte i of the buffer.
func (f *side) at(i int) kafka.FrameRef {
	for _, sp := range f.spans {
		if sp.End > i {
			return sp.At
		}
	}
	if len(f.spans) > 0 {
		return f.spans[len(f.spans)-1].At
	}
	return kafka.FrameRef{}
}

func (f *side) consume(n int) {
	f.buf = f.buf[n:]
	k := 0
	for k < len(f.spans) && f.spans[k].End <= n {
		k++
	}
	f.spans = f.spans[k:]
	for i := range f.spans {
		f.spans[i].End -= n
	}
}

// plausible reports whether h starts a record header this package takes;
// strict: only application data of TLS 1.2/1.3's record version, which is
// what resynchronisation looks for.
func plausible(h []byte, strict bool) bool {
	n := int(binary.BigEndian.Uint16(h[3:5]))
	if n > MaxRecord || (strict && n < 17) {
		return false
	}
	if strict {
		return h[0] == typeAppData && h[1] == 3 && h[2] == 3
	}
	return h[0] >= typeCCS && h[0] <= typeAppData && h[1] == 3 && h[2] <= 4
}

func (c *Conn) fail(s kafka.Direction, at kafka.FrameRef, reason string) {
	if c.err == nil {
		c.err = &RecordError{Side: s, At: at, Reason: reason}
	}
}

// frame cuts direction s's buffer into records and handles each.
func (c *Conn) frame(s kafka.Direction) {
	f := &c.side[s]
	for {
		if f.lost {
			if !c.resync(s) {
				return
			}
		}
		if len(f.buf) < 5 {
			return
		}
		if !plausible(f.buf, false) {
			f.cnt.BadHeaders++
			c.fail(s, f.at(4), fmt.Sprintf("bad record header (type %d, version 0x%02x%02x, length %d)", f.buf[0], f.buf[1], f.buf[2], binary.BigEndian.Uint16(f.buf[3:5])))
			f.lost, f.gap = true, true
			f.consume(1)
			continue
		}
		n := 5 + int(binary.BigEndian.Uint16(f.buf[3:5]))
		if len(f.buf) < n {
			return
		}
		at := f.at(n - 1)
		f.cnt.Records++
		c.record(s, f.buf[:n], at, false)
		f.consume(n)
	}
}

// resync looks, after a gap, for a plausible application data header whose
// record verifies at one of the next sequence numbers (or, without keys, a
// plausible header alone). It reports whether framing may go on.
func (c *Conn) resync(s kafka.Direction) bool {
	f := &c.side[s]
	for {
		i := 0
		for ; i+5 <= len(f.buf); i++ {
			if plausible(f.buf[i:], true) {
				break
			}
		}
		if i+5 > len(f.buf) {
			keep := min(len(f.buf), 4)
			f.consume(len(f.buf) - keep)
			return false
		}
		f.consume(i)
		n := 5 + int(binary.BigEndian.Uint16(f.buf[3:5]))
		if len(f.buf) < n {
			return false
		}
		if f.aead == nil || c.trial(s, f.buf[:n]) {
			f.lost, f.falseHdrs = false, 0
			f.cnt.Resyncs++
			return true
		}
		f.consume(1)
		if f.falseHdrs++; f.falseHdrs >= MaxFalseHeaders {
			f.cnt.Abandoned = true
			f.cnt.SkippedBytes += int64(len(f.buf))
			c.fail(s, f.at(0), "no record verified after a gap: direction abandoned")
			f.buf, f.spans = nil, nil
			return false
		}
	}
}

// trial reports whether rec verifies at one of the sequence numbers of the
// window, without changing the state.
func (c *Conn) trial(s kafka.Direction, rec []byte) bool {
	f := &c.side[s]
	for k := 0; k < c.opt.SeqWindow; k++ {
		if _, _, ok := c.open(f, rec, f.seq+uint64(k), nil); ok {
			return true
		}
	}
	if c.version == 0x0304 && f.epoch == 1 && c.key == KeyFound && c.suite != nil {
		// The gap may have taken the Finished: the application keys.
		key, iv := trafficKeys(c.suite.hash, c.sec[[2]label{labelClientTraffic, labelServerTraffic}[s]], c.suite.keyLen)
		a, err := c.suite.aead(key)
		if err != nil {
			return false
		}
		g := side{aead: a, iv: iv}
		for k := 0; k < c.opt.SeqWindow; k++ {
			if _, _, ok := c.open(&g, rec, uint64(k), nil); ok {
				return true
			}
		}
	}
	return false
}

// record handles one whole record of direction s.
func (c *Conn) record(s kafka.Direction, rec []byte, at kafka.FrameRef, held bool) {
	f := &c.side[s]
	typ := rec[0]
	if !f.encrypted {
		switch typ {
		case typeHandshake:
			f.hs.feed(rec[5:], func(t byte, body []byte) { c.handshake(s, t, body, at) })
			return
		case typeCCS:
			if c.version == 0x0303 {
				f.encrypted = true
				f.seq = 0
				c.install(s)
			}
			return // TLS 1.3: the middlebox-compatibility CCS
		case typeAlert:
			return
		}
		// Application data before the keys: a TLS 1.3 client's records
		// read before the ServerHello (or 0-RTT, not supported), or a
		// connection seen mid-stream.
		if c.haveCR && !c.haveSH && s == kafka.ToBroker {
			c.hold(s, rec, at)
			return
		}
		f.cnt.Dropped++
		return
	}
	if c.version == 0x0304 && typ == typeCCS {
		return
	}
	if f.aead == nil {
		if c.key == KeyGaveUp || c.suite == nil {
			f.cnt.Dropped++
			return
		}
		c.hold(s, rec, at)
		return
	}
	if len(f.pending) > 0 && !held {
		c.hold(s, rec, at)
		return
	}
	c.decrypt(s, rec, at)
}

// hold keeps a record until its keys are known, within MaxPending.
func (c *Conn) hold(s kafka.Direction, rec []byte, at kafka.FrameRef) {
	f := &c.side[s]
	if c.key == KeyGaveUp {
		f.cnt.Dropped++
		return
	}
	if c.pendingBytes+len(rec) > c.opt.MaxPending {
		c.GiveUp()
		f.cnt.Dropped++
		c.fail(s, at, "ciphertext held for a key not in the key log reached the cap: given up")
		return
	}
	c.pendingBytes += len(rec)
	f.pending = append(f.pending, record{raw: bytes.Clone(rec), at: at, afterGap: f.gap})
	f.gap = false
}

// drain handles the records direction s holds if their keys are now known.
func (c *Conn) drain(s kafka.Direction) {
	f := &c.side[s]
	if len(f.pending) > 0 && !f.encrypted && c.haveSH && c.version == 0x0304 {
		// A TLS 1.3 client's records held for the ServerHello: the
		// handshake that came since made the side encrypted.
		f.encrypted = true
	}
	for len(f.pending) > 0 {
		if f.encrypted && f.aead == nil && c.key != KeyGaveUp && c.suite != nil {
			return
		}
		if !f.encrypted && !c.haveSH {
			return
		}
		r := f.pending[0]
		f.pending = f.pending[1:]
		c.pendingBytes -= len(r.raw)
		if r.afterGap {
			f.gap = true
		}
		c.record(s, r.raw, r.at, true)
	}
	f.pending = nil
}

// decrypt opens one record with the direction's keys and handles what it holds.
func (c *Conn) decrypt(s kafka.Direction, rec []byte, at kafka.FrameRef) {
	f := &c.side[s]
	window := 1
	if f.gap {
		window = c.opt.SeqWindow
	}
	var plain []byte
	var typ byte
	ok := false
	k := 0
	for ; k < window; k++ {
		if plain, typ, ok = c.open(f, rec, f.seq+uint64(k), c.scratch(len(rec))); ok {
			break
		}
	}
	if !ok && f.gap && c.version == 0x0304 && f.epoch == 1 {
		// The gap may have taken the Finished: try the application keys.
		aead, iv, secret := f.aead, f.iv, f.secret
		f.epoch = 2
		c.install(s)
		for k = 0; k < window && f.aead != nil; k++ {
			if plain, typ, ok = c.open(f, rec, uint64(k), c.scratch(len(rec))); ok {
				break
			}
		}
		if ok {
			f.seq = 0
		} else {
			f.epoch, f.aead, f.iv, f.secret = 1, aead, iv, secret
		}
	}
	if !ok {
		f.cnt.TagFailures++
		f.seq++
		c.fail(s, at, "record tag did not verify: record dropped")
		return
	}
	f.cnt.Lost += int64(k)
	f.seq += uint64(k) + 1
	f.gap = false
	f.cnt.Decrypted++
	switch typ {
	case typeAppData:
		f.cnt.AppRecords++
		f.cnt.AppBytes += int64(len(plain))
		c.emit(plain, at)
	case typeHandshake:
		f.hs.feed(plain, func(t byte, body []byte) { c.handshake(s, t, body, at) })
	}
}

// scratch is room for a record's plaintext at the end of the output.
func (c *Conn) scratch(n int) []byte {
	c.out = slices.Grow(c.out, n)
	return c.out[len(c.out):len(c.out):cap(c.out)]
}

// emit appends plaintext (already in place when it was opened into the
// output's spare room) to the output, attributed to frame at.
func (c *Conn) emit(plain []byte, at kafka.FrameRef) {
	if len(plain) == 0 {
		return
	}
	if cap(c.out) > len(c.out) && len(plain) <= cap(c.out)-len(c.out) && &c.out[:len(c.out)+1][len(c.out)] == &plain[0] {
		c.out = c.out[:len(c.out)+len(plain)]
	} else {
		c.out = append(c.out, plain...)
	}
	if n := len(c.outSpans); n > 0 && c.outSpans[n-1].At.Same(at) {
		c.outSpans[n-1].End = len(c.out)
		return
	}
	c.outSpans = append(c.outSpans, kafka.Span{End: len(c.out), At: at})
}

// open decrypts rec at sequence number seq into dst's spare room. It
// returns the plaintext and its content type.
func (c *Conn) open(f *side, rec []byte, seq uint64, dst []byte) ([]byte, byte, bool) {
	body := rec[5:]
	tag := f.aead.Overhead()
	var nonce [12]byte
	if c.version == 0x0304 {
		if len(body) < tag+1 {
			return nil, 0, false
		}
		copy(nonce[:], f.iv)
		xorSeq(&nonce, seq)
		p, err := f.aead.Open(dst, nonce[:], body, rec[:5])
		if err != nil {
			return nil, 0, false
		}
		i := len(p) - 1
		for i >= 0 && p[i] == 0 {
			i--
		}
		if i < 0 {
			return nil, 0, false // no content type: malformed
		}
		return p[:i], p[i], true
	}
	var aad [13]byte
	binary.BigEndian.PutUint64(aad[:8], seq)
	aad[8], aad[9], aad[10] = rec[0], rec[1], rec[2]
	if c.suite.chacha {
		if len(body) < tag {
			return nil, 0, false
		}
		copy(nonce[:], f.iv)
		xorSeq(&nonce, seq)
	} else {
		if len(body) < 8+tag {
			return nil, 0, false
		}
		copy(nonce[:4], f.iv)
		copy(nonce[4:], body[:8])
		body = body[8:]
	}
	binary.BigEndian.PutUint16(aad[11:], uint16(len(body)-tag))
	p, err := f.aead.Open(dst, nonce[:], body, aad[:])
	if err != nil {
		return nil, 0, false
	}
	return p, rec[0], true
}

func xorSeq(nonce *[12]byte, seq uint64) {
	for i := 0; i < 8; i++ {
		nonce[11-i] ^= byte(seq >> (8 * i))
	}
}

// handshake handles one handshake message of direction s.
func (c *Conn) handshake(s kafka.Direction, typ byte, body []byte, at kafka.FrameRef) {
	f := &c.side[s]
	switch {
	case typ == 1 && s == kafka.ToBroker && !f.encrypted:
		if ch, ok := parseClientHello(body); ok {
			c.cr, c.haveCR = ch.random, true
			c.lookup()
		} else {
			c.fail(s, at, "malformed ClientHello")
		}
	case typ == 2 && s == kafka.ToClient && !f.encrypted:
		sh, ok := parseServerHello(body)
		if !ok {
			c.fail(s, at, "malformed ServerHello")
			return
		}
		if sh.random == hrrRandom {
			return // HelloRetryRequest: another ClientHello, ServerHello follow
		}
		c.sr, c.haveSH = sh.random, true
		c.version, c.suiteID = sh.version, sh.suite
		c.suite = findSuite(sh.suite)
		if c.suite != nil && c.suite.tls13 != (c.version == 0x0304) {
			c.suite = nil
		}
		if c.suite == nil {
			c.fail(s, at, fmt.Sprintf("cipher suite 0x%04x (version 0x%04x) is not supported", sh.suite, sh.version))
		}
		c.lookup()
		if c.version == 0x0304 {
			for i := range c.side {
				g := &c.side[i]
				g.encrypted, g.epoch, g.seq = true, 1, 0
				c.install(kafka.Direction(i))
			}
		}
	case typ == 20 && f.encrypted && c.version == 0x0304 && f.epoch == 1:
		f.epoch, f.seq = 2, 0
		c.install(s)
	case typ == 24 && f.encrypted && c.version == 0x0304 && f.epoch == 2 && f.secret != nil:
		f.secret = nextSecret(c.suite.hash, f.secret)
		f.updates++
		f.seq = 0
		c.keys13(f)
	}
}

// lookup looks the client random up in the key log while the keys are missing.
func (c *Conn) lookup() {
	if !c.haveCR || c.key == KeyFound || c.key == KeyGaveUp {
		return
	}
	c.sec = c.keys.lookup(c.cr)
	if c.sec == nil || (c.haveSH && !c.has(c.sec)) {
		c.key = KeyMissing
		return
	}
	if !c.haveSH {
		return // found, but which secrets are needed is not known yet
	}
	c.key = KeyFound
	for i := range c.side {
		c.install(kafka.Direction(i))
	}
}

// has reports whether sec holds what the negotiated version needs.
func (c *Conn) has(sec *secrets) bool {
	if c.version == 0x0304 {
		return sec[labelClientHandshake] != nil && sec[labelServerHandshake] != nil &&
			sec[labelClientTraffic] != nil && sec[labelServerTraffic] != nil
	}
	return sec[labelMaster] != nil
}

// install sets direction s's keys for its current epoch, if known.
func (c *Conn) install(s kafka.Direction) {
	f := &c.side[s]
	if c.key != KeyFound || c.suite == nil || !f.encrypted {
		return
	}
	if c.version == 0x0304 {
		l := [2][3]label{{0, labelClientHandshake, labelClientTraffic}, {0, labelServerHandshake, labelServerTraffic}}[s][f.epoch]
		f.secret = bytes.Clone(c.sec[l])
		if len(f.secret) != c.suite.hash().Size() {
			c.fail(s, kafka.FrameRef{}, "key log secret has the wrong length for the cipher suite")
			f.aead = nil
			return
		}
		for range f.updates {
			f.secret = nextSecret(c.suite.hash, f.secret)
		}
		c.keys13(f)
		return
	}
	ck, sk, civ, siv := keyBlock12(c.suite.hash, c.sec[labelMaster], c.cr[:], c.sr[:], c.suite.keyLen, c.suite.ivLen)
	key, iv := ck, civ
	if s == kafka.ToClient {
		key, iv = sk, siv
	}
	a, err := c.suite.aead(key)
	if err != nil {
		return
	}
	f.aead, f.iv = a, iv
}

func (c *Conn) keys13(f *side) {
	key, iv := trafficKeys(c.suite.hash, f.secret, c.suite.keyLen)
	a, err := c.suite.aead(key)
	if err != nil {
		f.aead = nil
		return
	}
	f.aead, f.iv = a, iv
}

// Format prints the Conn's summary whatever the verb: a Conn holds keys,
// and no verb may reach them.
func (c Conn) Format(f fmt.State, _ rune) {
	_, _ = f.Write([]byte("tlsdec.Conn(" + c.State().Summary() + ")"))
}
