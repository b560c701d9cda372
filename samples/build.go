package samples

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/samples/netsim"
)

// Default pauses of a script: a client's think time before each request
// write, and a broker's latency before each response.
const (
	requestGap  = 2 * time.Millisecond
	responseGap = 700 * time.Microsecond
)

// Message is one Kafka request or response a scenario wrote, with the
// frames netsim reported for it.
type Message struct {
	Conn     int // index in the scenario's connections
	Client   netip.AddrPort
	Broker   netip.AddrPort
	Request  bool
	Frame    int // where the message is complete in the capture; 0 when it never is
	First    int // the first frame of the write that carried it
	Key      int16
	Version  int16
	Corr     int32
	ClientID *string     // requests: nil for a null ClientId
	Instance *kafka.UUID // requests: the header's tag 0, when present
	// HeaderVersion is the request header version (requests) or the
	// response header version (responses).
	HeaderVersion int
	// Partial is a request of which the capture holds only the tail
	// (mid-stream start), and a response to such a request.
	Partial bool
	Body    Body
	Bytes   []byte // the whole frame: size, header, body
	BodyAt  int    // offset of the body in Bytes
	// Answers is, for a response, the index in Built.Messages of the
	// request it answers; -1 for requests.
	Answers int
}

// RawWrite is a write of raw bytes (TLS, SASL tokens) and its frames.
type RawWrite struct {
	Conn        int
	What        string
	First, Last int // first frame of the write, frame where it is complete
}

// Built is a scenario turned into bytes.
type Built struct {
	Scenario *Scenario
	File     string // the capture's file name
	Capture  []byte
	Expect   Expectation
	Messages []Message
	Raws     []RawWrite
	// ConnFirst and ConnLast are the first and last frames of each
	// connection in the capture.
	ConnFirst, ConnLast []int
	// Conns are the connections (Scenario.Conns, or what Gen made).
	Conns []Conn
}

// connState is a connection while it is being written.
type connState struct {
	cn      *netsim.Conn
	corr    int32
	next    int   // next action: 0 open, 1..len(Steps) a step, then the end
	pending []int // indexes in Built.Messages of requests not yet answered
	first   int
	last    int
}

// labelled is where a label points.
type labelled struct {
	frame int
	conn  int
}

// Build writes the scenario's capture and computes its expectation.
func Build(s *Scenario) (b *Built, err error) {
	defer func() {
		// netsim panics on impossible scripts (a segment that does not exist).
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%s: %v", s.Name, r)
		}
	}()
	return build(s)
}

