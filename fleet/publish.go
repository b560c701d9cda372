package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	Brokers []string
	Topic   string
	Agent   string // the agent's name (the host name by default)
	Source  string // the interface, or the capture files
	Version string // kidscope's version
	// Files names the agent's files by index: the files it writes, or
	// the interface it captures on.
	Files Files
	// MaxBuffered bounds the records waiting to be sent (default 10,000):
	// past it a record is dropped and counted, never waited for.
	MaxBuffered int
	// DeliveryTimeout is how long a record may wait for Kafka before it is
	// dropped and counted (default 30 s).
	DeliveryTimeout time.Duration
	// Wait makes a full buffer wait for Kafka rather than drop: for a
	// file, which can wait, unlike a capture. It waits only while Kafka
	// takes records: once one is not delivered in DeliveryTimeout, the
	// rest are dropped and counted as a capture's would be.
	Wait bool
	// Client are more options of the Kafka client (TLS, SASL).
	Client []kgo.Opt
}

// Publisher sends an agent's observations and findings to a topic. It
// never blocks its caller (but with Wait): when Kafka is slow or away,
// records past the buffer are dropped and counted. Its methods are called
// from one goroutine (the capture's), but for Counts; the JSON encoding and
// the producer run on a goroutine of their own, so that publishing costs
// the capture's goroutine little more than a copy of what it observed.
type Publisher struct {
	opt       PublisherOptions
	cl        *kgo.Client
	run       string
	seq       uint64 // the caller's goroutine only
	keys      map[int][]byte
	queue     chan queued
	encoded   chan struct{} // closed when the encoder has sent the queue's last
	published atomic.Int64
	dropped   atomic.Int64
	delivered atomic.Int64
	away      atomic.Bool // a record was not delivered: Wait no longer waits
	// over: the capture is over (Report), so what is sent waits for Kafka
	// as Wait does.
	over atomic.Bool
	// settle orders the producer's answers with Close, which counts what
	// has none by then as dropped; an answer after that is not counted.
	// cause is why the last record not delivered was not (Cause), but
	// for a full buffer, which fullBuffer counts.
	settle     sync.Mutex
	settled    bool
	cause      error
	fullBuffer int64
	dialErr    error         // the last connection to a broker that failed
	closeWait  time.Duration // how long Close waited
}

// dialHook tells the publisher of a connection to a broker that failed:
// with Kafka away, the producer gives the records no error of their own
// before it is closed, and the dial error is what went wrong.
type dialHook struct{ p *Publisher }

func (h dialHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.p.settle.Lock()
		h.p.dialErr = err
		h.p.settle.Unlock()
	}
}

// queued is a record on its way to the encoder.
type queued struct {
	key []byte
	rec Record
}

// queueLen is how many records may wait to be encoded: a short hand-over,
// the bound that matters is the producer's MaxBuffered.
const queueLen = 8192

// NewPublisher connects lazily: a broker that is down at the start is
// tried again, and records are counted as dropped meanwhile.
func NewPublisher(opt PublisherOptions) (*Publisher, error) {
	if opt.MaxBuffered <= 0 {
		opt.MaxBuffered = 10000
	}
	if opt.DeliveryTimeout <= 0 {
		opt.DeliveryTimeout = 30 * time.Second
	}
	p := &Publisher{opt: opt}
	kopts := append([]kgo.Opt{
		kgo.WithHooks(dialHook{p}),
		kgo.SeedBrokers(opt.Brokers...),
		kgo.DefaultProduceTopic(opt.Topic),
		kgo.MaxBufferedRecords(opt.MaxBuffered),
		kgo.RecordDeliveryTimeout(opt.DeliveryTimeout),
		// Without it an idempotent producer never times out a record it
		// wrote to a connection that then died (a broker stopped): it
		// waits for the broker's answer however long the broker is away,
		// so the records buffered at the stop stay buffered, the buffer
		// stays full, and DeliveryTimeout is not kept. Time-bounded
		// delivery matters more here than duplicate-avoidance: fleet
		// takes a finding once.
		kgo.AllowIdempotentProduceCancellation(),
		kgo.ProducerLinger(20 * time.Millisecond),
		kgo.ClientID("kidscope-agent"),
	}, opt.Client...)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	p.cl, p.run, p.keys = cl, hex.EncodeToString(b[:]), map[int][]byte{}
	p.queue, p.encoded = make(chan queued, queueLen), make(chan struct{})
	go p.encode()
	p.Hello(false)
	return p, nil
}

// Run is the name of this run of the agent.
func (p *Publisher) Run() string { return p.run }

// Agent is the agent's name in what it publishes.
func (p *Publisher) Agent() string { return p.opt.Agent }

// Counts are the records handed to the producer, delivered, and dropped.
func (p *Publisher) Counts() (published, delivered, dropped int64) {
	return p.published.Load(), p.delivered.Load(), p.dropped.Load()
}

// Observed publishes an observation, keyed by the client instance its
// connection goes by.
func (p *Publisher) Observed(o *rules.Observation) {
	key, ok := p.keys[o.Conn.ID]
	if !ok {
		key = keyOf(o.Conn, o.Instance, o.HasInstance)
		p.keys[o.Conn.ID] = key
	}
	if o.Kind == rules.ObservedClose {
		delete(p.keys, o.Conn.ID)
	}
	p.send(key, Record{Type: TypeObservation, Observation: EncodeObservation(o, p.opt.Files)})
}

