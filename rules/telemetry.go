package rules

import (
	"strconv"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// The telemetry rules (RULES.md §4), about the client's requests and the
// broker's answers to GetTelemetrySubscriptions.
const (
	TelemetryBodyMismatch       = "telemetry-body-mismatch"
	TelemetryIDNotReused        = "telemetry-id-not-reused"
	TelemetryPushReservedID     = "telemetry-push-reserved-id"
	TelemetryPushAfterTerminate = "telemetry-push-after-terminating"
	TelemetryIDMissing          = "telemetry-id-missing"
	TelemetryPushUnknownID      = "telemetry-push-unknown-id"
	BrokerIDNotAssigned         = "broker-id-not-assigned"
	BrokerIDConflict            = "broker-id-conflict"
	BrokerIDReissued            = "broker-id-reissued"
)

var telemetryRules = []Rule{
	{ID: TelemetryBodyMismatch, Severity: Error, Section: "4", Place: 1, Precedence: 7, Verdict: true,
		Summary: "a v0 GetTelemetrySubscriptions or PushTelemetry carries header ID H ≠ ZERO and body ID ≠ H",
		Detail:  "If a client sends an instance ID in the request header, the body's ClientInstanceId of a v0 telemetry request must equal it (seed table, last two rows); a KIP-1313 broker answers INVALID_REQUEST.",
		Example: "gts-row5-body-differs"},
	{ID: TelemetryIDNotReused, Severity: Error, Section: "4", Place: 2, Precedence: 9,
		Summary: "a later telemetry request of the same client instance carries another ID, or ZERO, after it got telemetry ID X",
		Detail:  "After a client got telemetry ID X (assigned by the broker, or sent and accepted), its later GetTelemetrySubscriptions and PushTelemetry requests (same connection, or a connection linked by the same header ID) must carry X.",
		Example: "tel-assigned-not-reused"},
	{ID: TelemetryPushReservedID, Severity: Error, Section: "4", Place: 3, Precedence: 6,
		Summary: "a PushTelemetry identifies itself by ZERO or ONE",
		Detail:  "The ID a PushTelemetry identifies itself by (v0: its body; v1: its header, or the connection's established ID) must not be reserved; the broker answers INVALID_REQUEST.",
		Example: "tel-push-zero"},
	{ID: TelemetryPushAfterTerminate, Severity: Error, Section: "4", Place: 4, Precedence: 10,
		Summary: "a PushTelemetry for an instance ID after a terminating push for that ID, with no exchange re-issuing the ID since",
		Detail:  "After a PushTelemetry with Terminating = true, no further push may use that instance ID, unless the broker handed the ID out again: a GetTelemetrySubscriptions exchange after the terminating push, on any connection, assigned it (the broker returned it, answering NONE) or accepted it (the client identified itself by it and the broker answered NONE). Pushes for the ID after such an exchange are not reported; if the broker gave the ID to another client that asked for a new one, that answer is reported as broker-id-reissued. Once a broker has handed one ID to several clients, a terminating push ends only the use of the client that sent it: the others' pushes are not reported.",
		Example: "tel-push-after-terminating"},
	{ID: TelemetryIDMissing, Severity: Error, Section: "4", Place: 5, Precedence: 8,
		Summary: "a v1 telemetry request with no header ID on a connection that has no ID either",
		Detail:  "Telemetry v1 bodies carry no ClientInstanceId: the header (or the connection's established ID) is all that identifies the client.",
		Example: "tel-v1-header-id"},
	{ID: TelemetryPushUnknownID, Severity: Warning, Section: "4", Place: 6, Precedence: 11,
		Summary: "a PushTelemetry with an ID no GetTelemetrySubscriptions exchange in the capture assigned or accepted",
		Detail:  "A push should use an ID a GetTelemetrySubscriptions exchange produced. The capture may simply have started after that exchange.",
		Caveat:  "the capture may have started after it",
		Example: "tel-push-unknown-id"},
	{ID: BrokerIDNotAssigned, Severity: Error, Section: "4", Place: 7,
		Summary: "a GetTelemetrySubscriptions with R = ZERO and no H was answered NONE with B = ZERO",
		Detail:  "An initial KIP-714 request asks the broker for an ID; answering NONE without one leaves the client with nothing to use.",
		Example: "tel-broker-no-id"},
	{ID: BrokerIDConflict, Severity: Warning, Section: "4", Place: 8,
		Summary: "a GetTelemetrySubscriptions with R ≠ ZERO was answered with another non-zero ID",
		Detail:  "Apache brokers echo R (or answer ZERO); any other ID is wrong.",
		Example: "tel-broker-id-conflict"},
	{ID: BrokerIDReissued, Severity: Warning, Section: "4", Place: 10,
		Summary: "a GetTelemetrySubscriptions asking for a new ID was answered with an ID already seen on another connection",
		Detail:  "A client that has no telemetry ID asks for one with GetTelemetrySubscriptions v0: body ClientInstanceId ZERO and no instance ID in the header. The broker must answer with a new ID, unique to that client. This answer (NONE) gave an ID the capture had already seen on another connection: assigned there by a broker, or used there as a header or telemetry ID (connections with the same header instance ID are one client and do not count). Two clients now share one telemetry ID; librdkafka's mock cluster, for one, gives every client the same ID. The fault is the broker's, not the clients': their pushes with the ID are not reported as pushes after another client's terminating push. Reported at the response, once per answer; related frames: where the ID was first seen on another connection, and the request.",
		Example: "tel-broker-reissues-id"},
}

// telemetryChecker applies the telemetry rules. What it remembers across
// connections is keyed by client instance; what it keeps per connection
// (the GetTelemetrySubscriptions awaiting their answer) is in teleConn.
type telemetryChecker struct {
	// got maps a client instance (a connection, "c:ID", or a header
	// instance ID linking connections, "h:UUID") to the telemetry ID it got
	// and where.
	got bounded[string, gotID]
	// known are the IDs a GetTelemetrySubscriptions exchange assigned or
	// accepted, and where.
	known bounded[kafka.UUID, kafka.FrameRef]
	// terminated are IDs a terminating push used, and where, until a
	// GetTelemetrySubscriptions exchange assigns or accepts them again.
	terminated bounded[kafka.UUID, sighting]
	// reissued are IDs a broker assigned to more than one client
	// (broker-id-reissued): one client's terminating push then ends only
	// its own use of the ID.
	reissued bounded[kafka.UUID, kafka.FrameRef]
	// seen is where each ID was first used as a header or telemetry ID or
	// assigned by a broker, for broker-id-reissued.
	seen bounded[kafka.UUID, sightings]
}

// sighting is one place an ID was used or assigned: the frame, the
// connection, and the client instance ID that connection goes by (its
// header ID), which links connections of one client.
type sighting struct {
	at      kafka.FrameRef
	conn    int
	inst    kafka.UUID
	hasInst bool
}

// sameClient reports whether two sightings come from one client instance:
// the same connection, or connections with the same header ID.
func sameClient(a, b sighting) bool {
	return a.conn == b.conn || a.hasInst && b.hasInst && a.inst == b.inst
}

// sightings are the first sighting of an ID and the first one from another
// client instance than that.
type sightings struct {
	first, other sighting
	hasOther     bool
}

// elsewhere returns the frame where the ID was first seen from another
// client instance than q.
func (s sightings) elsewhere(q sighting) (kafka.FrameRef, bool) {
	if !sameClient(s.first, q) {
		return s.first.at, true
	}
	if s.hasOther && !sameClient(s.other, q) {
		return s.other.at, true
	}
	return kafka.FrameRef{}, false
}

type gotID struct {
	id kafka.UUID
	at kafka.FrameRef
}

type teleRequest struct {
	h        headerID
	body     kafka.UUID // v0 body ID (R)
	hasBody  bool
	ident    kafka.UUID // the ID it identifies itself by
	hasIdent bool
	at       kafka.FrameRef
}

func newTelemetryChecker() *telemetryChecker {
	return &telemetryChecker{got: newBounded[string, gotID](), known: newBounded[kafka.UUID, kafka.FrameRef](),
		terminated: newBounded[kafka.UUID, sighting](), reissued: newBounded[kafka.UUID, kafka.FrameRef](),
		seen: newBounded[kafka.UUID, sightings]()}
}

func connKey(id int) string          { return "c:" + strconv.Itoa(id) }
func headerKey(id kafka.UUID) string { return "h:" + id.String() }

func (t *telemetryChecker) rules() []Rule { return telemetryRules }

func (t *telemetryChecker) open(*conn) connChecker { return &teleConn{t: t} }

// telemetryIDOf returns the telemetry ID the client instance with header
// ID inst got, for the inventory.
func (t *telemetryChecker) telemetryIDOf(inst kafka.UUID) (kafka.UUID, bool) {
	g, ok := t.got.get(headerKey(inst))
	return g.id, ok
}

// teleConn is the telemetry rules' part of one connection: its
// GetTelemetrySubscriptions requests awaiting their answer.
type teleConn struct {
	passive
	t     *telemetryChecker
	asked pairs[int32, teleRequest]
}

// identity is the ID a telemetry request identifies its client by: the v0
// body's ID; for v1 the header ID, else the connection's (its first
// non-zero header ID, RULES.md §1 "established ID" for the telemetry
// rules).
func identity(c *conn, ev *decode.Event, x headerID) (kafka.UUID, bool) {
	m := &ev.Msg
	if m.Request.APIVersion == 0 {
		return m.Body.InstanceID, m.HasBody && m.Body.HasInstanceID
	}
	if x.tag {
		return x.id, true
	}
	return c.firstID, c.hasFirstID
}

// sightingOf is a sighting at frame at on connection c.
func sightingOf(c *conn, x headerID, at kafka.FrameRef) sighting {
	inst, has := c.instanceOf(x)
	return sighting{at: at, conn: c.info.ID, inst: inst, hasInst: has}
}

// sight records that id was used or assigned at s. Reserved IDs are no
// one's.
func (t *telemetryChecker) sight(id kafka.UUID, s sighting) {
	if id.IsReserved() {
		return
	}
	v, ok := t.seen.get(id)
	switch {
	case !ok:
		t.seen.set(id, sightings{first: s})
	case !v.hasOther && !sameClient(v.first, s):
		v.other, v.hasOther = s, true
		t.seen.set(id, v)
	}
}

// endedFor reports whether the terminating push term ended the use of id
// by the client that pushes at q: always, unless a broker handed id to
// several clients (broker-id-reissued) and term came from another one.
func (t *telemetryChecker) endedFor(id kafka.UUID, term, q sighting) bool {
	if _, shared := t.reissued.get(id); shared {
		return sameClient(term, q)
	}
	return true
}

// request records a request's header ID as used (the request that set the
// connection's first ID, and requests carrying another one, so that a
// connection costs one look-up), and applies the telemetry rules to a
// GetTelemetrySubscriptions or PushTelemetry request: it returns the
// findings that apply, in no order.
func (tc *teleConn) request(c *conn, q *request, ev *decode.Event) []cand {
	t, x := tc.t, q.x
	if x.carries && (q.setsFirstID || x.id != c.firstID) {
		t.sight(x.id, sighting{at: q.at, conn: c.info.ID, inst: x.id, hasInst: true})
	}
	h := &ev.Msg.Request
	if h.APIKey != decode.KeyGetTelemetrySubscriptions && h.APIKey != decode.KeyPushTelemetry {
		return nil
	}
	m := &ev.Msg
	if h.APIVersion == 0 && !m.HasBody {
		return nil // the body did not decode: nothing to compare
	}
	at := ev.At
	ident, hasIdent := identity(c, ev, x)
	if hasIdent {
		t.sight(ident, sightingOf(c, x, at))
	}
	var out []cand
	if h.APIVersion == 0 && x.carries && m.Body.InstanceID != x.id {
		out = append(out, cand{rule: TelemetryBodyMismatch, expected: Value{Kind: ValueHeaderBodyID, ID: x.id},
			seen: Value{Kind: ValueBodyID, ID: m.Body.InstanceID}})
	}
	if h.APIVersion >= 1 && !x.carries && !c.hasFirstID {
		out = append(out, cand{rule: TelemetryIDMissing, expected: Value{Kind: ValueHeaderID}, seen: Value{Kind: ValueNoIDAnywhere}})
	}
	if g, ok := t.gotFor(c, x); ok && hasIdent && ident != g.id {
		out = append(out, cand{rule: TelemetryIDNotReused, expected: Value{Kind: ValueID, ID: g.id}, seen: Value{Kind: ValueIDNamed, ID: ident},
			related: []Related{{g.at, RoleAssigned}}})
	}
	if h.APIKey == decode.KeyPushTelemetry && hasIdent {
		if ident.IsReserved() {
			out = append(out, cand{rule: TelemetryPushReservedID, expected: Value{Kind: ValueNonReserved}, seen: Value{Kind: ValueIDNamed, ID: ident}})
		} else {
			if f, ok := t.terminated.get(ident); ok && t.endedFor(ident, f, sightingOf(c, x, at)) {
				out = append(out, cand{rule: TelemetryPushAfterTerminate, expected: Value{Kind: ValueNoPushAfterEnd},
					seen: Value{Kind: ValuePushFor, ID: ident}, related: []Related{{f.at, RoleTerminated}}})
			}
			if _, ok := t.known.get(ident); !ok {
				out = append(out, cand{rule: TelemetryPushUnknownID, expected: Value{Kind: ValueExchangedID}, seen: Value{Kind: ValueID, ID: ident}})
			}
			if m.Body.Terminating {
				if _, ok := t.terminated.get(ident); !ok {
					t.terminated.set(ident, sightingOf(c, x, at))
				}
			}
		}
	}
	if h.APIKey == decode.KeyGetTelemetrySubscriptions {
		tc.asked.set(h.CorrelationID, teleRequest{h: x, body: m.Body.InstanceID,
			hasBody: h.APIVersion == 0, ident: ident, hasIdent: hasIdent, at: at})
	}
	return out
}

// gotFor returns the telemetry ID the client instance got: on this
// connection, or on one linked to it by the same header ID.
func (t *telemetryChecker) gotFor(c *conn, x headerID) (gotID, bool) {
	if g, ok := t.got.get(connKey(c.info.ID)); ok {
		return g, true
	}
	if id, has := c.instanceOf(x); has {
		return t.got.get(headerKey(id))
	}
	return gotID{}, false
}

// response applies the rules about the broker's answer to a
// GetTelemetrySubscriptions and records the ID the client got. An ID it
// assigns or accepts is live again: a push for it is no longer one after a
// terminating push (the broker re-issued it).
func (tc *teleConn) response(c *conn, _ *request, ev *decode.Event) []cand {
	t := tc.t
	m := &ev.Msg
	if m.Request.APIKey != decode.KeyGetTelemetrySubscriptions {
		return nil
	}
	req, ok := tc.asked.take(m.Request.CorrelationID)
	if !ok || !m.HasErrorCode || m.ErrorCode != 0 {
		return nil
	}
	var out []cand
	b := m.Body.InstanceID
	var got kafka.UUID
	asked := Related{req.at, RoleRequest}
	if req.hasBody {
		r := req.body
		switch {
		case r.IsZero() && !req.h.carries && b.IsZero():
			out = append(out, cand{rule: BrokerIDNotAssigned, expected: Value{Kind: ValueNewID}, seen: Value{Kind: ValueIDNamed, ID: b},
				related: []Related{asked}})
		case !r.IsZero() && !b.IsZero() && b != r:
			out = append(out, cand{rule: BrokerIDConflict, expected: Value{Kind: ValueEchoOrZero, ID: r}, seen: Value{Kind: ValueID, ID: b},
				related: []Related{asked}})
		case r.IsZero() && !req.h.carries && !b.IsReserved():
			if v, ok := t.seen.get(b); ok {
				if first, ok := v.elsewhere(sightingOf(c, req.h, ev.At)); ok {
					out = append(out, cand{rule: BrokerIDReissued, expected: Value{Kind: ValueNewID},
						seen: Value{Kind: ValueSeenElsewhereID, ID: b}, related: []Related{{first, RoleFirstSeen}, asked}})
					t.reissued.set(b, ev.At)
				}
			}
		}
		if !b.IsZero() {
			t.sight(b, sightingOf(c, req.h, ev.At))
		}
		switch {
		case !b.IsZero():
			got = b
		case !r.IsZero():
			got = r
		}
	} else if req.hasIdent {
		got = req.ident
	}
	if !got.IsReserved() {
		at := ev.At
		t.known.set(got, at)
		t.terminated.delete(got)
		t.got.set(connKey(c.info.ID), gotID{got, at})
		if req.h.carries {
			t.got.set(headerKey(req.h.id), gotID{got, at})
		} else if c.hasFirstID {
			t.got.set(headerKey(c.firstID), gotID{got, at})
		}
	}
	return out
}

// close drops what was kept for the connection (what is kept per request
// goes with the teleConn).
func (tc *teleConn) close(c *conn, _ CloseInfo) []cand {
	tc.t.got.delete(connKey(c.info.ID))
	return nil
}
