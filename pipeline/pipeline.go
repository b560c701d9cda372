package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/capture/filter"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
	"github.com/kidscope/kidscope/tlsdec"
)

// Options say what to read and how.
type Options struct {
	Files []string  // capture files; "-" is Stdin
	Stdin io.Reader // read for "-"
	// Source, when set, is read instead of Files (a live capture).
	Source Source
	// Filter, when set, selects the frames of Files to read (a live
	// Source filters in the kernel instead).
	Filter *filter.Filter
	// MaxPackets stops the run after that many frames (0: no limit).
	MaxPackets int64
	// TCPStreams caps the 4-tuples numbered as Wireshark's tcp.stream
	// (tcpstream.go; default 262,144): the connections of later ones have
	// no number (Conn.HasTCPStream).
	TCPStreams int
	// Time, when it has a bound, drops the packets of Files outside it
	// before reassembly (timerange.go); they are counted in
	// Summary.OutsideTime.
	Time TimeRange
	// OnTick, when set, is called about once a second of wall time.
	OnTick func(Progress)
	// Workers shares the connections of Files among this many goroutines
	// that reassemble and decode them, while one more reads; the events
	// reach the Sink in the same order as with one. 0 or 1 runs everything
	// on the calling goroutine, as does a Source.
	Workers    int
	Reassembly reassembly.Options
	Decode     decode.Options
	// Rules, when set, runs the rules over every connection (analyze,
	// live); frames leaves it unset.
	Rules *Check
	// ResyncBytes caps the bytes that connection sides which lost their
	// framing keep in all while they look for a frame start (default 64
	// MiB; each side keeps at most Decode.MaxScan). Workers share it out.
	ResyncBytes int64
	// BodyBytes caps the bytes that frames in progress buffer in all: the
	// bodies the rules read and the answers decoded in full, kept whole
	// until their last byte (default 32 MiB, DefaultBodyBytes; each body
	// is capped by Decode.MaxBodySize too). Workers share it out. A body
	// that does not fit is not decoded, and is counted.
	BodyBytes int64
	// TLSKeyLog, when set, is the text of NSS key logs: TLS connections
	// whose secrets it holds are decrypted before they are decoded (each
	// worker parses its own copy). The decryption secrets blocks of
	// pcapng inputs are added to it as they are read, when it is set or
	// TLSSecrets is.
	TLSKeyLog []byte
	// TLSSecrets reads the decryption secrets blocks of pcapng inputs
	// without a key log given.
	TLSSecrets bool
	// TLSMore, when set (live, with key logs that grow while it runs), is
	// called about ten times a second of wall time for the key log text
	// written since; connections whose keys it brings are decrypted from
	// the ciphertext they held.
	TLSMore func() []byte
	// TLSMaxKeys caps the client randoms each worker's key log keeps
	// (default 65,536; each worker keeps the same ones, so the output does
	// not depend on Workers). A key log that grows (live) forgets its
	// oldest to make room; a whole one given for files keeps its first,
	// and the lines of the others are counted (Summary.TLSKeysNotKept).
	TLSMaxKeys int
	// TLSHeldBytes caps the ciphertext that TLS connections hold in all
	// while their keys are not known (the key log may grow, or a later
	// decryption secrets block bring them): default 16 MiB, each
	// connection at most tlsdec.DefaultMaxPending. Over it the
	// connections that waited longest give up. Workers share it out.
	TLSHeldBytes int64
}

// defaultTLSMaxKeys is Options.TLSMaxKeys when it is not set.
const defaultTLSMaxKeys = 1 << 16

// defaultTLSHeldBytes is Options.TLSHeldBytes when it is not set.
const defaultTLSHeldBytes = 16 << 20

// defaultResyncBytes is Options.ResyncBytes when it is not set.
const defaultResyncBytes = 64 << 20

// DefaultBodyBytes is Options.BodyBytes when it is not set: eight bodies
// at the decoder's 4 MiB cap at once, or thousands of the few KiB that
// real ones take.
const DefaultBodyBytes = 32 << 20

