package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/capture/filter"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/reassembly"
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
	// OnTick, when set, is called about once a second of wall time.
	OnTick     func(Progress)
	Reassembly reassembly.Options
	Decode     decode.Options
}

// Conn is what the pipeline knows of one connection; it is handed to the
// Sink with every event and stays valid for the whole run.
type Conn struct {
	ID        int
	Client    netip.AddrPort
	Broker    netip.AddrPort
	MidStream bool // the capture missed the start of the client's requests
	First     decode.Where
	Gaps      int
	// NotKafka names what the connection carries when it is not Kafka
	// ("TLS", …); empty for Kafka.
	NotKafka string
	Close    reassembly.CloseInfo
	// Counters are the decoder's totals, final once Closed was called.
	Counters decode.Counters
	ClientID string

	dec *decode.Conn
}

// Sink receives the decoded events in capture order.
type Sink interface {
	// Event is called for each decoder event; e is valid only during the
	// call.
	Event(c *Conn, e *decode.Event)
	// Closed is called once per connection, after its last event.
	Closed(c *Conn)
}

// GapSink is a Sink that also wants to hear of lost bytes, before the
// events that follow them.
type GapSink interface {
	Gap(c *Conn, side decode.Side, at decode.Where)
}

// Summary is the run's totals.
type Summary struct {
	Files       []string
	First, Last time.Time // capture time of the first and last packet
	Capture     capture.Stats
	Reassembly  reassembly.Stats
	Connections int64
	Requests    int64
	Responses   int64
	Unmatched   int64
	Unanswered  int64
	Gaps        int64
	Resyncs     int64
	Malformed   int64
	UnknownAPI  int64
	SASLTokens  int64
	NotKafka    int64
	Truncated   int64 // streams that ended inside a frame
	// Problems are input errors that did not stop the run (a truncated
	// file): one line each, naming the file.
	Problems []error
	// Interrupted is true when the context ended the run early.
	Interrupted bool
	// CutFrames are the first frames cut by the snap length inside their
	// TCP payload (Capture.Cut counts them all).
	CutFrames []decode.Where
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
}

// Run reads the inputs to the end (or until ctx is done, or MaxPackets)
// and hands every event to sink. The error is for inputs that cannot be
// read at all.
func Run(ctx context.Context, opt Options, sink Sink) (Summary, error) {
	var sum Summary
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
	dopt := opt.Decode
	if dopt.Scratch == nil {
		dopt.Scratch = new(decode.Scratch) // one event list for every connection
	}
	h := &handler{sink: sink, sum: &sum, dopt: dopt}
	asm := reassembly.New(opt.Reassembly, h)
	var p capture.Packet
	nextTick := time.Now().Add(time.Second)
	tick := func() {
		if opt.OnTick == nil {
			return
		}
		st := src.Stats()
		p := Progress{Packets: st.Packets, Bytes: st.Bytes, KernelDrops: st.KernelDrops,
			Connections: sum.Connections, Open: h.open, Requests: h.requests, Responses: h.responses}
		if files != nil {
			p.FileBytes = files.BytesRead()
		}
		opt.OnTick(p)
	}
	for n := 0; ; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			sum.Interrupted = true
			break
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
		if sum.First.IsZero() {
			sum.First = p.Time
		}
		sum.Last = p.Time
		if p.Cut && len(sum.CutFrames) < maxCutFrames {
			sum.CutFrames = append(sum.CutFrames, decode.Where{File: p.File, Frame: p.Frame, Time: p.Time})
		}
		asm.Add(&p)
	}
	asm.Finish()
	sum.Capture = src.Stats()
	sum.Reassembly = asm.Stats()
	if files != nil {
		sum.Problems = files.Problems()
	}
	tick()
	return sum, nil
}

// handler connects reassembly to decode and the sink.
type handler struct {
	sink      Sink
	sum       *Summary
	dopt      decode.Options
	spans     []decode.Span
	open      int // connections open now
	requests  int64
	responses int64
}

func where(s reassembly.Span) decode.Where {
	return decode.Where{File: s.File, Frame: s.Frame, Time: s.Time}
}

func side(d reassembly.Direction) decode.Side {
	if d == reassembly.ToBroker {
		return decode.ClientSide
	}
	return decode.BrokerSide
}

func (h *handler) Open(rc *reassembly.Conn) {
	c := &Conn{ID: rc.ID, Client: rc.Client, Broker: rc.Broker, MidStream: rc.MidStream[reassembly.ToBroker],
		First: where(rc.First), dec: decode.NewConn(h.dopt)}
	c.dec.Start(decode.ClientSide, rc.MidStream[reassembly.ToBroker])
	c.dec.Start(decode.BrokerSide, rc.MidStream[reassembly.ToClient])
	rc.User = c
	h.sum.Connections++
	h.open++
}

func (h *handler) Data(rc *reassembly.Conn, d reassembly.Direction, data []byte, spans []reassembly.Span) {
	c := rc.User.(*Conn)
	h.spans = h.spans[:0]
	for _, s := range spans {
		h.spans = append(h.spans, decode.Span{End: s.End, At: where(s)})
	}
	h.deliver(c, c.dec.Feed(side(d), data, h.spans))
}

func (h *handler) Gap(rc *reassembly.Conn, d reassembly.Direction, lost int, at reassembly.Span) {
	c := rc.User.(*Conn)
	c.Gaps++
	h.sum.Gaps++
	c.dec.Lost(side(d))
	if g, ok := h.sink.(GapSink); ok {
		g.Gap(c, side(d), where(at))
	}
}

func (h *handler) Closed(rc *reassembly.Conn, at reassembly.Span) {
	c := rc.User.(*Conn)
	h.deliver(c, c.dec.Finish())
	c.Close = rc.Close
	h.open--
	c.Counters = c.dec.Counters()
	c.ClientID, _ = c.dec.ClientID()
	n := &c.Counters
	h.sum.Requests += n.Requests
	h.sum.Responses += n.Responses
	h.sum.Unmatched += n.Unmatched
	h.sum.Unanswered += n.Unanswered
	h.sum.Resyncs += n.Resyncs
	h.sum.Malformed += n.Malformed
	h.sum.UnknownAPI += n.UnknownAPI
	h.sum.SASLTokens += n.SASLTokens
	h.sink.Closed(c)
	c.dec = nil // its buffers are no longer needed
}

func (h *handler) deliver(c *Conn, evs []decode.Event) {
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case decode.EventNotKafka:
			c.NotKafka = e.Reason
			h.sum.NotKafka++
		case decode.EventTruncated:
			h.sum.Truncated++
		case decode.EventRequest:
			h.requests++
		case decode.EventResponse:
			h.responses++
		}
		h.sink.Event(c, e)
	}
}

// FileName returns the name of input i for output.
func (s *Summary) FileName(i int) string {
	if i >= 0 && i < len(s.Files) {
		return s.Files[i]
	}
	return fmt.Sprintf("file#%d", i)
}
