package rules

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// A checker applies some rules of the catalogue: it owns their rows (with
// their attributes: severity, section, profile, texts, precedence, whether
// they decide a broker verdict) and the state they need across
// connections. For each connection it makes a connChecker, which owns that
// connection's state and reacts to its events. The engine routes events to
// the checkers and applies the precedence from the rows' attributes.
type checker interface {
	rules() []Rule
	open(c *conn) connChecker
}

// connChecker is a checker's part of one connection.
type connChecker interface {
	// request sees a request and returns the findings it may get; they
	// wait for ready and for the request's answer.
	request(c *conn, q *request, ev *decode.Event) []cand
	// ready reports whether the checker can now choose among the
	// candidates it made for a request (the header rules wait for the
	// connection's profile). The connection's close makes every checker
	// choose.
	ready() bool
	// choose returns those of its candidates for a request that apply.
	choose(cands []cand) []cand
	// settled sees a request whose findings were made: pick is the one
	// the precedence chose (nil: none), made all the candidates the
	// checkers chose (pick's rivals included). Its candidates are more
	// findings about the request.
	settled(q *request, pick *cand, made []cand) []cand
	// response sees an answer. q is its request's record while that waits
	// for its findings, else nil. Its candidates are findings at the
	// answer.
	response(c *conn, q *request, ev *decode.Event) []cand
	// event sees the decoder's other events (resynchronisation, not
	// Kafka); its candidates are findings about the connection.
	event(c *conn, ev *decode.Event) []cand
	// gap says that bytes of one side were lost.
	gap(side kafka.Direction)
	// close ends the connection: its candidates are findings about the
	// connection, and the checker lets go of what it kept for it.
	close(c *conn, ci CloseInfo) []cand
	// describe fills the checker's columns of the connections table.
	describe(row *Connection)
}

// passive is a connChecker that reacts to nothing: checkers embed it and
// define the events they react to.
type passive struct{}

func (passive) request(*conn, *request, *decode.Event) []cand  { return nil }
func (passive) ready() bool                                    { return true }
func (passive) choose(cands []cand) []cand                     { return cands }
func (passive) settled(*request, *cand, []cand) []cand         { return nil }
func (passive) response(*conn, *request, *decode.Event) []cand { return nil }
func (passive) event(*conn, *decode.Event) []cand              { return nil }
func (passive) gap(kafka.Direction)                            {}
func (passive) close(*conn, CloseInfo) []cand                  { return nil }
func (passive) describe(*Connection)                           {}

// cand is a finding a rule would make, before the precedence picks one.
type cand struct {
	rule     string
	expected Value
	seen     Value
	related  []Related
	// by is the index, among the engine's checkers, of the one that made
	// it (set by the engine).
	by int
	// once, when set, makes the findings of the rule with the same once
	// one finding, at the first, whose Count says how many requests it
	// stands for (telemetry-push-unknown-id: once per ID).
	once string
	// info makes the finding info whatever its rule's severity (a
	// telemetry-push-unknown-id on a connection the capture joined
	// mid-stream).
	info bool
	// rejectedAnyway: Apache Kafka answers INVALID_REQUEST to the request
	// for this finding's reason whether or not it knows KIP-1313 (a
	// reserved v0 body ID, an empty member ID): such an answer tells
	// nothing of the broker's KIP-1313 verdict (docs/design/rules.md §5).
	rejectedAnyway bool
	// judge says which way of judging made it, for a checker that judges
	// a request several ways until it knows which applies (the header
	// rules: seed, accepted, old client).
	judge uint8
	// at, stream and count are the evidence of a finding about the
	// connection rather than a request.
	at     kafka.FrameRef
	stream Stream
	count  int64
}

// request is one request of a connection, with the findings it may get
// while they wait.
type request struct {
	at kafka.FrameRef
	h  decode.RequestHeader
	x  headerID
	// setsFirstID: this request's header ID is the connection's first
	// non-zero one.
	setsFirstID bool
	cands       []cand
	afterGap    bool
	answered    bool
	respAt      kafka.FrameRef
	ans         decode.Answer
	// noResponse: the request gets no response by design (acks = 0).
	noResponse bool
	// closedByBroker: the broker closed the connection after it, without
	// an answer (respAt is where).
	closedByBroker bool
	// observed is the request's event, to be observed with its header
	// rules once they are chosen, and observedAnswer its answer, which
	// follows it (Options.Observe).
	observed, observedAnswer *decode.Event
}

// headerID is what a request header says of the instance ID.
type headerID struct {
	tag     bool       // tag 0 present (size 16)
	id      kafka.UUID // its value
	carries bool       // a non-zero value (ONE counts)
}

func headerIDOf(h *decode.RequestHeader) headerID {
	return headerID{tag: h.HasInstanceID, id: h.InstanceID, carries: h.HasInstanceID && !h.InstanceID.IsZero()}
}

// value is what the header says, as the header rules show it.
func (x headerID) value() Value {
	if !x.tag {
		return Value{Kind: ValueNoID}
	}
	return Value{Kind: ValueIDNamed, ID: x.id}
}

func related(w kafka.FrameRef, role Role) Related { return Related{Frame: w, Role: role} }