// scanBudget returns the budget of one of n workers.
func (o *Options) scanBudget(n int) *decode.ScanBudget {
	total := o.ResyncBytes
	if total <= 0 {
		total = defaultResyncBytes
	}
	return &decode.ScanBudget{Max: max(total/int64(n), 1)}
}

// bodyBudget returns the body budget of one of n workers.
func (o *Options) bodyBudget(n int) *decode.BodyBudget {
	total := o.BodyBytes
	if total <= 0 {
		total = DefaultBodyBytes
	}
	return &decode.BodyBudget{Max: max(total/int64(n), 1)}
}

// Conn is what the pipeline knows of one connection; it is handed to the
// Sink with every event and stays valid for the whole run.
type Conn struct {
	kafka.Conn
	Gaps int
	// End is set when the connection closed, before Sink.Closed.
	End *End
}

// End is what is known of a connection once it closed. (Kept apart from
// Conn, which each of 100,000 open connections carries.)
type End struct {
	Close kafka.Close
	decode.Outcome
}

// Sink receives the decoded events in capture order; it may be nil when
// only the Result is wanted. It may also be an OpenSink, a GapSink or a
// FindingSink.
type Sink interface {
	// Event is called for each decoder event; e is valid only during the
	// call.
	Event(c *Conn, e *decode.Event)
	// Closed is called once per connection, after its last event.
	Closed(c *Conn)
}

// OpenSink is a Sink that also wants to hear of each connection when it
// opens, before its first event.
type OpenSink interface {
	Open(c *Conn)
}

// GapSink is a Sink that also wants to hear of lost bytes, before the
// events that follow them.
type GapSink interface {
	Gap(c *Conn, side kafka.Direction, at kafka.FrameRef)
}

// maxCutFrames is how many snap-length-cut frames a Summary names.
const maxCutFrames = 10

// Source is a packet source: capture files or a live interface.
type Source interface {
	// Next returns the next TCP segment, io.EOF at the end, or
	// capture.ErrNoPacket when a live source had nothing within its poll
	// interval.
	Next(p *capture.Packet) error
	Stats() capture.Stats
	Close() error
}

// Progress is what OnTick reports of a run so far.
type Progress struct {
	Packets, Bytes int64
	// FileBytes is how much of the input files was read (compressed bytes
	// for gzip), for a progress bar against their sizes.
	FileBytes   int64
	KernelDrops int64
	Connections int64 // connections that carried data so far
	Open        int   // connections open now
	Requests    int64
	Responses   int64
	// Verdicts are the brokers' KIP-1313 verdicts so far (with
	// Options.Rules; known ones only): the run's goroutine reads them
	// from the engine for each tick.
	Verdicts []rules.BrokerVerdict
}

// Run reads the inputs to the end (or until ctx is done, or MaxPackets),
// hands every event to sink and, with Options.Rules, checks the rules. The
// error is for inputs that cannot be read at all.
func Run(ctx context.Context, opt Options, sink Sink) (Result, error) {
	if sink == nil {
		sink = nopSink{}
	}
	d := &deliverer{sink: sink, check: newChecker(opt.Rules, sink)}
	sum, err := run(ctx, opt, d)
	res := Result{Summary: sum}
	if d.check != nil {
		res.Rules = d.check.result()
	}
	return res, err
}

type nopSink struct{}

func (nopSink) Event(*Conn, *decode.Event) {}
func (nopSink) Closed(*Conn)               {}

