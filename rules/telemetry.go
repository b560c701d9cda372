package rules

import (
	"net/netip"
	"strconv"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// The telemetry rules (docs/design/rules.md §4), about the client's requests and the
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
	{ID: TelemetryBodyMismatch, Severity: Error, Group: GroupTelemetry, Verdict: true,
		Summary: "a v0 GetTelemetrySubscriptions or PushTelemetry carries header ID H ≠ ZERO and body ID ≠ H",
		Detail: "A GetTelemetrySubscriptions v0 or PushTelemetry v0 carries a header ID H (not ZERO) and a body ClientInstanceId R that is not H, ZERO included: " +
			"the last two rows of the seed's GetTelemetrySubscriptions table (H with R = ZERO, H with R ≠ H). A client that sends H must use H for its telemetry too. " +
			"The broker's answer to it counts for the broker's KIP-1313 verdict.",
		Why: "A broker that knows KIP-1313 rejects it with INVALID_REQUEST: the client gets no subscription and sends no metrics, so its client telemetry is missing. " +
			"A broker that does not know KIP-1313 ignores H: it takes R = ZERO as a request for a new ID, or R as the telemetry ID, " +
			"so one client shows under its header ID in logs and under another ID in its metrics.",
		Fix: "Client: when the header carries the instance ID, put the same ID in the body's ClientInstanceId: a KIP-1313 client makes its own ID and does not ask the broker for one (R = ZERO). " +
			"Or use telemetry v1, whose body has no ID. Broker: nothing to change: INVALID_REQUEST is the right answer.",
		Example: "gts-row5-body-differs"},
	{ID: TelemetryIDNotReused, Severity: Error, Group: GroupTelemetry, CrossConnection: true,
		Summary: "a later telemetry request of the same client instance carries another ID, or ZERO, after it got telemetry ID X",
		Detail: "After a client got telemetry ID X (the broker returned it in a GetTelemetrySubscriptions answer, or the client sent it and the broker answered NONE), " +
			"a later GetTelemetrySubscriptions or PushTelemetry of the same client instance carries a different ID or ZERO: " +
			"on the same connection, or on another connection linked to it by the same header ID.",
		Why: "The broker keeps subscriptions and pushed metrics by the ID. A push under another ID is answered UNKNOWN_SUBSCRIPTION_ID (117) and its metrics are dropped; " +
			"a new request with ZERO makes the broker hand out a new ID, so one client's metrics split across several instances. " +
			"Per-client telemetry shows gaps, or clients that do not exist.",
		Fix: "Client: keep the telemetry ID it was given (or its own instance ID) for the life of the client instance, across reconnects and brokers, " +
			"and ask again with that same ID when a push is answered UNKNOWN_SUBSCRIPTION_ID. Broker: nothing to change.",
		Example: "tel-assigned-not-reused"},
	{ID: TelemetryPushReservedID, Severity: Error, Group: GroupTelemetry,
		Summary: "a PushTelemetry identifies itself by ZERO or ONE",
		Detail: "The ID a PushTelemetry identifies itself by is ZERO or ONE: a v0 push by its body ClientInstanceId; " +
			"a v1 push by its header ID or, without one, by the connection's established ID.",
		Why: "The broker answers INVALID_REQUEST and drops the metrics: the client pushes without having got an ID, or lost the one it had, and its telemetry never reaches the metrics backend.",
		Fix: "Client: push only with the ID a GetTelemetrySubscriptions exchange gave or accepted (v0: in the body; v1: in the header, or on a connection that established a non-reserved ID). " +
			"Broker: nothing to change.",
		Example: "tel-push-zero"},
	{ID: TelemetryPushAfterTerminate, Severity: Error, Group: GroupTelemetry, CrossConnection: true,
		Summary: "a PushTelemetry for an instance ID after a terminating push for that ID, with no exchange re-issuing the ID since",
		Detail: "After a PushTelemetry with Terminating = true, no further push may use that instance ID, to any broker, unless a broker handed the ID out again: " +
			"a GetTelemetrySubscriptions exchange after the terminating push, on any connection, that asked for a new ID (body ID ZERO, no header ID) and was assigned this one (broker-id-reissued). " +
			"An exchange that names the ID does not lift it: Apache Kafka answers it NONE and still rejects the next push with INVALID_REQUEST. " +
			"Once a broker has handed one ID to several clients, a terminating push ends only the use of the client that sent it: the others' pushes are not reported. " +
			"A broker that accepts such a push (Apache keeps the terminating state per broker) does not make it right.",
		Why: "A terminating push tells the broker that the client instance is closing and its subscription can go. " +
			"A later push for the ID is rejected (INVALID_REQUEST or UNKNOWN_SUBSCRIPTION_ID) and its metrics are lost. " +
			"It means the client sent its terminating push before it really stopped, or went on using the instance after closing it.",
		Fix: "Client: send Terminating = true only in the last push of a closing instance; an instance that goes on must get a subscription again with GetTelemetrySubscriptions before it pushes. " +
			"Broker: nothing to change.",
		Example: "tel-push-after-terminating"},
	{ID: TelemetryIDMissing, Severity: Error, Group: GroupTelemetry,
		Summary: "a v1 telemetry request with no header ID on a connection that has no ID either",
		Detail: "A GetTelemetrySubscriptions v1 or PushTelemetry v1 carries no header ID, on a connection that has no established ID either. " +
			"Telemetry v1 bodies have no ClientInstanceId: the header, or the connection's established ID, is all that identifies the client.",
		Why: "Nothing tells the broker which client instance the subscription or the metrics belong to: it rejects the request with INVALID_REQUEST and the client's telemetry is lost.",
		Fix: "Client: use telemetry v1 only with KIP-1313 header IDs: send the instance ID in the connection's first v3-header request (a v1 telemetry request is one). " +
			"Otherwise use v0, with the ID in the body. Broker: nothing to change.",
		Example: "tel-v1-header-id"},
	{ID: TelemetryPushUnknownID, Severity: Warning, Group: GroupTelemetry, CrossConnection: true,
		Summary: "a PushTelemetry with an ID no GetTelemetrySubscriptions exchange in the capture assigned or accepted",
		Detail: "A PushTelemetry uses a non-reserved ID that no GetTelemetrySubscriptions exchange in the capture, on any connection to any broker, assigned (B, answered NONE) " +
			"or accepted (the ID the request identified itself by, answered NONE: v0 its body, v1 its header or its connection's established ID). " +
			"Reported once per ID, at its first push; the finding's count says how many pushes with the ID it stands for. " +
			"A warning: the capture may simply have started after that exchange. Info when the push's connection began before the capture: " +
			"a client asks once when it starts and then only pushes, moving its pushes to another broker without asking again, so a capture on a broker host that starts after its clients sees them so.",
		Caveat: "the capture may have started after it",
		Why: "If no exchange ever produced the ID, the broker has no subscription for it: the push is answered UNKNOWN_SUBSCRIPTION_ID and its metrics are dropped. " +
			"The client may have made the ID up, or kept it from another cluster or an earlier run.",
		Fix: "First rule out a late capture: capture from the client's start. Client: get a subscription with GetTelemetrySubscriptions, and push with the ID it returned or accepted. " +
			"Broker: nothing to change.",
		Example: "tel-push-unknown-id"},
	{ID: BrokerIDNotAssigned, Severity: Error, Group: GroupTelemetry, AtAnswer: true,
		Summary: "a GetTelemetrySubscriptions with R = ZERO and no H was answered NONE with B = ZERO",
		Detail: "A GetTelemetrySubscriptions v0 with body ID R = ZERO and no header ID, the first row of the seed's table (a KIP-714 client asking for its telemetry ID), " +
			"is answered NONE with ClientInstanceId B = ZERO.",
		Why: "The client asked for its telemetry ID and got none: it has nothing to push with, so it sends no telemetry or asks again and again, and its metrics never arrive. The fault is the broker's.",
		Fix: "Broker: answer an initial GetTelemetrySubscriptions with a new random, non-reserved ID, as Apache Kafka does; " +
			"check the version of the broker, or of a proxy between client and broker, that answered it. Client: nothing to change.",
		Example: "tel-broker-no-id"},
	{ID: BrokerIDConflict, Severity: Warning, Group: GroupTelemetry, AtAnswer: true,
		Summary: "a GetTelemetrySubscriptions with R ≠ ZERO was answered with another non-zero ID",
		Detail: "A GetTelemetrySubscriptions v0 whose body names the client's ID (R ≠ ZERO) is answered with a ClientInstanceId B that is neither ZERO nor R. " +
			"Apache brokers echo R, or answer ZERO as the seed's table has it; any other ID is wrong.",
		Why: "The client is told its ID is not the one it uses: a client that takes B splits its metrics between two IDs, and one that keeps R may not match the subscription the broker keeps. " +
			"Either way per-client telemetry cannot be trusted.",
		Fix: "Broker: for a request that names its ID, keep that ID (echo R, or return ZERO); make a new one only for R = ZERO. " +
			"Look at non-Apache brokers and proxies in the path. Client: keep using R.",
		Example: "tel-broker-id-conflict"},
	{ID: BrokerIDReissued, Severity: Warning, Group: GroupTelemetry, CrossConnection: true, AtAnswer: true,
		Summary: "a GetTelemetrySubscriptions asking for a new ID was answered with an ID already seen on another connection",
		Detail: "A client that has no telemetry ID asks for one with GetTelemetrySubscriptions v0: body ClientInstanceId ZERO and no instance ID in the header. " +
			"This answer (NONE) gave an ID the capture had already seen on another connection: assigned there by a broker, or used there as a header or telemetry ID " +
			"(connections with the same header instance ID are one client and do not count). " +
			"Their pushes with the ID are not reported as pushes after another client's terminating push: the fault is the broker's. " +
			"Reported at the response, once per answer; related frames: where the ID was first seen on another connection, and the request.",
		Why: "Two client instances now share one telemetry ID: their metrics merge in the telemetry backend, and one client's terminating push ends the subscription the other still uses. " +
			"Per-client dashboards and alerts are wrong. librdkafka's mock cluster, for one, gives every client the same ID.",
		Fix: "Broker: make a new random ID for every request that asks for one, and never hand out an ID twice. " +
			"Client: nothing to change; a KIP-1313 client avoids the problem by making its own ID and sending it (H = R).",
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
	broker  netip.AddrPort
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
// non-zero header ID, docs/design/rules.md §1 "established ID" for the telemetry
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
	return sighting{at: at, conn: c.info.ID, broker: c.info.Endpoints.Broker, inst: inst, hasInst: has}
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
		t.sight(x.id, sighting{at: q.at, conn: c.info.ID, broker: c.info.Endpoints.Broker, inst: x.id, hasInst: true})
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
			// Apache rejects a reserved body ID whether or not it knows
			// KIP-1313 (ClientMetricsManager.processPushTelemetryRequest);
			// a v1 push's ID is its header's, a KIP-1313 matter.
			out = append(out, cand{rule: TelemetryPushReservedID, expected: Value{Kind: ValueNonReserved}, seen: Value{Kind: ValueIDNamed, ID: ident},
				rejectedAnyway: h.APIVersion == 0})
		} else {
			here := sightingOf(c, x, at)
			if f, ok := t.terminated.get(ident); ok && t.endedFor(ident, f, here) {
				// Apache keeps the terminating flag per broker: another
				// broker has no reason of its own to reject the push.
				out = append(out, cand{rule: TelemetryPushAfterTerminate, expected: Value{Kind: ValueNoPushAfterEnd},
					seen: Value{Kind: ValuePushFor, ID: ident}, related: []Related{{f.at, RoleTerminated}},
					rejectedAnyway: f.broker == here.broker})
			}
			if _, ok := t.known.get(ident); !ok {
				// Once per ID: a client asks once and then only pushes, so a
				// capture that began after its exchange sees every push. On
				// a connection open before the capture that is what to
				// expect: info.
				out = append(out, cand{rule: TelemetryPushUnknownID, expected: Value{Kind: ValueExchangedID}, seen: Value{Kind: ValueID, ID: ident},
					once: string(ident[:]), info: c.info.MidStream[kafka.ToBroker]})
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
		if req.hasBody && req.body.IsZero() && !req.h.carries && got == b {
			// The client asked for a new ID and the broker handed this one
			// out again (broker-id-reissued): its terminating push is
			// over. An exchange that names the ID does not lift it: Apache
			// answers it NONE and still rejects the next push.
			t.terminated.delete(got)
		}
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
