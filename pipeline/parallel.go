package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
)

// The parallel run. One goroutine reads the capture and deals its packets
// to the workers by a hash of their connection, in chunks; each worker
// reassembles and decodes its connections and records what it makes of
// them, each record keyed by the number of the packet being added then;
// the calling goroutine merges the workers' records of each chunk by that
// key and replays them to the deliverer. The Sink hears the same events in
// the same order as from one worker: a connection's events depend only on
// its own packets, and time-driven flushes happen after the same packets
// because one FlushClock over the whole capture decides them for all.
//
// Keys: packet number n is 2n; a flush after packet n is 2n+1, so that it
// comes after that packet's own records whichever worker had the packet.

const (
	chunkPackets = 256       // packets per chunk, over all workers
	chunkBytes   = 512 << 10 // or fewer, when their TCP bytes reach this
	// Chunks in flight between the dealer and the merger. The merger takes
	// a chunk's parts from every worker before it can free the chunk, so
	// a worker busy with one connection's burst (a 1 MiB fetch response is
	// 700 segments) holds the others back once they are this far ahead.
	chunksAhead = 16
	// batchOps is the most records a worker holds before it hands them
	// over: the end of a capture closes every connection at once (100,000
	// of them, at the connection cap), and those records are passed on as
	// they come, not all held.
	batchOps  = 1024
	keyFinish = math.MaxInt64
)

// chunk is a run of consecutive packets, dealt to the workers in parts.
type chunk struct {
	// arena holds the TCP header and payload of each packet the reader
	// did not leave in a file's mapping, read by all workers.
	arena []byte
	// lease keeps the chunk's segments in a file's mapping mapped until
	// the merger is done with the chunk.
	lease *capture.Lease
	parts []*part // one per worker
	last  bool    // the final chunk: the workers finish their connections
	err   error
	// interrupted: the context ended the run.
	interrupted bool
	stats       capture.Stats
	// secrets are the TLS key logs of the decryption secrets blocks read
	// with the chunk's packets: each worker adds them to its own key log
	// before it reads them.
	secrets [][]byte
}

// part is one worker's share of one chunk, and then its records.
type part struct {
	chunk   *chunk
	pkts    []packetRec
	flushes []flushRec
	// Set by the worker.
	asmStats reassembly.Stats
	keysLost int64 // the worker's key log's Evicted and Len, at the end
	keysKept int
}

type packetRec struct {
	key   int64
	file  int
	frame int64
	// sec and nsec are the capture time (UTC), which a time.Time would
	// hold with a pointer to its location.
	sec     int64
	nsec    int32
	network gopacket.Flow
	cut     bool
	wire    int
	// seg is the TCP header and payload, in the chunk's arena or in the
	// file's mapping. Its fixed header is copied: the worker reads it here
	// with the rest of the record.
	seg capture.Segment
}

type flushRec struct {
	key int64
	at  time.Time
}

type opKind uint8

const (
	opOpen opKind = iota
	opEvent
	opGap
	opClosed
)

// op is one thing a worker told its emitter; the event or the end of the
// connection it carries is at index i of its batch's events or ends.
type op struct {
	key  int64
	kind opKind
	side kafka.Direction
	i    int32
	conn *Conn
	at   kafka.FrameRef
}

// batch is a run of a worker's records; done is set on the last batch of
// a part.
type batch struct {
	ops    []op
	events []decode.Event
	ends   []End
	done   *part
}

func (b *batch) reset() {
	clear(b.events) // their strings and slices
	clear(b.ends)
	b.ops, b.events, b.ends, b.done = b.ops[:0], b.events[:0], b.ends[:0], nil
}

// recorder is the emitter of a parallel worker: it keeps the records in
// batches, and hands over each batch when it is full.
type recorder struct {
	key  int64
	cur  *batch
	out  chan<- *batch
	free chan *batch
}

func (r *recorder) add(o op) {
	o.key = r.key
	r.cur.ops = append(r.cur.ops, o)
	if len(r.cur.ops) >= batchOps {
		r.send(nil)
	}
}

// send hands over the current batch, as the last of pt when pt is set.
func (r *recorder) send(pt *part) {
	r.cur.done = pt
	r.out <- r.cur
	select {
	case r.cur = <-r.free:
	default:
		r.cur = new(batch)
	}
}