func run(ctx context.Context, opt Options, d *deliverer) (result.Summary, error) {
	var sum result.Summary
	d.sum = &sum
	d.streams = newTCPStreams(opt.TCPStreams)
	src := opt.Source
	var files *capture.Reader
	if src == nil {
		r, err := capture.Open(opt.Files, opt.Stdin)
		if err != nil {
			return sum, err
		}
		sum.Files = r.Files()
		src, files = r, r
		if opt.Filter != nil {
			r.SetFilter(opt.Filter)
		}
	}
	defer src.Close()
	if opt.Workers > 1 && files != nil {
		return runParallel(ctx, opt, files, d)
	}
	gate := reassembly.NewGate(opt.Reassembly)
	tally := newPortTally(&opt)
	w := newWorker(&opt, opt.Reassembly.Gated(), 1, d)
	asm := w.asm
	if files != nil && w.keys != nil {
		files.OnSecrets(func(_ int, typ uint32, data []byte) { w.addSecrets(typ, data) })
	}
	var p capture.Packet
	nextTick := time.Now().Add(time.Second)
	tick := func() {
		if opt.OnTick == nil {
			return
		}
		pr := d.progress(src.Stats())
		if files != nil {
			pr.FileBytes = files.BytesRead()
		}
		opt.OnTick(pr)
	}
	var nextKeys time.Time // the first poll comes with the first packet
	pollKeys := func() {
		if opt.TLSMore != nil && time.Now().After(nextKeys) {
			nextKeys = time.Now().Add(100 * time.Millisecond)
			w.moreKeys(opt.TLSMore())
		}
	}
	for n := 0; ; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			sum.Interrupted = true
			break
		}
		if n&63 == 0 {
			pollKeys()
		}
		if opt.MaxPackets > 0 && src.Stats().Packets >= opt.MaxPackets {
			break
		}
		if n&255 == 0 && opt.OnTick != nil && time.Now().After(nextTick) {
			nextTick = time.Now().Add(time.Second)
			tick()
		}
		err := src.Next(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, capture.ErrNoPacket) {
			// A live source is quiet: expire idle connections by wall
			// time, and look at the context again.
			if ctx.Err() != nil {
				sum.Interrupted = true
				break
			}
			pollKeys()
			gate.Expire(time.Now())
			asm.Expire(time.Now())
			if time.Now().After(nextTick) {
				nextTick = time.Now().Add(time.Second)
				tick()
			}
			continue
		}
		if err != nil {
			return sum, err
		}
		if opt.Time.Any() && !opt.Time.keep(p.Time) {
			sum.OutsideTime++
			continue
		}
		note(&sum, &p)
		d.streams.seePacket(&p)
		if other, probe := tally.see(uint16(p.TCP.SrcPort), uint16(p.TCP.DstPort), synAck(p.TCP), len(p.TCP.Payload)); other {
			if probe {
				tally.probe(uint16(p.TCP.DstPort), p.TCP.Payload)
			}
			tally.count(uint16(p.TCP.SrcPort), uint16(p.TCP.DstPort))
		}
		if gate.AdmitTCP(&p) {
			asm.Add(&p)
		}
	}
	asm.Finish()
	sum.Capture = src.Stats()
	sum.Reassembly = asm.Stats()
	sum.Reassembly.Add(gate.Stats())
	sum.TLSKeysNotKept, sum.TLSKeysKept = w.keys.Evicted(), w.keys.Len()
	tally.fill(&sum)
	if files != nil {
		sum.Problems, sum.Comments = files.Problems(), files.Comments()
	}
	tick()
	return sum, nil
}

// note records a packet's time and snap-length cut in the summary.
func note(s *result.Summary, p *capture.Packet) {
	if s.First.IsZero() {
		s.First = p.Time
	}
	s.Last = p.Time
	if p.Cut && len(s.CutFrames) < maxCutFrames {
		s.CutFrames = append(s.CutFrames, kafka.FrameRef{File: p.File, Frame: p.Frame, Time: p.Time})
	}
}

// worker reassembles and decodes the connections it is given, and tells
// what happens to them to an emitter: the deliverer directly, or a recorder
// whose record a deliverer replays in capture order (parallel.go).
type worker struct {
	asm  *reassembly.Assembler
	dopt decode.Options
	out  emitter
	// keys is the worker's own key log (nil without TLS decryption): only
	// its goroutine reads it or adds to it.
	keys *tlsdec.KeyLog
	// growing: the key log grows while the run goes on (TLSMore). Keys may
	// also come in a later decryption secrets block, so connections hold
	// what they cannot decrypt yet; waiting are those that hold
	// ciphertext for want of keys, held bytes in all, at most maxHeld.
	growing bool
	waiting map[*workerConn]*reassembly.Conn
	more    func() []byte // Options.TLSMore
	held    int64
	maxHeld int64
	// secretsSeen: an input had a decryption secrets block.
	secretsSeen bool
	// tlsOut is the plaintext buffer the worker's connections share: each
	// Feed's output is decoded before the next Feed.
	tlsOut tlsdec.Scratch
}