func build(s *Scenario) (*Built, error) {
	b := &Built{Scenario: s, File: s.Name + ext(s.Format)}
	conns, schedule := s.Conns, s.Schedule
	if s.Gen != nil {
		conns, schedule = s.Gen()
	}
	b.Conns = conns
	opt := netsim.Options{Format: s.Format, Link: s.Link, Seed: s.Seed}
	if s.Net != nil {
		s.Net(&opt)
	}
	c := netsim.New(opt)
	st := make([]connState, len(conns))
	for i := range st {
		st[i].corr = conns[i].FirstCorr
	}
	labels := map[string]labelled{}
	type pendingFind struct {
		f     Find
		conn  int
		frame int
		what  string
	}
	var finds []pendingFind

	// emitStarted records the first frame of a connection.
	mark := func(i int, before int) {
		if st[i].first == 0 && c.Frames() > before {
			st[i].first = before + 1
		}
	}
	setLabel := func(l string, conn, frame int) error {
		if l == "" {
			return nil
		}
		if _, dup := labels[l]; dup {
			return fmt.Errorf("label %q used twice", l)
		}
		labels[l] = labelled{frame, conn}
		return nil
	}

	run := func(i int) error {
		cs := &st[i]
		cd := &conns[i]
		n := cs.next
		cs.next++
		switch {
		case n == 0:
			before := c.Frames()
			cs.cn = c.Open(cd.Client, cd.Broker, netsim.ConnOptions{MidStream: cd.MidStream, MSS: cd.MSS})
			mark(i, before)
			return nil
		case n <= len(cd.Steps):
			step := &cd.Steps[n-1]
			if err := b.step(c, i, cd, cs, step, n-1, mark, setLabel, func(f Find, frame int, what string) {
				finds = append(finds, pendingFind{f, i, frame, what})
			}); err != nil {
				return fmt.Errorf("connection %d step %d: %w", i, n-1, err)
			}
			return nil
		case n == len(cd.Steps)+1:
			c.Advance(requestGap)
			switch cd.End {
			case ClientCloses:
				cs.cn.Close(true)
			case BrokerCloses:
				cs.cn.Close(false)
			case BrokerResets:
				cs.cn.Reset(false)
			}
			return nil
		}
		return nil
	}
	done := func(i int) bool { return st[i].next > len(conns[i].Steps)+1 }
	for _, i := range schedule {
		if i < 0 || i >= len(conns) {
			return nil, fmt.Errorf("%s: schedule names connection %d", s.Name, i)
		}
		if done(i) {
			return nil, fmt.Errorf("%s: schedule runs connection %d past its end", s.Name, i)
		}
		if err := run(i); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		st[i].last = c.Frames()
	}
	for i := range conns {
		for !done(i) {
			if err := run(i); err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
			st[i].last = c.Frames()
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	b.Capture = buf.Bytes()
	b.ConnFirst = make([]int, len(conns))
	b.ConnLast = make([]int, len(conns))
	for i := range st {
		b.ConnFirst[i], b.ConnLast[i] = st[i].first, st[i].last
	}

	// Expectations.
	e := Expectation{Name: s.Name, Description: s.Description, File: b.File, Ports: s.ports(),
		Findings: []Finding{}, Connections: []Connection{}, Brokers: []BrokerVerdict{}}
	order := make([]int, len(conns))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(st[a].first, st[b].first) })
	for _, i := range order {
		cd := conns[i]
		for _, f := range cd.Finds {
			finds = append(finds, pendingFind{f, i, st[i].first, "connection"})
		}
		var prof *string
		if cd.Profile != NoProfile {
			p := string(cd.Profile)
			prof = &p
		}
		e.Connections = append(e.Connections, Connection{Client: cd.Client.String(), Broker: cd.Broker.String(),
			Profile: prof, MidStream: cd.MidStream})
	}
	for _, pf := range finds {
		r, ok := LookupRule(pf.f.Rule)
		if !ok {
			return nil, fmt.Errorf("%s: unknown rule %q", s.Name, pf.f.Rule)
		}
		if pf.frame == 0 {
			return nil, fmt.Errorf("%s: finding %s on a %s that is never complete in the capture", s.Name, r.ID, pf.what)
		}
		sev := r.Severity.String()
		if pf.f.Info {
			sev = "info"
		}
		fd := Finding{Rule: r.ID, Severity: sev, Client: conns[pf.conn].Client.String(),
			Broker: conns[pf.conn].Broker.String(), Frame: pf.frame}
		for _, l := range pf.f.Related {
			lb, ok := labels[l]
			if !ok {
				return nil, fmt.Errorf("%s: finding %s names unknown label %q", s.Name, r.ID, l)
			}
			if lb.frame == 0 {
				return nil, fmt.Errorf("%s: label %q is never complete in the capture", s.Name, l)
			}
			fd.RelatedFrames = append(fd.RelatedFrames, lb.frame)
		}
		e.Findings = append(e.Findings, fd)
	}
	slices.SortStableFunc(e.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Frame, b.Frame), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Client, b.Client))
	})
	seen := map[netip.AddrPort]bool{}
	for _, br := range s.Brokers {
		if seen[br.Addr] {
			return nil, fmt.Errorf("%s: broker %v listed twice", s.Name, br.Addr)
		}
		seen[br.Addr] = true
		e.Brokers = append(e.Brokers, BrokerVerdict{Broker: br.Addr.String(), KIP1313: string(br.KIP1313)})
	}
	for _, cd := range conns {
		if !seen[cd.Broker] {
			return nil, fmt.Errorf("%s: broker %v has no verdict", s.Name, cd.Broker)
		}
	}
	b.Expect = e
	return b, nil
}