func (r *recorder) open(c *Conn) { r.add(op{kind: opOpen, conn: c}) }
func (r *recorder) event(c *Conn, e *decode.Event) {
	r.cur.events = append(r.cur.events, *e)
	r.add(op{kind: opEvent, conn: c, i: int32(len(r.cur.events) - 1)})
}
func (r *recorder) gap(c *Conn, side kafka.Direction, at kafka.FrameRef) {
	r.add(op{kind: opGap, conn: c, side: side, at: at})
}
func (r *recorder) closed(c *Conn, end End) {
	r.cur.ends = append(r.cur.ends, end)
	r.add(op{kind: opClosed, conn: c, i: int32(len(r.cur.ends) - 1)})
}

func runParallel(ctx context.Context, opt Options, files *capture.Reader, d *deliverer) (result.Summary, error) {
	sum := d.sum
	if d.streams == nil { // called without run (tests)
		d.streams = newTCPStreams(opt.TCPStreams)
	}
	n := opt.Workers
	free := make(chan *chunk, chunksAhead)
	for range chunksAhead {
		c := &chunk{parts: make([]*part, n)}
		for i := range c.parts {
			c.parts[i] = &part{chunk: c, pkts: make([]packetRec, 0, chunkPackets)}
		}
		free <- c
	}
	work := make([]chan *part, n)
	done := make([]chan *batch, n)
	// Spent batches, for the recorders to reuse: room for one per part of
	// each chunk in flight and one being filled, so that none is dropped
	// and made again in the common case of one batch per part (a part
	// that makes more, such as the finish, lets the extra ones go).
	batches := make(chan *batch, (chunksAhead+2)*n)
	ropt := opt.Reassembly.Gated().Split(n)
	ropt.CallerFlushes = true
	for i := range n {
		work[i] = make(chan *part, chunksAhead)
		done[i] = make(chan *batch, chunksAhead)
		rec := &recorder{cur: new(batch), out: done[i], free: batches}
		w := newWorker(&opt, ropt, n, rec)
		go runWorker(w, rec, work[i])
	}
	rd := &dealer{ctx: ctx, opt: opt, files: files, free: free, work: work, streams: d.streams}
	go rd.run()

	nextTick := time.Now().Add(time.Second)
	tick := func(st capture.Stats) {
		pr := d.progress(st)
		pr.FileBytes = files.BytesRead()
		opt.OnTick(pr)
	}
	parts := make([]*part, n)
	for {
		replay(done, batches, parts, d)
		c := parts[0].chunk
		if opt.OnTick != nil && time.Now().After(nextTick) {
			nextTick = time.Now().Add(time.Second)
			tick(c.stats)
		}
		if c.last {
			// The dealer is done with the summary fields it keeps.
			sum.First, sum.Last, sum.CutFrames = rd.sum.First, rd.sum.Last, rd.sum.CutFrames
			sum.OutsideTime = rd.sum.OutsideTime
			sum.Interrupted = c.interrupted
			if c.err != nil {
				return *sum, c.err
			}
			sum.Capture = c.stats
			for _, pt := range parts {
				sum.Reassembly.Add(pt.asmStats)
				// Each worker keeps the same key log: the most any lost.
				sum.TLSKeysNotKept = max(sum.TLSKeysNotKept, pt.keysLost)
				sum.TLSKeysKept = max(sum.TLSKeysKept, pt.keysKept)
			}
			sum.Reassembly.Add(rd.gate.Stats())
			rd.tally.fill(sum)
			sum.Problems, sum.Comments = files.Problems(), files.Comments()
			if opt.OnTick != nil {
				tick(c.stats)
			}
			return *sum, nil
		}
		c.reset()
		free <- c
	}
}

func (c *chunk) reset() {
	c.lease.Release()
	c.arena, c.lease = c.arena[:0], nil
	for _, pt := range c.parts {
		pt.pkts, pt.flushes = pt.pkts[:0], pt.flushes[:0]
	}
}