// emitter hears what a worker makes of its connections.
type emitter interface {
	open(c *Conn)
	event(c *Conn, e *decode.Event)
	gap(c *Conn, side kafka.Direction, at kafka.FrameRef)
	closed(c *Conn, end End)
}

// workerConn is a worker's own state of a connection. The worker fills in
// the Conn when it opens and leaves it to the deliverer from then on.
type workerConn struct {
	conn *Conn
	dec  *decode.Conn
	tls  *tlsdec.Conn // nil when the worker has no keys
	held int          // tls.Held() when last counted in worker.held
}

// newWorker makes one of n workers, with assembler options ropt.
func newWorker(opt *Options, ropt reassembly.Options, n int, out emitter) *worker {
	dopt := opt.Decode
	if dopt.Scratch == nil {
		dopt.Scratch = new(decode.Scratch) // one event list for every connection
	}
	dopt.ScanBudget = opt.scanBudget(n)
	dopt.BodyBudget = opt.bodyBudget(n)
	w := &worker{dopt: dopt, out: out}
	if len(opt.TLSKeyLog) > 0 || opt.TLSSecrets || opt.TLSMore != nil {
		w.keys = &tlsdec.KeyLog{}
		w.keys.Limit(cmp.Or(opt.TLSMaxKeys, defaultTLSMaxKeys), opt.TLSMore != nil)
		w.keys.AddAll(opt.TLSKeyLog) // the lines not taken were reported by the caller
		w.waiting = map[*workerConn]*reassembly.Conn{}
		w.growing, w.more = opt.TLSMore != nil, opt.TLSMore
		w.maxHeld = opt.TLSHeldBytes
		if w.maxHeld <= 0 {
			w.maxHeld = defaultTLSHeldBytes
		}
		w.maxHeld = max(w.maxHeld/int64(n), 1)
	}
	w.asm = reassembly.New(ropt, w)
	return w
}

// moreKeys adds key log text written since the run began, and decrypts
// what the connections waiting for those keys held.
func (w *worker) moreKeys(text []byte) {
	if w.keys == nil || len(text) == 0 {
		return
	}
	w.keys.AddAll(text)
	w.flushWaiting()
}

// flushWaiting decrypts what the connections waiting for keys held, if
// the keys just added are theirs.
func (w *worker) flushWaiting() {
	// In the order the connections opened, not the map's.
	conns := make([]*workerConn, 0, len(w.waiting))
	for wc := range w.waiting {
		conns = append(conns, wc)
	}
	slices.SortFunc(conns, func(a, b *workerConn) int { return a.conn.First.Compare(b.conn.First) })
	for _, wc := range conns {
		rc := w.waiting[wc]
		w.flushInOrder(rc, wc)
		w.markWaiting(rc, wc)
	}
}

// flushInOrder decrypts what both directions of wc held and decodes it in
// the order of the frames that completed each record, as the connection
// carried it, not one direction after the other: the requests and their
// responses reach the rules as they would have with the keys known.
func (w *worker) flushInOrder(rc *reassembly.Conn, wc *workerConn) {
	var data [2][]byte
	var spans [2][]kafka.Span
	for d := range data {
		out, sp, _ := wc.tls.Flush(kafka.Direction(d))
		// Each Flush's slices are the Conn's until its next call.
		data[d], spans[d] = bytes.Clone(out), slices.Clone(sp)
	}
	var pos, next [2]int
	for next[0] < len(spans[0]) || next[1] < len(spans[1]) {
		d := 0
		switch {
		case next[0] == len(spans[0]):
			d = 1
		case next[1] < len(spans[1]):
			a, b := spans[0][next[0]].At, spans[1][next[1]].At
			if b.Time.Before(a.Time) || (b.Time.Equal(a.Time) && b.Compare(a) < 0) {
				d = 1
			}
		}
		sp := spans[d][next[d]]
		part := data[d][pos[d]:sp.End]
		pos[d], next[d] = sp.End, next[d]+1
		w.emit(rc, wc, wc.dec.Feed(kafka.Direction(d), part, []kafka.Span{{End: len(part), At: sp.At}}))
	}
}

