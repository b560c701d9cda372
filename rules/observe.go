package rules

import (
	"slices"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// ObservationKind says what an Observation records.
type ObservationKind uint8

const (
	ObservedOpen     ObservationKind = iota + 1 // a connection, before its first observed message
	ObservedRequest                             // a request the cross-connection rules read
	ObservedResponse                            // the answer to an observed telemetry or group request
	ObservedClose                               // the end of an observed connection
)

// An Observation is one input of the rules that look across connections
// (telemetry IDs, member IDs, the instance inventory), taken from an
// engine that checks one host's traffic (Options.Observe), so that an
// engine that sees every host's (Options.Replay) can check those rules
// across all of them. Only what they read is observed:
//
//   - GetTelemetrySubscriptions, PushTelemetry, JoinGroup, LeaveGroup and
//     ConsumerGroupHeartbeat requests and their answers;
//   - the request that set a connection's first header ID, and requests
//     that carry another ID than that one, with their answers;
//   - the opening and the end of a connection with such a request.
//
// A request carries the header rules (docs/design/rules.md §3) that apply to it, as the
// observing engine chose them with the whole connection in view: they take
// part in the precedence of §1 wherever the request is replayed.
// Observations of one connection come in the order the engine made them;
// a request whose header rules waited for the connection's profile comes
// when they were chosen, with its answer after it, so a replaying engine
// orders observations by their frames' time.
type Observation struct {
	Kind ObservationKind
	Conn kafka.Conn
	// Instance is the connection's first header ID when the observation
	// was made (HasInstance): it names the client instance it belongs to.
	Instance    kafka.UUID
	HasInstance bool
	// Event is the request or response (Err and BodyErr are not kept).
	Event decode.Event
	// Header are the header rules that apply to a request.
	Header []Candidate
	// Close is how the connection ended.
	Close CloseInfo
	// AfterGap: bytes of the connection were lost before it (for a
	// request, before the request), which its findings say.
	AfterGap bool
}

// A Candidate is a finding a rule makes of a request before the precedence
// of docs/design/rules.md §1 picks among those of the request.
type Candidate struct {
	Rule     string
	Expected Value
	Seen     Value
	Related  []Related
}

// At is the frame the observation points at.
func (o *Observation) At() kafka.FrameRef {
	switch o.Kind {
	case ObservedOpen:
		return o.Conn.First
	case ObservedClose:
		return o.Close.At
	}
	return o.Event.At
}

// CrossConnection reports whether a rule looks across connections, so that
// it is found again over every host's observations.
func CrossConnection(id string) bool {
	r, _ := Lookup(id)
	return r.CrossConnection
}

// Ranked reports whether a rule takes part in the precedence of docs/design/rules.md
// §1 (at most one of them per request).
func Ranked(id string) bool { return precedenceOf(id) > 0 }

// observedKey reports whether the rules across connections read requests
// of this API.
func observedKey(key int16) bool {
	switch key {
	case decode.KeyGetTelemetrySubscriptions, decode.KeyPushTelemetry, decode.KeyJoinGroup, decode.KeyLeaveGroup, decode.KeyConsumerGroupHeartbeat:
		return true
	}
	return false
}

// TakeObservations returns what the engine observed since the last call
// (Options.Observe), valid until the next call of any method.
func (e *Engine) TakeObservations() []Observation {
	obs := e.obs
	e.obs = e.obs[:0]
	return obs
}

// observe records an observation of connection c, after its opening when
// it is the connection's first.
func (e *Engine) observe(c *conn, o Observation) {
	if !c.observed {
		c.observed = true
		e.obs = append(e.obs, Observation{Kind: ObservedOpen, Conn: c.info, Instance: c.firstID, HasInstance: c.hasFirstID})
	}
	o.Conn, o.Instance, o.HasInstance = c.info, c.firstID, c.hasFirstID
	o.AfterGap = o.AfterGap || c.afterGap
	o.Event.Err, o.Event.Msg.BodyErr = nil, nil
	o.Event.Msg.Request.ClientID = kept(o.Event.Msg.Request.ClientID)
	o.Close.ClientID = kept(o.Close.ClientID)
	b := &o.Event.Msg.Body
	b.GroupID, b.MemberID, b.APIVersions, b.Mechanism = kept(b.GroupID), kept(b.MemberID), nil, ""
	if b.GroupInstanceID != nil {
		g := kept(*b.GroupInstanceID)
		b.GroupInstanceID = &g
	}
	e.obs = append(e.obs, o)
}

// maxAwaited bounds the answers a connection waits for to observe them.
const maxAwaited = 64

// awaitAnswer notes that the answer to q, observed at once, is to be
// observed when it comes: a replaying engine judges the request's
// findings (instance-id-shared on the request that set the first ID, a
// header rule on one with another ID) with the broker's answer, as the
// observing engine did. The answers of the APIs the rules across
// connections read are observed anyway, and a request held for its header
// rules brings its own (observeHeld).
func (c *conn) awaitAnswer(q *request) {
	if q.noResponse || observedKey(q.h.APIKey) {
		return
	}
	if len(c.awaited) >= maxAwaited {
		c.awaited = c.awaited[:copy(c.awaited, c.awaited[1:])]
	}
	c.awaited = append(c.awaited, q.h.CorrelationID)
}

// answerAwaited reports whether the answer with this correlation ID is to
// be observed, and forgets it.
func (c *conn) answerAwaited(id int32) bool {
	i := slices.Index(c.awaited, id)
	if i < 0 {
		return false
	}
	c.awaited = slices.Delete(c.awaited, i, i+1)
	return true
}

// observes reports whether a request is observed.
func (e *Engine) observes(c *conn, q *request) bool {
	return e.opt.Observe && (observedKey(q.h.APIKey) || q.x.carries && (q.setsFirstID || q.x.id != c.firstID))
}

// Replay feeds one observation to an engine made with Options.Replay. It
// returns the findings it completed (valid until the next call).
// Observations must come in capture order across connections (their
// frames' time), each connection's opening first.
func (e *Engine) Replay(o *Observation) []Finding {
	if c := e.conns[o.Conn.ID]; c != nil && o.AfterGap {
		c.afterGap = true
	}
	switch o.Kind {
	case ObservedOpen:
		return e.Open(o.Conn)
	case ObservedRequest:
		e.given = o.Header
		defer func() { e.given = nil }()
		return e.Event(o.Conn.ID, &o.Event)
	case ObservedResponse:
		return e.Event(o.Conn.ID, &o.Event)
	case ObservedClose:
		return e.Close(o.Conn.ID, o.Close.Close, o.Close.Outcome)
	}
	e.out = e.out[:0]
	return e.out
}

// givenHeaderChecker stands for the header checker in a replaying engine:
// a request's header rules are those its observation carries.
type givenHeaderChecker struct{ e *Engine }

func (*givenHeaderChecker) rules() []Rule { return nil }

func (g *givenHeaderChecker) open(*conn) connChecker { return givenHeaderConn{e: g.e} }

type givenHeaderConn struct {
	passive
	e *Engine
}

func (g givenHeaderConn) request(*conn, *request, *decode.Event) []cand {
	var out []cand
	for _, c := range g.e.given {
		out = append(out, cand{rule: c.Rule, expected: c.Expected, seen: c.Seen, related: c.Related})
	}
	return out
}

// hasHeaderCand reports whether the header rules made candidates, which
// wait to be chosen.
func hasHeaderCand(cands []cand) bool {
	for _, cd := range cands {
		if cd.by == 0 {
			return true
		}
	}
	return false
}

// observeHeld observes a request that waited for its header rules, with
// those chosen, and then its answer when it came.
func (e *Engine) observeHeld(c *conn, q *request, header *[]cand) {
	o := Observation{Kind: ObservedRequest, Event: *q.observed}
	for _, cd := range *header {
		o.Header = append(o.Header, Candidate{Rule: cd.rule, Expected: cd.expected, Seen: cd.seen, Related: cd.related})
	}
	e.observe(c, o)
	// Lost bytes after the request, before its header rules were chosen,
	// are not before it.
	e.obs[len(e.obs)-1].AfterGap = q.afterGap
	if q.observedAnswer != nil {
		e.observe(c, Observation{Kind: ObservedResponse, Event: *q.observedAnswer})
	}
	q.observed, q.observedAnswer = nil, nil
}