// replay merges the records of one chunk, batch by batch as the workers
// hand them over, by key, and hands them to d; parts[i] is then worker i's
// part of the chunk. Only flushes and the finish make records of equal
// keys in several workers; each worker makes them connection by connection
// in the order of the connections' first frames (see reassembly's Expire),
// and so they are merged by that order.
func replay(done []chan *batch, spent chan *batch, parts []*part, d *deliverer) {
	cur := make([]*batch, len(done))
	idx := make([]int, len(done))
	for i := range done {
		cur[i] = <-done[i]
	}
	for {
		best := -1
		for i, b := range cur {
			for b != nil && idx[i] == len(b.ops) {
				// This batch is spent: the worker's next one, or its
				// part is done.
				if b.done != nil {
					parts[i] = b.done
					b = nil
				} else {
					b = <-done[i]
				}
				recycle(spent, cur[i])
				cur[i], idx[i] = b, 0
			}
			if b != nil && (best < 0 || b.ops[idx[i]].before(&cur[best].ops[idx[best]])) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		b := cur[best]
		o := &b.ops[idx[best]]
		idx[best]++
		switch o.kind {
		case opOpen:
			d.open(o.conn)
		case opEvent:
			d.event(o.conn, &b.events[o.i])
		case opGap:
			d.gap(o.conn, o.side, o.at)
		case opClosed:
			d.closed(o.conn, b.ends[o.i])
		}
	}
}

// recycle gives a spent batch back for reuse, when there is room.
func recycle(spent chan *batch, b *batch) {
	b.reset()
	select {
	case spent <- b:
	default:
	}
}

func (o *op) before(p *op) bool {
	if o.key != p.key {
		return o.key < p.key
	}
	a, b := o.conn.First, p.conn.First
	return a.File < b.File || a.File == b.File && a.Frame < b.Frame
}

// runWorker adds the packets of each part to w's assembler, with the
// flushes the dealer scheduled between them, recording what comes out.
func runWorker(w *worker, rec *recorder, in <-chan *part) {
	a := &adder{w: w, rec: rec}
	a.p.TCP = &a.tcp
	for pt := range in {
		for _, s := range pt.chunk.secrets {
			w.addSecrets(capture.SecretsTLSKeyLog, s)
		}
		a.add(pt)
		rec.send(pt)
	}
}

// adder is a worker's state between parts.
type adder struct {
	w   *worker
	rec *recorder
	tcp layers.TCP
	dec capture.TCPDecoder
	p   capture.Packet
	buf []byte // the part's segments that were in a file's mapping
	// one is Segment.Bytes's scratch, left unused: after OwnSegments the
	// only segments still in a mapping are those of a file found shorter,
	// for which Bytes returns the error without copying.
	one []byte
}

// add adds the packets of pt.
func (a *adder) add(pt *part) {
	w, rec, p := a.w, a.rec, &a.p
	flush := func(f flushRec) {
		rec.key = f.key
		w.asm.Expire(f.at)
	}
	// Out of the files' mappings at once, before the chunk's lease is
	// released and so that nothing below reads a mapping, which faults
	// when the file was cut shorter.
	capture.OwnSegments(&a.buf, len(pt.pkts), func(i int) *capture.Segment { return &pt.pkts[i].seg })
	fi := 0
	for i := range pt.pkts {
		pk := &pt.pkts[i]
		for ; fi < len(pt.flushes) && pt.flushes[fi].key < pk.key; fi++ {
			flush(pt.flushes[fi])
		}
		seg, err := pk.seg.Bytes(&a.one)
		if err != nil {
			continue // the file became shorter: one of files.Problems()
		}
		// The capture reader checked what makes this fail.
		if a.dec.DecodeFixed(&a.tcp, &pk.seg.Fixed, seg) != nil {
			continue
		}
		p.File, p.Frame, p.Time, p.Network, p.Cut, p.WireLength = pk.file, pk.frame, time.Unix(pk.sec, int64(pk.nsec)).UTC(), pk.network, pk.cut, pk.wire
		rec.key = pk.key
		w.asm.Add(p)
	}
	for ; fi < len(pt.flushes); fi++ {
		flush(pt.flushes[fi])
	}
	if c := pt.chunk; c.last && c.err == nil {
		rec.key = keyFinish
		w.asm.Finish()
		pt.asmStats = w.asm.Stats()
		pt.keysLost, pt.keysKept = w.keys.Evicted(), w.keys.Len()
	}
}

// dealer reads the capture and deals its packets to the workers.
type dealer struct {
	ctx   context.Context
	opt   Options
	files *capture.Reader
	free  <-chan *chunk
	work  []chan *part
	// sum keeps what Summary.note does, and gate the connections it
	// admits, read by the merger after the last chunk.
	sum   result.Summary
	gate  *reassembly.Gate
	tally *portTally
	// streams numbers the TCP conversations (tcpstream.go); the
	// deliverer reads the numbers as connections open.
	streams *tcpStreams
}

func (rd *dealer) run() {
	n := len(rd.work)
	var c *chunk
	take := func() {
		c = <-rd.free
		c.secrets = c.secrets[:0]
	}
	send := func(last, interrupted bool, err error) {
		c.last, c.interrupted, c.err, c.stats = last, interrupted, err, rd.files.Stats()
		c.lease = rd.files.Lease()
		for i, pt := range c.parts {
			rd.work[i] <- pt
		}
	}
	defer func() {
		for _, w := range rd.work {
			close(w)
		}
	}()
	rd.files.LeaveTCP() // the workers decode the TCP headers
	if len(rd.opt.TLSKeyLog) > 0 || rd.opt.TLSSecrets {
		rd.files.OnSecrets(func(_ int, typ uint32, data []byte) {
			if typ == capture.SecretsTLSKeyLog {
				c.secrets = append(c.secrets, data)
			}
		})
	}
	clock := reassembly.NewFlushClock(rd.opt.Reassembly.Ports)
	rd.gate = reassembly.NewGate(rd.opt.Reassembly)
	rd.tally = newPortTally(&rd.opt)
	var probeBuf []byte
	var p capture.Packet
	var seq int64
	packets, tcpBytes := 0, 0
	take()
	for i := 0; ; i++ {
		if i&1023 == 0 && rd.ctx.Err() != nil {
			send(true, true, nil)
			return
		}
		if rd.opt.MaxPackets > 0 && rd.files.Stats().Packets >= rd.opt.MaxPackets {
			break
		}
		var (
			seg capture.Segment
			err error
		)
		seg, c.arena, err = rd.files.NextShared(&p, c.arena)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			send(true, false, err)
			return
		}
		if rd.opt.Time.Any() && !rd.opt.Time.keep(p.Time) {
			rd.sum.OutsideTime++
			continue
		}
		note(&rd.sum, &p)
		rd.streams.seeFixed(p.Network, &seg.Fixed, p.File, p.Frame)
		seq++
		src, dst := binary.BigEndian.Uint16(seg.Fixed[:]), binary.BigEndian.Uint16(seg.Fixed[2:])
		hlen := int(seg.Fixed[12]>>4) * 4
		if other, probe := rd.tally.see(src, dst, seg.Fixed[13], max(seg.Len()-hlen, 0)); other {
			if probe {
				// Copied out of the mapping: a few per port at most.
				if b, err := seg.Bytes(&probeBuf); err == nil && len(b) > hlen {
					rd.tally.probe(dst, b[hlen:])
				}
			}
			rd.tally.count(src, dst)
		}
		// Connections are admitted here, in capture order, so that which
		// are analysed does not depend on the workers.
		if rd.gate.Admit(&p.Network, src, dst, seg.Fixed[13], max(seg.Len()-hlen, 0), p.Time) {
			pt := c.parts[pick(&p, src, dst, n)]
			pt.pkts = append(pt.pkts, packetRec{key: 2 * seq, file: p.File, frame: p.Frame, sec: p.Time.Unix(), nsec: int32(p.Time.Nanosecond()), network: p.Network,
				cut: p.Cut, wire: p.WireLength, seg: seg})
			tcpBytes += seg.Len()
			if clock.Due(src, dst, p.Time) {
				for _, q := range c.parts {
					q.flushes = append(q.flushes, flushRec{key: 2*seq + 1, at: p.Time})
				}
			}
		}
		// Every packet read counts, kept out by the gate or not: a chunk's
		// lease is what gives the file's pages back behind it, and a long
		// run of connections over the cap would otherwise keep the whole
		// file mapped.
		packets++
		if packets >= chunkPackets || tcpBytes >= chunkBytes {
			send(false, false, nil)
			take()
			packets, tcpBytes = 0, 0
		}
	}
	send(true, false, nil)
}

// pick deals a packet to a worker by its connection: both directions of a
// connection hash alike.
func pick(p *capture.Packet, src, dst uint16, n int) int {
	a, b := uint64(src), uint64(dst)
	if a > b {
		a, b = b, a
	}
	h := p.Network.FastHash() ^ (a<<16|b)*0x9e3779b97f4a7c15
	h ^= h >> 29
	return int(h % uint64(n))
}