// step runs one step of connection i.
func (b *Built) step(c *netsim.Capture, i int, cd *Conn, cs *connState, step *Step, n int,
	mark func(int, int), setLabel func(string, int, int) error, find func(Find, int, string)) error {
	if step.Pause > 0 {
		c.Advance(step.Pause)
	}
	for _, bl := range step.Blocks {
		c.AddBlock(bl)
	}
	if step.Raw != nil {
		if len(step.Reqs) > 0 || len(step.Resps) > 0 {
			return fmt.Errorf("a raw step carries no messages")
		}
		r := step.Raw
		c.Advance(requestGap)
		before := c.Frames()
		last := cs.cn.Send(r.FromClient, r.Data, r.Seg...)
		mark(i, before)
		b.Raws = append(b.Raws, RawWrite{Conn: i, What: r.What, First: before + 1, Last: last})
		for _, f := range r.Finds {
			at := last
			if f.AtStart {
				at = before + 1
			}
			find(f, at, "raw write")
		}
		return nil
	}
	if len(step.Reqs) > 0 {
		if step.Pause == 0 {
			c.Advance(requestGap)
		}
		parts := make([][]byte, len(step.Reqs))
		idx := make([]int, len(step.Reqs))
		for k, r := range step.Reqs {
			m, err := b.request(i, cd, cs.corr, r)
			if err != nil {
				return err
			}
			cs.corr++
			if r.Tail > 0 {
				if k != 0 || n != 0 || !cd.MidStream {
					return fmt.Errorf("a Tail is only for the first request of a mid-stream connection")
				}
				if r.Tail >= len(m.Bytes) {
					return fmt.Errorf("tail of %d bytes is not inside the %d-byte request", r.Tail, len(m.Bytes))
				}
				m.Partial = true
				parts[k] = m.Bytes[len(m.Bytes)-r.Tail:]
			} else {
				parts[k] = m.Bytes
			}
			idx[k] = len(b.Messages)
			b.Messages = append(b.Messages, m)
			if !expectsNoAnswer(r.Body) {
				cs.pending = append(cs.pending, idx[k])
			}
		}
		before := c.Frames()
		var done []int
		if len(parts) == 1 {
			done = []int{cs.cn.Send(true, parts[0], step.Reqs[0].Seg...)}
		} else {
			done = cs.cn.SendParts(true, parts, step.Reqs[0].Seg...)
		}
		mark(i, before)
		for k, r := range step.Reqs {
			m := &b.Messages[idx[k]]
			m.First = before + 1
			if !m.Partial {
				m.Frame = done[k]
			}
			if err := setLabel(r.Label, i, m.Frame); err != nil {
				return err
			}
			for _, f := range r.Finds {
				at := m.Frame
				if f.AtStart {
					at = m.First
				}
				find(f, at, "request")
			}
		}
	}
	for _, r := range step.Resps {
		if len(cs.pending) == 0 {
			return fmt.Errorf("a response with no request to answer")
		}
		reqIdx := cs.pending[0]
		req := b.Messages[reqIdx]
		cs.pending = cs.pending[1:]
		m, err := b.response(i, cd, req, r)
		if err != nil {
			return err
		}
		m.Answers = reqIdx
		c.Advance(responseGap)
		before := c.Frames()
		m.Frame = cs.cn.Send(false, m.Bytes, r.Seg...)
		m.First = before + 1
		mark(i, before)
		b.Messages = append(b.Messages, m)
		if err := setLabel(r.Label, i, m.Frame); err != nil {
			return err
		}
		for _, f := range r.Finds {
			at := m.Frame
			if f.AtStart {
				at = m.First
			}
			find(f, at, "response")
		}
	}
	return nil
}

