package rules

import (
	"slices"
	"sort"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// Options configure the engine. The caps bound what a long run keeps for
// its report (a live capture can run for days); what they leave out is
// counted in the Result. Zero values take the defaults.
type Options struct {
	Profile ProfileChoice
	// MaxConnections is how many closed connections the connections table
	// keeps, the most recent (default 20 000).
	MaxConnections int
	// MaxInstances is how many client instance IDs the inventory keeps,
	// the most recently seen (default 20 000).
	MaxInstances int
	// MaxFindings is how many findings the report keeps, the first ones
	// (default 50 000); every finding is still counted, by severity, by
	// rule and by rule and connection.
	MaxFindings int
	// MaxEvidence is how many evidence frames a broker keeps per verdict,
	// the first ones (default 1 000); every one is counted.
	MaxEvidence int
	// MaxBrokers is how many broker endpoints the brokers table keeps,
	// the first seen (default 1 000); the connections to others are
	// counted.
	MaxBrokers int
	// Observe keeps the inputs of the rules across connections as
	// Observations (TakeObservations), for an engine that sees every host.
	Observe bool
	// Replay makes an engine that is fed Observations (Replay): the header
	// rules of a request are those its observation carries.
	Replay bool
}

func (o Options) withDefaults() Options {
	if o.MaxConnections <= 0 {
		o.MaxConnections = 20000
	}
	if o.MaxInstances <= 0 {
		o.MaxInstances = 20000
	}
	if o.MaxFindings <= 0 {
		o.MaxFindings = 50000
	}
	if o.MaxEvidence <= 0 {
		o.MaxEvidence = 1000
	}
	if o.MaxBrokers <= 0 {
		o.MaxBrokers = 1000
	}
	return o
}

// CloseInfo is how a connection ended: as reassembly saw it, and what its
// decoder made of it.
type CloseInfo struct {
	kafka.Close
	decode.Outcome
}

// byBroker reports whether the broker closed the connection (FIN or RST).
func (ci *CloseInfo) byBroker() bool { return ci.Seen && ci.By == kafka.ToClient }

// Engine applies the rules of docs/design/rules.md to the events of many connections,
// fed in capture order. It is pure: no I/O, clocks or goroutines. The
// rules are applied by checkers; the engine keeps what every checker
// reads of a connection, routes the events to them, holds each request's
// candidate findings until they can be decided, and applies the
// precedence of docs/design/rules.md §1 from the rules' attributes.
type Engine struct {
	opt      Options
	checkers []checker
	tele     *telemetryChecker
	inv      *inventoryChecker
	brokers  *brokerChecker
	conns    map[int]*conn
	tally    *Tally
	out      []Finding // findings completed by the current call
	// next is the record of the request being seen: most requests get no
	// candidate and are forgotten at once, so only those that do are
	// copied to the heap.
	next         request
	closed       []Connection
	droppedConns int64 // the oldest rows of the connections table, past MaxConnections
	// obs are the observations made since TakeObservations (Observe);
	// given are the header rules of the request being replayed (Replay).
	obs   []Observation
	given []Candidate
	// onces are the findings made once per key (cand.once), by rule and
	// key: where the tally keeps each (-1: not kept).
	onces bounded[string, int]
}

// New returns an engine.
func New(opt Options) *Engine {
	opt = opt.withDefaults()
	e := &Engine{opt: opt, conns: map[int]*conn{}, tele: newTelemetryChecker(),
		inv: newInventoryChecker(opt.MaxInstances), brokers: newBrokerChecker(opt.MaxBrokers, opt.MaxEvidence),
		tally: NewTally(opt.MaxFindings), onces: newBounded[string, int]()}
	// The order in which checkers see each event, and in which the
	// findings they make at once are listed.
	e.checkers = []checker{&headerChecker{choice: opt.Profile}, e.tele, newGroupChecker(), e.inv, e.brokers, streamChecker{}}
	if opt.Replay {
		// What the observations carry: no broker verdicts or stream
		// findings, which need every message of a connection.
		e.checkers = []checker{&givenHeaderChecker{e}, e.tele, newGroupChecker(), e.inv}
	}
	return e
}

// conn is what the engine keeps of an open connection: what every checker
// may read of it, each checker's part, and the requests waiting for their
// findings.
type conn struct {
	info kafka.Conn
	// firstID is the first non-zero header ID the connection showed,
	// which identifies the client to the telemetry, group and inventory
	// rules.
	firstID    kafka.UUID
	hasFirstID bool
	clientID   string        // kept
	checks     []connChecker // one per Engine.checkers
	// undecided are requests with possible findings, waiting for their
	// checkers to choose or for their answer.
	undecided []*request
	lastReq   *request // the last request the broker received, when it has candidates
	gaps      int      // gaps on either side, for the connections table
	afterGap  bool
	requests  int64
	responses int64
	last      kafka.FrameRef
	sawKafka  bool
	observed  bool // an observation of it was made (Options.Observe)
	// awaited are the correlation IDs of observed requests whose answers
	// are observed too, though their API's are not (awaitAnswer).
	awaited []int32
}

// instanceOf is the client instance ID a request's connection goes by: the
// request's header ID, else the connection's first one. It links the
// connections of one client instance.
func (c *conn) instanceOf(x headerID) (kafka.UUID, bool) {
	if x.carries {
		return x.id, true
	}
	return c.firstID, c.hasFirstID
}

// Open starts a connection.
func (e *Engine) Open(ci kafka.Conn) []Finding {
	e.out = e.out[:0]
	c := &conn{info: ci, last: ci.First, checks: make([]connChecker, len(e.checkers))}
	for i, k := range e.checkers {
		c.checks[i] = k.open(c)
	}
	e.conns[ci.ID] = c
	return e.out
}

// Gap tells the engine that bytes of a connection's side were lost.
func (e *Engine) Gap(connID int, side kafka.Direction, at kafka.FrameRef) {
	c := e.conns[connID]
	if c == nil {
		return
	}
	c.afterGap = true
	c.gaps++
	for _, k := range c.checks {
		k.gap(side)
	}
}

// Event feeds one decoder event of a connection. It returns the findings
// it completed (valid until the next call).
func (e *Engine) Event(connID int, ev *decode.Event) []Finding {
	e.out = e.out[:0]
	c := e.conns[connID]
	if c == nil {
		return e.out
	}
	c.last = ev.At
	switch ev.Kind {
	case decode.EventRequest:
		c.sawKafka = true
		e.request(c, ev)
	case decode.EventResponse:
		c.sawKafka = true
		e.response(c, ev)
	default:
		for _, k := range c.checks {
			e.emitAll(c, k.event(c, ev))
		}
	}
	return e.out
}

func (e *Engine) request(c *conn, ev *decode.Event) {
	h := &ev.Msg.Request
	c.requests++
	if !h.ClientIDNull && h.HeaderVersion > 0 {
		c.clientID = kept(h.ClientID)
	}
	q := &e.next
	*q = request{at: ev.At, h: *h, x: headerIDOf(h), afterGap: c.afterGap, noResponse: ev.Msg.NoResponse, cands: q.cands[:0]}
	if q.x.carries && !c.hasFirstID {
		c.firstID, c.hasFirstID, q.setsFirstID = q.x.id, true, true
	}
	for i, k := range c.checks {
		for _, cd := range k.request(c, q, ev) {
			cd.by = i
			q.cands = append(q.cands, cd)
		}
	}
	// Only a request with possible findings is looked at again as the last
	// one (a broker that closes on it); any other is dropped here, and with
	// it the memory of each idle connection's last request.
	c.lastReq = nil
	observed := e.observes(c, q)
	if observed && !hasHeaderCand(q.cands) {
		e.observe(c, Observation{Kind: ObservedRequest, Event: *ev})
		c.awaitAnswer(q)
		observed = false
	}
	if len(q.cands) > 0 {
		held := new(request)
		*held = *q
		held.cands = slices.Clone(q.cands)
		if observed {
			// Observed once its header rules are chosen (finalize).
			o := *ev
			held.observed = &o
		}
		// The checkers read the client ID as the request came: a request
		// waiting for its findings lets go of it (up to 32 KiB, and a
		// connection holds up to maxUndecided of them).
		held.h.ClientID = ""
		c.lastReq = held
		c.undecided = append(c.undecided, held)
	}
	e.settle(c, false)
}

func (e *Engine) response(c *conn, ev *decode.Event) {
	c.responses++
	m := &ev.Msg
	if !m.Matched {
		return
	}
	var q *request
	for _, u := range c.undecided {
		if !u.answered && u.h.CorrelationID == m.Response.CorrelationID {
			q = u
			break
		}
	}
	if q != nil {
		q.answered, q.respAt, q.ans = true, ev.At, m.Answer
	}
	if e.opt.Observe && (observedKey(m.Request.APIKey) || q != nil && q.observed != nil || c.answerAwaited(m.Response.CorrelationID)) {
		if q != nil && q.observed != nil {
			// After its request, which waits for its header rules.
			o := *ev
			q.observedAnswer = &o
		} else {
			e.observe(c, Observation{Kind: ObservedResponse, Event: *ev})
		}
	}
	answer := about{at: ev.At, h: &m.Request, ans: Answer{State: Answered, Codes: m.Answer.Codes()}}
	for _, k := range c.checks {
		for _, cd := range k.response(c, q, ev) {
			e.emitCand(c, cd, answer, nil)
		}
	}
	e.settle(c, false)
}

// Close ends a connection: what still waits is judged with what the
// capture holds.
func (e *Engine) Close(connID int, how kafka.Close, dec decode.Outcome) []Finding {
	ci := CloseInfo{Close: how, Outcome: dec}
	e.out = e.out[:0]
	c := e.conns[connID]
	if c == nil {
		return e.out
	}
	if ci.ClientID != "" {
		c.clientID = kept(ci.ClientID)
	}
	// The broker closed after the last request it received, without an
	// answer: that is how a KIP-1313 broker may reject it.
	if ci.byBroker() && c.lastReq != nil && !c.lastReq.answered {
		c.lastReq.respAt = ci.At
		c.lastReq.closedByBroker = ci.At.Frame != 0
	}
	e.settle(c, true)
	for _, k := range c.checks {
		e.emitAll(c, k.close(c, ci))
	}
	if c.observed {
		e.observe(c, Observation{Kind: ObservedClose, Close: ci})
	}
	row := Connection{ID: c.info.ID, Key: c.info.Endpoints, TCPStream: c.info.TCPStream, HasTCPStream: c.info.HasTCPStream, ClientID: c.clientID, HasClient: c.clientID != "",
		InstanceID: c.firstID, HasInstanceID: c.hasFirstID, MidStream: c.info.MidStream[kafka.ToBroker],
		NewClient: c.hasFirstID, Requests: c.requests, Responses: c.responses, Unanswered: ci.Counters.Unanswered, Gaps: c.gaps,
		NotKafka: ci.NotKafka, TLS: ci.TLS, First: c.info.First, Last: c.last}
	for _, k := range c.checks {
		k.describe(&row)
	}
	if len(e.closed) >= e.opt.MaxConnections {
		// Keep the most recent: drop the oldest half at once, so that the
		// copy is paid rarely.
		drop := len(e.closed) / 2
		e.closed = e.closed[:copy(e.closed, e.closed[drop:])]
		e.droppedConns += int64(drop)
	}
	e.closed = append(e.closed, row)
	delete(e.conns, connID)
	return e.out
}

// settle finalises the requests whose findings can now be decided: their
// checkers can choose (or the connection closed) and the answer is in (or
// the connection closed).
func (e *Engine) settle(c *conn, closing bool) {
	keep := c.undecided[:0]
	for i, q := range c.undecided {
		// Over the cap, the oldest are judged as they are.
		over := len(c.undecided)-i > maxUndecided
		if over || (closing || e.ready(c, q)) && (q.answered || closing) {
			e.finalize(c, q)
			continue
		}
		keep = append(keep, q)
	}
	clear(c.undecided[len(keep):])
	c.undecided = keep
}

// ready reports whether every checker with candidates for q can choose
// among them.
func (e *Engine) ready(c *conn, q *request) bool {
	for _, cd := range q.cands {
		if !c.checks[cd.by].ready() {
			return false
		}
	}
	return true
}

// maxUndecided caps the requests a connection keeps waiting for their
// profile or answer.
const maxUndecided = 1024

// finalize makes a request's findings: each checker chooses among its
// candidates; of those of rules with a precedence the first in docs/design/rules.md
// §1's order is reported, naming the others; those of rules without one
// are each reported. Then the checkers see the outcome.
func (e *Engine) finalize(c *conn, q *request) {
	var ranked, each, header []cand
	if q.observed != nil {
		defer e.observeHeld(c, q, &header)
	}
	for i, k := range c.checks {
		var own []cand
		for _, cd := range q.cands {
			if cd.by == i {
				own = append(own, cd)
			}
		}
		if len(own) == 0 {
			continue
		}
		chosen := k.choose(own)
		if q.observed != nil && i == 0 {
			header = chosen
		}
		for _, cd := range chosen {
			if precedenceOf(cd.rule) > 0 {
				ranked = append(ranked, cd)
			} else {
				each = append(each, cd)
			}
		}
	}
	var pick *cand
	for i := range ranked {
		if pick == nil || precedenceOf(ranked[i].rule) < precedenceOf(pick.rule) {
			pick = &ranked[i]
		}
	}
	req := about{at: q.at, h: &q.h, ans: answerOf(q), q: q}
	if pick != nil {
		e.emitCand(c, *pick, req, alsoOf(ranked, pick.rule))
	}
	for _, cd := range each {
		e.emitCand(c, cd, req, nil)
	}
	made := slices.Concat(ranked, each)
	for _, k := range c.checks {
		for _, cd := range k.settled(q, pick, made) {
			a := req
			if r, _ := Lookup(cd.rule); r.AtAnswer && q.answered {
				a.at = q.respAt
			}
			e.emitCand(c, cd, a, nil)
		}
	}
}

func precedenceOf(id string) int {
	r, _ := Lookup(id)
	return r.Precedence
}

// alsoOf names the rules of ranked other than picked, once each, in
// precedence order.
func alsoOf(ranked []cand, picked string) []string {
	var also []string
	for _, cd := range ranked {
		if cd.rule != picked && !slices.Contains(also, cd.rule) {
			also = append(also, cd.rule)
		}
	}
	sort.SliceStable(also, func(i, j int) bool { return precedenceOf(also[i]) < precedenceOf(also[j]) })
	return also
}

// answerOf is what became of a request.
func answerOf(q *request) Answer {
	switch {
	case q.ans.Known():
		return Answer{State: Answered, Codes: q.ans.Codes()}
	case q.noResponse:
		return Answer{State: NoResponseByDesign}
	case !q.answered && q.closedByBroker:
		return Answer{State: ClosedByBroker}
	case !q.answered:
		return Answer{State: NoResponse}
	}
	return Answer{State: Answered}
}

// about is what a finding about a request points at: the frame, the
// request's header and what became of it, and the request's record when it
// waited for its findings.
type about struct {
	at  kafka.FrameRef
	h   *decode.RequestHeader
	ans Answer
	q   *request
}

// emitCand turns a candidate into a finding about a request. also names
// the other §3/§4 rules that applied to the same request. A candidate of
// a rule and once key already found counts in that finding instead.
func (e *Engine) emitCand(c *conn, cd cand, a about, also []string) {
	var once string
	if cd.once != "" {
		once = cd.rule + "\x00" + cd.once
		if i, ok := e.onces.get(once); ok {
			e.tally.Repeat(i)
			return
		}
	}
	h := a.h
	f := Finding{Rule: cd.rule, At: a.at, Related: cd.related, APIKey: h.APIKey, APIVersion: h.APIVersion, HasAPI: true,
		CorrelationID: h.CorrelationID, Expected: cd.expected, Seen: cd.seen, Answer: a.ans, Also: also}
	if q := a.q; q != nil {
		f.AfterGap = q.afterGap
		if q.answered && !q.respAt.Same(a.at) {
			f.Related = append(slices.Clone(f.Related), related(q.respAt, RoleAnswer))
		}
	}
	if once != "" {
		f.Count = 1
	}
	i := e.emit(c, f, cd.info)
	if once != "" {
		e.onces.set(once, i)
	}
}

// emitAll makes findings about the connection, not about one request.
func (e *Engine) emitAll(c *conn, cands []cand) {
	for _, cd := range cands {
		e.emit(c, Finding{Rule: cd.rule, At: cd.at, Expected: cd.expected, Seen: cd.seen, Stream: cd.stream, Count: cd.count}, cd.info)
	}
}

// emit completes a finding with the connection and the catalogue (info
// lowers its severity to info), and returns where the tally keeps it.
func (e *Engine) emit(c *conn, f Finding, info bool) int {
	r, _ := Lookup(f.Rule)
	f.Severity = r.Severity
	if info {
		f.Severity = Info
	}
	f.Conn, f.ConnID = c.info.Endpoints, c.info.ID
	e.out = append(e.out, f)
	return e.tally.Add(f)
}

// Result returns everything found, once every connection is closed.
func (e *Engine) Result() Result {
	res := Result{Connections: append([]Connection(nil), e.closed...)}
	e.tally.Fill(&res)
	slices.SortStableFunc(res.Findings, func(a, b Finding) int { return a.At.Compare(b.At) })
	sort.Slice(res.Connections, func(i, j int) bool { return res.Connections[i].ID < res.Connections[j].ID })
	res.Instances = e.inv.list(e.tele.telemetryIDOf)
	res.Dropped.Connections, res.Dropped.Instances = e.droppedConns, e.inv.dropped
	res.Dropped.BrokerConnections = e.brokers.unlistedConn
	res.Brokers = e.brokers.list()
	res.Matrix = MatrixOf(res.Brokers, e.brokers.unlisted.kinds)
	return res
}