// markWaiting keeps track of whether wc holds ciphertext for want of
// keys, and of the bytes held in all: over maxHeld, the connections that
// waited longest give up theirs.
func (w *worker) markWaiting(rc *reassembly.Conn, wc *workerConn) {
	h := wc.tls.Held()
	w.held += int64(h - wc.held)
	wc.held = h
	if h > 0 {
		w.waiting[wc] = rc
	} else {
		delete(w.waiting, wc)
	}
	if w.held <= w.maxHeld {
		return
	}
	conns := make([]*workerConn, 0, len(w.waiting))
	for c := range w.waiting {
		conns = append(conns, c)
	}
	slices.SortFunc(conns, func(a, b *workerConn) int { return a.conn.First.Compare(b.conn.First) })
	for _, c := range conns {
		if w.held <= w.maxHeld {
			break
		}
		c.tls.GiveUp()
		w.held -= int64(c.held)
		c.held = 0
		delete(w.waiting, c)
	}
}

// forget takes a closing connection out of the waiting set.
func (w *worker) forget(wc *workerConn) {
	w.held -= int64(wc.held)
	wc.held = 0
	delete(w.waiting, wc)
}

// addSecrets adds a pcapng decryption secrets block's TLS key log to the
// worker's keys.
func (w *worker) addSecrets(typ uint32, data []byte) {
	if w.keys != nil && typ == capture.SecretsTLSKeyLog {
		w.secretsSeen = true
		w.keys.AddAll(data)
		w.flushWaiting()
	}
}

func (w *worker) Open(rc *reassembly.Conn) {
	wc := &workerConn{dec: decode.NewConn(w.dopt), conn: &Conn{Conn: rc.Conn}}
	// With no keys at all (and none to come from a growing key log) a TLS
	// connection is left to the decoder, which names it TLS. Once a file
	// has a secrets block, even one of comments only (live
	// --write-secrets starts its files so), more may follow.
	if w.keys != nil && (w.keys.Len() > 0 || w.growing || w.secretsSeen) {
		wc.tls = tlsdec.NewConn(w.keys, tlsdec.Options{Scratch: &w.tlsOut})
	}
	wc.dec.Start(kafka.ToBroker, rc.MidStream[kafka.ToBroker])
	wc.dec.Start(kafka.ToClient, rc.MidStream[kafka.ToClient])
	rc.User = wc
	w.out.open(wc.conn)
}

func (w *worker) Data(rc *reassembly.Conn, d kafka.Direction, data []byte, spans []kafka.Span) {
	wc := rc.User.(*workerConn)
	if wc.tls == nil {
		w.emit(rc, wc, wc.dec.Feed(d, data, spans))
		return
	}
	// Decrypted, or passed through as it is when the connection is not
	// TLS; the record errors are counted in the Conn's State.
	if out, sp, _ := wc.tls.Feed(d, data, spans); len(out) > 0 {
		w.emit(rc, wc, wc.dec.Feed(d, out, sp))
	}
	// A client's records held until the server's hello told their keys.
	if d == kafka.ToClient && wc.tls.Pending(kafka.ToBroker) > 0 {
		if out, sp, _ := wc.tls.Flush(kafka.ToBroker); len(out) > 0 {
			w.emit(rc, wc, wc.dec.Feed(kafka.ToBroker, out, sp))
		}
	}
	w.markWaiting(rc, wc)
}

func (w *worker) Gap(rc *reassembly.Conn, d kafka.Direction, lost int, at kafka.FrameRef) {
	wc := rc.User.(*workerConn)
	if wc.tls != nil {
		wc.tls.Gap(d)
	}
	wc.dec.Lost(d)
	w.out.gap(wc.conn, d, at)
}