// Found publishes a finding of the agent's engine, with its connection's
// key.
func (p *Publisher) Found(f *rules.Finding, c kafka.Conn) {
	key, ok := p.keys[c.ID]
	if !ok {
		key = keyOf(c, kafka.UUID{}, false)
	}
	p.send(key, Record{Type: TypeFinding, Finding: EncodeFinding(f, c, p.opt.Files)})
}

// keyOf is a connection's record key: its first header ID, or its
// client's IP address for a client that sends none.
func keyOf(c kafka.Conn, id kafka.UUID, has bool) []byte {
	if has {
		return []byte(id.String())
	}
	return []byte(c.Client.Addr().String())
}

// waits reports whether what is sent waits for Kafka rather than drop:
// with Wait or once the capture is over, while Kafka takes records.
func (p *Publisher) waits() bool {
	return (p.opt.Wait || p.over.Load()) && !p.away.Load()
}

// Report publishes the run's report (EncodeReport: its totals and tables)
// when the run is over, before Close: a capture that ended can wait for
// Kafka, so its rows are not dropped past the buffer.
func (p *Publisher) Report(sum *result.Summary, res *rules.Result) {
	p.over.Store(true)
	for _, r := range EncodeReport(sum, res, p.opt.Files) {
		p.send(p.agentKey(), r)
	}
}

// agentKey is the key of the agent's own records: its descriptions and
// its report, which are read in the order sent.
func (p *Publisher) agentKey() []byte { return []byte("agent:" + p.opt.Agent) }

// Hello publishes the agent's description and counts; stopping says it is
// the last.
func (p *Publisher) Hello(stopping bool) {
	p.send(p.agentKey(), Record{Type: TypeAgent, Hello: &Hello{Time: time.Now().UTC(), Source: p.opt.Source,
		Version: p.opt.Version, Published: p.published.Load(), Dropped: p.dropped.Load(), Stopping: stopping}})
}

func (p *Publisher) send(key []byte, r Record) {
	p.seq++
	r.Schema, r.Agent, r.Run, r.Seq = SchemaVersion, p.opt.Agent, p.run, p.seq
	p.published.Add(1)
	if p.waits() {
		p.queue <- queued{key, r}
		return
	}
	select {
	case p.queue <- queued{key, r}:
	default: // the encoder is behind: the capture does not wait for it
		p.settle.Lock()
		p.dropped.Add(1)
		p.fullBuffer++
		p.settle.Unlock()
	}
}

// encode marshals what is queued and hands it to the producer, in order.
func (p *Publisher) encode() {
	defer close(p.encoded)
	done := func(_ *kgo.Record, err error) {
		p.settle.Lock()
		defer p.settle.Unlock()
		switch {
		case p.settled:
		case errors.Is(err, kgo.ErrMaxBuffered):
			p.dropped.Add(1)
			p.fullBuffer++
		case errors.Is(err, kgo.ErrClientClosed):
			p.dropped.Add(1) // not delivered by Close: Cause says why
		case err != nil:
			p.dropped.Add(1)
			p.away.Store(true)
			p.cause = err
		default:
			p.delivered.Add(1)
		}
	}
	for q := range p.queue {
		value, err := json.Marshal(&q.rec)
		if err != nil {
			p.settle.Lock()
			p.dropped.Add(1)
			p.cause = fmt.Errorf("encode a record: %w", err)
			p.settle.Unlock()
			continue
		}
		rec := &kgo.Record{Key: q.key, Value: value}
		if p.waits() {
			p.cl.Produce(context.Background(), rec, done) // waits while the buffer is full
			continue
		}
		p.cl.TryProduce(context.Background(), rec, done)
	}
}

// Close sends the last description and waits up to wait for what is
// buffered; what is not delivered by then is dropped and counted.
func (p *Publisher) Close(wait time.Duration) {
	p.Hello(true)
	close(p.queue)
	<-p.encoded
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = p.cl.Flush(ctx)
	p.cl.Close() // fails what is left, through the callbacks
	// Some of those callbacks may come after Close returns: what has no
	// answer yet is counted as dropped now, so that the counts add up.
	p.settle.Lock()
	p.settled = true
	p.dropped.Add(p.published.Load() - p.delivered.Load() - p.dropped.Load())
	p.closeWait = wait
	p.settle.Unlock()
}

// Cause is why records were dropped: how many because the buffer was full
// (MaxBuffered, or the hand-over to the encoder), and the last error the
// producer gave for a record it did not deliver (the broker's, or the
// connection's: its text comes from outside kidscope, escape it), nil
// when none.
func (p *Publisher) Cause() (fullBuffer int64, last error) {
	p.settle.Lock()
	defer p.settle.Unlock()
	switch {
	case p.cause != nil || p.dropped.Load() == p.fullBuffer:
		return p.fullBuffer, p.cause
	case p.dialErr != nil:
		// Kafka away: the records waited for a connection until Close.
		return p.fullBuffer, p.dialErr
	}
	return p.fullBuffer, fmt.Errorf("not delivered in the %v a stopping agent waits", p.closeWait)
}
