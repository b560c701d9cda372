package rules

import (
	"strconv"

	"github.com/kidscope/kidscope/decode"
)

// telemetryState is what the telemetry rules (RULES.md §4) remember across
// connections.
type telemetryState struct {
	// got maps a client instance (a connection, "c:ID", or a header
	// instance ID linking connections, "h:UUID") to the telemetry ID it got
	// and where.
	got bounded[string, gotID]
	// known are the IDs a GetTelemetrySubscriptions exchange assigned or
	// accepted, and where.
	known bounded[decode.UUID, Frame]
	// terminated are IDs a terminating push used, and where, until a
	// GetTelemetrySubscriptions exchange assigns or accepts them again.
	terminated bounded[decode.UUID, sighting]
	// reissued are IDs a broker assigned to more than one client
	// (broker-id-reissued): one client's terminating push then ends only
	// its own use of the ID.
	reissued bounded[decode.UUID, Frame]
	// seen is where each ID was first used as a header or telemetry ID or
	// assigned by a broker, for broker-id-reissued.
	seen bounded[decode.UUID, sightings]
}

// sighting is one place an ID was used or assigned: the frame, the
// connection, and the client instance ID that connection goes by (its
// header ID), which links connections of one client.
type sighting struct {
	at      Frame
	conn    int
	inst    decode.UUID
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
func (s sightings) elsewhere(q sighting) (Frame, bool) {
	if !sameClient(s.first, q) {
		return s.first.at, true
	}
	if s.hasOther && !sameClient(s.other, q) {
		return s.other.at, true
	}
	return Frame{}, false
}

type gotID struct {
	id decode.UUID
	at Frame
}

type teleRequest struct {
	h        headerID
	body     decode.UUID // v0 body ID (R)
	hasBody  bool
	ident    decode.UUID // the ID it identifies itself by
	hasIdent bool
	at       Frame
}

func newTelemetryState() telemetryState {
	return telemetryState{got: newBounded[string, gotID](), known: newBounded[decode.UUID, Frame](),
		terminated: newBounded[decode.UUID, sighting](), reissued: newBounded[decode.UUID, Frame](),
		seen: newBounded[decode.UUID, sightings]()}
}

func connKey(id int) string            { return "c:" + strconv.Itoa(id) }
func headerKey(id decode.UUID) string  { return "h:" + id.String() }
func zeroOrText(id decode.UUID) string { return idText(id, true) }

// identity is the ID a telemetry request identifies its client by: the v0
// body's ID; for v1 the header ID, else the connection's (its first
// non-zero header ID, RULES.md §1 "established ID" for the telemetry
// rules).
func identity(cs *connState, ev *decode.Event, x headerID) (decode.UUID, bool) {
	m := &ev.Msg
	if m.Request.APIVersion == 0 {
		return m.Body.InstanceID, m.HasBody && m.Body.HasInstanceID
	}
	if x.tag {
		return x.id, true
	}
	return cs.firstID, cs.hasFirstID
}

// instanceOf is the client instance ID a request's connection goes by: the
// request's header ID, else the connection's first one.
func instanceOf(cs *connState, x headerID) (decode.UUID, bool) {
	if x.carries {
		return x.id, true
	}
	return cs.firstID, cs.hasFirstID
}

// sightingOf is a sighting at frame at on connection cs.
func sightingOf(cs *connState, x headerID, at Frame) sighting {
	inst, has := instanceOf(cs, x)
	return sighting{at: at, conn: cs.info.ID, inst: inst, hasInst: has}
}

// sight records that id was used or assigned at s. Reserved IDs are no
// one's.
func (t *telemetryState) sight(id decode.UUID, s sighting) {
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
func (t *telemetryState) endedFor(id decode.UUID, term, q sighting) bool {
	if _, shared := t.reissued.get(id); shared {
		return sameClient(term, q)
	}
	return true
}

// headerSeen records a request's header ID as used. The engine calls it
// for the request that set the connection's first ID and for requests
// carrying another one, so that a connection costs one look-up.
func (t *telemetryState) headerSeen(cs *connState, x headerID, at decode.Where) {
	if x.carries {
		t.sight(x.id, sighting{at: frameOf(at), conn: cs.info.ID, inst: x.id, hasInst: true})
	}
}

// request applies the telemetry rules to a GetTelemetrySubscriptions or
// PushTelemetry request and returns the findings that apply, in no order.
func (t *telemetryState) request(cs *connState, ev *decode.Event, x headerID) []cand {
	h := &ev.Msg.Request
	if h.APIKey != decode.KeyGetTelemetrySubscriptions && h.APIKey != decode.KeyPushTelemetry {
		return nil
	}
	m := &ev.Msg
	if h.APIVersion == 0 && !m.HasBody {
		return nil // the body did not decode: nothing to compare
	}
	at := frameOf(ev.At)
	ident, hasIdent := identity(cs, ev, x)
	if hasIdent {
		t.sight(ident, sightingOf(cs, x, at))
	}
	var out []cand
	if h.APIVersion == 0 && x.carries && m.Body.InstanceID != x.id {
		out = append(out, cand{rule: TelemetryBodyMismatch, expected: "body ID " + x.id.String() + " (the header's)",
			seen: "body ID " + zeroOrText(m.Body.InstanceID)})
	}
	if h.APIVersion >= 1 && !x.carries && !cs.hasFirstID {
		out = append(out, cand{rule: TelemetryIDMissing, expected: "a header instance ID", seen: "no ID in the header or on the connection"})
	}
	if g, ok := t.gotFor(cs, x); ok && hasIdent && ident != g.id {
		out = append(out, cand{rule: TelemetryIDNotReused, expected: g.id.String(), seen: zeroOrText(ident), related: []Frame{g.at}})
	}
	if h.APIKey == decode.KeyPushTelemetry && hasIdent {
		if ident.IsReserved() {
			out = append(out, cand{rule: TelemetryPushReservedID, expected: "a non-reserved ID", seen: zeroOrText(ident)})
		} else {
			if f, ok := t.terminated.get(ident); ok && t.endedFor(ident, f, sightingOf(cs, x, at)) {
				out = append(out, cand{rule: TelemetryPushAfterTerminate, expected: "no push after the terminating one",
					seen: "push for " + ident.String(), related: []Frame{f.at}})
			}
			if _, ok := t.known.get(ident); !ok {
				out = append(out, cand{rule: TelemetryPushUnknownID, expected: "an ID a GetTelemetrySubscriptions exchange produced",
					seen: ident.String()})
			}
			if m.Body.Terminating {
				if _, ok := t.terminated.get(ident); !ok {
					t.terminated.set(ident, sightingOf(cs, x, at))
				}
			}
		}
	}
	if h.APIKey == decode.KeyGetTelemetrySubscriptions {
		cs.teleAsked.set(h.CorrelationID, teleRequest{h: x, body: m.Body.InstanceID,
			hasBody: h.APIVersion == 0, ident: ident, hasIdent: hasIdent, at: at})
	}
	return out
}

// gotFor returns the telemetry ID the client instance got: on this
// connection, or on one linked to it by the same header ID.
func (t *telemetryState) gotFor(cs *connState, x headerID) (gotID, bool) {
	if g, ok := t.got.get(connKey(cs.info.ID)); ok {
		return g, true
	}
	if id, has := instanceOf(cs, x); has {
		return t.got.get(headerKey(id))
	}
	return gotID{}, false
}

// response applies the rules about the broker's answer to a
// GetTelemetrySubscriptions and records the ID the client got. An ID it
// assigns or accepts is live again: a push for it is no longer one after a
// terminating push (the broker re-issued it).
func (t *telemetryState) response(cs *connState, ev *decode.Event) []cand {
	m := &ev.Msg
	if m.Request.APIKey != decode.KeyGetTelemetrySubscriptions {
		return nil
	}
	req, ok := cs.teleAsked.take(m.Request.CorrelationID)
	if !ok || !m.HasErrorCode || m.ErrorCode != 0 {
		return nil
	}
	var out []cand
	b := m.Body.InstanceID
	var got decode.UUID
	if req.hasBody {
		r := req.body
		switch {
		case r.IsZero() && !req.h.carries && b.IsZero():
			out = append(out, cand{rule: BrokerIDNotAssigned, expected: "a new client instance ID", seen: "ZERO",
				related: []Frame{req.at}})
		case !r.IsZero() && !b.IsZero() && b != r:
			out = append(out, cand{rule: BrokerIDConflict, expected: r.String() + " (echoed) or ZERO", seen: b.String(),
				related: []Frame{req.at}})
		case r.IsZero() && !req.h.carries && !b.IsReserved():
			if v, ok := t.seen.get(b); ok {
				if first, ok := v.elsewhere(sightingOf(cs, req.h, frameOf(ev.At))); ok {
					out = append(out, cand{rule: BrokerIDReissued, expected: "a new client instance ID",
						seen: b.String() + " (already seen on another connection)", related: []Frame{first, req.at}})
					t.reissued.set(b, frameOf(ev.At))
				}
			}
		}
		if !b.IsZero() {
			t.sight(b, sightingOf(cs, req.h, frameOf(ev.At)))
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
		at := frameOf(ev.At)
		t.known.set(got, at)
		t.terminated.delete(got)
		t.got.set(connKey(cs.info.ID), gotID{got, at})
		if req.h.carries {
			t.got.set(headerKey(req.h.id), gotID{got, at})
		} else if cs.hasFirstID {
			t.got.set(headerKey(cs.firstID), gotID{got, at})
		}
	}
	return out
}

// forget drops what was kept for a closed connection (what is kept per
// request goes with its connState).
func (t *telemetryState) forget(conn int) {
	t.got.delete(connKey(conn))
}