func (w *worker) Closed(rc *reassembly.Conn, at kafka.FrameRef) {
	wc := rc.User.(*workerConn)
	if _, ok := w.waiting[wc]; ok && w.growing {
		// A short connection may close before the next poll of the key
		// log, which its client wrote as it began.
		w.moreKeys(w.more())
	}
	w.emit(rc, wc, wc.dec.Finish())
	out := wc.dec.Outcome()
	if wc.tls != nil {
		w.forget(wc)
		switch st := wc.tls.State(); {
		case st.TLS && st.Key == tlsdec.KeyFound && out.NotKafka == "" && undecryptable(&st):
			out.NotKafka = rules.TLSWrongKey
		case st.TLS && st.Key == tlsdec.KeyFound:
			out.TLS = strings.TrimSpace(st.Version + " " + st.Suite)
		case st.TLS && st.Key == tlsdec.KeyGaveUp && w.growing && out.NotKafka == "":
			out.NotKafka = rules.TLSKeyNotYetKnown
		case st.TLS && out.NotKafka == "":
			out.NotKafka = rules.TLSNoKey
		}
	}
	w.out.closed(wc.conn, End{Close: rc.Close, Outcome: out})
	wc.dec = nil // its buffers are no longer needed
}

// undecryptable: the key log had the connection's secrets, but no
// application record verified with them and some failed: the wrong key
// (a key log of another run, its lines mixed up), not a decrypted
// connection that carried nothing.
func undecryptable(st *tlsdec.State) bool {
	s := &st.Side
	return s[0].AppRecords+s[1].AppRecords == 0 && s[0].TagFailures+s[1].TagFailures > 0
}

func (w *worker) emit(rc *reassembly.Conn, wc *workerConn, evs []decode.Event) {
	for i := range evs {
		if evs[i].Kind == decode.EventNotKafka {
			// A new connection on the 4-tuple may take it over (a client
			// reusing its port), to be decoded afresh.
			rc.Abandoned = true
		}
		w.out.event(wc.conn, &evs[i])
	}
}

// deliverer numbers the connections, keeps the counters of the summary and
// hands everything to the rules stage and the Sink, in capture order.
type deliverer struct {
	sink      Sink
	check     *checker // nil without Options.Rules
	sum       *result.Summary
	streams   *tcpStreams // Wireshark's tcp.stream numbers, by first packet
	nextID    int
	openNow   int // connections open now
	requests  int64
	responses int64
}

func (d *deliverer) progress(st capture.Stats) Progress {
	p := Progress{Packets: st.Packets, Bytes: st.Bytes, KernelDrops: st.KernelDrops,
		Connections: d.sum.Connections, Open: d.openNow, Requests: d.requests, Responses: d.responses}
	if d.check != nil {
		p.Verdicts = d.check.engine.Verdicts()
	}
	return p
}

func (d *deliverer) open(c *Conn) {
	d.nextID++
	c.ID = d.nextID
	c.TCPStream, c.HasTCPStream = d.streams.stream(c.First.File, c.First.Frame)
	d.sum.Connections++
	d.openNow++
	if d.check != nil {
		d.check.open(c)
	}
	if o, ok := d.sink.(OpenSink); ok {
		o.Open(c)
	}
}

func (d *deliverer) event(c *Conn, e *decode.Event) {
	switch e.Kind {
	case decode.EventNotKafka:
		d.sum.NotKafka++
	case decode.EventTruncated:
		d.sum.Truncated++
	case decode.EventRequest:
		d.requests++
	case decode.EventResponse:
		d.responses++
	}
	if d.check != nil {
		d.check.event(c, e)
	}
	d.sink.Event(c, e)
}

func (d *deliverer) gap(c *Conn, side kafka.Direction, at kafka.FrameRef) {
	c.Gaps++
	d.sum.Gaps++
	if d.check != nil {
		d.check.gap(c, side, at)
	}
	if g, ok := d.sink.(GapSink); ok {
		g.Gap(c, side, at)
	}
}

func (d *deliverer) closed(c *Conn, end End) {
	c.End = &end
	d.openNow--
	n := &end.Counters
	d.sum.Add(*n)
	if rules.TLSWithoutKey(end.Outcome.NotKafka) {
		d.sum.NotKafka++ // named at its close, with no event of the decoder's
	}
	if d.check != nil {
		d.check.closed(c)
	}
	d.sink.Closed(c)
}