// request encodes one request.
func (b *Built) request(i int, cd *Conn, corr int32, r *Request) (Message, error) {
	key, ver := r.Body.Key(), r.Body.GetVersion()
	hv, err := requestHeaderVersion(r.Body)
	if err != nil {
		return Message{}, err
	}
	if r.ID.Set && hv < 2 {
		return Message{}, fmt.Errorf("%s v%d uses request header v%d: it cannot carry tag 0", apiName(key), ver, hv)
	}
	h := decode.RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: corr, HeaderVersion: hv,
		ClientID: cd.ClientID, ClientIDNull: r.NullClientID, InstanceID: r.ID.ID, HasInstanceID: r.ID.Set}
	body := r.Body.AppendTo(nil)
	frame := decode.AppendRequest(nil, h, body)
	m := Message{Conn: i, Client: cd.Client, Broker: cd.Broker, Request: true, Key: key, Version: ver,
		Corr: corr, HeaderVersion: hv, Body: r.Body, Bytes: frame, BodyAt: len(frame) - len(body), Answers: -1}
	if !r.NullClientID {
		id := cd.ClientID
		m.ClientID = &id
	}
	if r.ID.Set {
		id := r.ID.ID
		m.Instance = &id
	}
	return m, nil
}

// response encodes the answer to req.
func (b *Built) response(i int, cd *Conn, req Message, r *Response) (Message, error) {
	if r.Body.Key() != req.Key {
		return Message{}, fmt.Errorf("a %s response answers a %s request", apiName(r.Body.Key()), apiName(req.Key))
	}
	if r.Body.GetVersion() != req.Version {
		return Message{}, fmt.Errorf("a v%d %s response answers a v%d request", r.Body.GetVersion(), apiName(req.Key), req.Version)
	}
	hv, err := responseHeaderVersion(r.Body)
	if err != nil {
		return Message{}, err
	}
	body := r.Body.AppendTo(nil)
	frame := decode.AppendResponse(nil, req.Corr, hv, body)
	return Message{Conn: i, Client: cd.Client, Broker: cd.Broker, Key: req.Key, Version: req.Version,
		Corr: req.Corr, HeaderVersion: hv, Partial: req.Partial, Body: r.Body, Bytes: frame,
		BodyAt: len(frame) - len(body)}, nil
}

// flexible is what kmsg knows of a body's version.
type flexible interface{ IsFlexible() bool }

// requestHeaderVersion is the header version of a request: 3 for the
// versions the accepted KIP-1313 maps to header v3, 2 for other flexible
// versions, 1 otherwise. Flexibility comes from kmsg (from the schemas);
// the v3 mapping and the check come from decode's API table, so the two
// tables are checked against each other on every request written.
func requestHeaderVersion(body Body) (int, error) {
	key, ver := body.Key(), body.GetVersion()
	api, ok := decode.LookupAPI(key)
	if !ok || !api.Valid(ver) {
		return 0, fmt.Errorf("API key %d v%d is not in decode's table", key, ver)
	}
	want := 1
	if f, ok := body.(flexible); ok && f.IsFlexible() {
		want = 2
	}
	if api.UsesHeaderV3(ver) {
		want = 3
	}
	if got := api.RequestHeaderVersion(ver); got != want {
		return 0, fmt.Errorf("%s v%d: decode says request header v%d, kmsg's flexibility says v%d", api.Name, ver, got, want)
	}
	return want, nil
}

// responseHeaderVersion is 1 for flexible versions, except ApiVersions,
// whose responses always use header v0.
func responseHeaderVersion(body Body) (int, error) {
	key, ver := body.Key(), body.GetVersion()
	api, ok := decode.LookupAPI(key)
	if !ok || !api.Valid(ver) {
		return 0, fmt.Errorf("API key %d v%d is not in decode's table", key, ver)
	}
	want := 0
	if f, ok := body.(flexible); ok && f.IsFlexible() && key != decode.KeyApiVersions {
		want = 1
	}
	if got := api.ResponseHeaderVersion(ver); got != want {
		return 0, fmt.Errorf("%s v%d: decode says response header v%d, kmsg says v%d", api.Name, ver, got, want)
	}
	return want, nil
}

func apiName(key int16) string { return decode.APIName(key) }

func ext(f netsim.Format) string {
	if f == netsim.PcapNG {
		return ".pcapng"
	}
	return ".pcap"
}

func (s *Scenario) ports() []uint16 {
	if len(s.Ports) == 0 {
		return []uint16{9092}
	}
	return slices.Clone(s.Ports)
}

// expectsNoAnswer reports whether no broker answers the request: a Produce
// with acks = 0.
func expectsNoAnswer(b Body) bool {
	p, ok := b.(*kmsg.ProduceRequest)
	return ok && p.Acks == 0
}
