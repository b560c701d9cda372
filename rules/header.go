package rules

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// The header rules (docs/design/rules.md §3).
const (
	HeaderIDChanged        = "header-id-changed"
	HeaderIDDropped        = "header-id-dropped"
	HeaderIDLate           = "header-id-late"
	HeaderIDMissingFirst   = "header-id-missing-first"
	HeaderIDReserved       = "header-id-reserved"
	HeaderClientIDRepeated = "header-client-id-repeated"
	HeaderIDRepeated       = "header-id-repeated"
)

var headerRules = []Rule{
	{ID: HeaderIDChanged, Severity: Error, Group: GroupHeader, Profile: "both", Verdict: true,
		Summary: "a later request carries a non-zero instance ID different from the connection's established one",
		Detail: "A request carries a header client instance ID (tag 0, not ZERO) that differs from the connection's established ID: " +
			"the one its first ID-relevant request set (seed: the first flexible-header request; accepted: the first v3-header request) " +
			"or, on a connection the capture joined mid-stream, the first non-zero ID seen on it. " +
			"A changed ID on a telemetry request is this finding, not also telemetry-id-not-reused. " +
			"Evidence: the frame that established the ID, the offending frame, both IDs and the broker's answer.",
		Why: "A broker that enforces KIP-1313 keeps each connection's ID and rejects the request with INVALID_REQUEST, " +
			"or closes the connection on it: the client's produce, fetch, commit or metadata call fails and it reconnects or retries. " +
			"A broker that does not know KIP-1313 accepts it, but the ID no longer names one client instance: " +
			"logs, telemetry and traces correlated by instance ID show the connection's requests as two clients.",
		Fix: "Client: create the instance ID once per client instance, before its first connection, and send that same value in every request header on every connection. " +
			"Look for a library that makes a new ID on reconnect or retry, or two client objects with different IDs sharing one connection. " +
			"Broker: nothing to change: rejecting the request is what KIP-1313 asks.",
		Example: "hdr-seed-changed"},
	{ID: HeaderIDDropped, Severity: Error, Group: GroupHeader, Profile: "seed", Verdict: true,
		Summary: "the first flexible-header request carried ID X; a later one carries none (or ZERO)",
		Detail: "Under the seed profile, the connection's first flexible-header request carried ID X and a later flexible-header request carries no tag 0, " +
			"or an explicit ZERO (the seed treats ZERO as no ID). Requests with a v1 header (SaslHandshake, OffsetDelete v0, every non-flexible version) are exempt.",
		Why: "A broker that enforces KIP-1313 rejects the request with INVALID_REQUEST: the client sees a failed call, such as a JoinGroup or commit that errors out. " +
			"A broker that does not know KIP-1313 accepts it, so the client works today and breaks when the brokers are upgraded; " +
			"meanwhile its requests without the ID cannot be traced to the client instance.",
		Fix: "Client: once the first flexible-header request of a connection carried the ID, put it in every later one, " +
			"including requests made on paths that build their own header (group rejoins, admin calls, retries). Broker: nothing to change.",
		Example: "hdr-seed-dropped"},
	{ID: HeaderIDLate, Severity: Error, Group: GroupHeader, Profile: "seed", Verdict: true,
		Summary: "the first flexible-header request carried no ID; a later one carries an ID",
		Detail: "Under the seed profile, the connection's first flexible-header request (usually ApiVersions v3) carried no ID and a later flexible-header request carries one; " +
			"each later request with an ID is a finding. A connection judged seed whose requests before its first ID carried none gets it at that first ID. " +
			"Never fires on a connection the capture joined mid-stream: without the true first request there is no telling.",
		Why: "Under the seed rules the first flexible-header request decides whether the connection carries an ID at all. " +
			"A broker that enforces KIP-1313 rejects every later request that carries one with INVALID_REQUEST, " +
			"so a client that adds the ID after its handshake fails on its first real call (Metadata, Produce, JoinGroup). " +
			"The usual cause is a client that sends ApiVersions before it has made its ID.",
		Fix: "Client: create the instance ID before opening the first connection and send it from the very first flexible-header request (ApiVersions v3 and later) on; " +
			"or send it on no request of that connection. Broker: nothing to change.",
		Example: "hdr-seed-late"},
	{ID: HeaderIDMissingFirst, Severity: Error, Group: GroupHeader, Profile: "accepted", Verdict: true,
		Summary: "the first header-v3 request of the connection carries no ID",
		Detail: "Under the accepted profile, the first request of the connection that uses request header v3 carries no client instance ID. " +
			"Requests with v1 or v2 headers before it, such as ApiVersions, are not judged. " +
			"It also fires for an old client (one that sends no ID) at its first request whose API version is mapped to header v3, which is then judged as accepted. " +
			"Never fires on a connection the capture joined mid-stream.",
		Why: "In the accepted KIP-1313 the first v3-header request is where a client names itself for the whole connection: later ones omit the ID. " +
			"Without it the broker cannot attribute any of the connection's requests to a client instance, and telemetry v1, whose body has no ID, identifies nobody. " +
			"A broker that implements the accepted KIP rejects the request with INVALID_REQUEST.",
		Fix: "Client: send a non-reserved client instance ID, made once per client instance, and the ClientId in the first v3-header request of every connection. " +
			"A client that does not support KIP-1313 should use API versions mapped to header v2 (GetTelemetrySubscriptions v0, PushTelemetry v0). Broker: nothing to change.",
		Example: "hdr-acc-missing-first"},
	{ID: HeaderIDReserved, Severity: Error, Group: GroupHeader, Profile: "both", Verdict: true,
		Summary: "a header carries ONE, or (accepted) an explicit ZERO tag",
		Detail: "A request header's tag 0 is ONE, under either profile, or, under the accepted profile, an explicit ZERO. " +
			"Under the seed profile an explicit ZERO means no ID, and header-id-dropped or header-id-late judge it instead. " +
			"First in precedence: a request with a reserved ID gets this finding and no other, whose message names the others that also apply. " +
			"On a connection whose profile the capture never shows it is the only header rule that applies.",
		Why: "A reserved ID names no client: every client with the same bug sends it, so whatever the broker attributes by instance ID (logs, telemetry, per-client troubleshooting) merges unrelated clients. " +
			"A broker that enforces KIP-1313 rejects the request with INVALID_REQUEST. ONE is usually an uninitialised or placeholder value leaking out of a client library.",
		Fix: "Client: make the ID a random version-4 UUID and make a new one if it comes out as ZERO or ONE (Kafka's Uuid.randomUuid() does); " +
			"when there is no ID, leave tag 0 out rather than sending ZERO. Broker: nothing to change.",
		Example: "hdr-acc-reserved-zero"},
	{ID: HeaderClientIDRepeated, Severity: Warning, Group: GroupHeader, Profile: "accepted",
		Summary: "a later header-v3 request carries a non-null ClientId",
		Detail: "Under the accepted profile, a v3-header request after the connection's first one carries a non-null ClientId. " +
			"The accepted KIP has the client send its ClientId once, with its ID, in the first v3-header request, and a null ClientId after it. " +
			"A warning, not an error: the KIP text moved between \"ignored\" and \"rejected\" for a repeated ClientId.",
		Why: "Depending on the final text a broker either ignores the repeated ClientId or rejects the request with INVALID_REQUEST: " +
			"a client that repeats it works against today's brokers and may fail against a later release.",
		Fix: "Client: after the first v3-header request of a connection, send a null ClientId in v3 headers; the broker keeps the one it was given. " +
			"Broker: follow the final KIP text on whether to reject it.",
		Example: "hdr-acc-client-id-repeated"},
	{ID: HeaderIDRepeated, Severity: Info, Group: GroupHeader, Profile: "accepted",
		Summary: "a later header-v3 request repeats the same ID",
		Detail: "Under the accepted profile, a v3-header request after the connection's first one repeats the connection's ID in tag 0 instead of omitting it. " +
			"Info: whether a repeat is allowed is unsettled upstream. A different ID is header-id-changed instead.",
		Why:     "Nothing breaks today: the repeat costs 18 bytes per request (the tag, its length and the 16-byte UUID). If upstream settles that repeats are not allowed, brokers will reject these requests.",
		Fix:     "Client: leave tag 0 out of v3 headers after the connection's first. Broker: nothing to change.",
		Example: "hdr-acc-id-repeated"},
}

// headerChecker applies the header rules under the profiles of docs/design/rules.md
// §2: a forced one, or each connection's own (auto).
type headerChecker struct {
	choice ProfileChoice
}

func (*headerChecker) rules() []Rule { return headerRules }

func (h *headerChecker) open(c *conn) connChecker {
	hc := &headerConn{choice: h.choice}
	hc.seed.midStream, hc.accepted.midStream, hc.oldClient.midStream = c.info.MidStream[kafka.ToBroker], c.info.MidStream[kafka.ToBroker], c.info.MidStream[kafka.ToBroker]
	switch h.choice {
	case ForceSeed:
		hc.profile, hc.decided = ProfileSeed, true
	case ForceAccepted:
		hc.profile, hc.decided = ProfileAccepted, true
	}
	return hc
}

// The ways headerConn judges a request until the profile is known.
const (
	judgeSeed uint8 = iota
	judgeAccepted
	judgeOldClient
)

// headerConn judges each request of a connection under every profile, and
// chooses once the traffic shows which one the client follows.
type headerConn struct {
	passive
	choice    ProfileChoice
	seed      seedJudge
	accepted  acceptedJudge
	oldClient oldClientJudge
	profile   Profile
	decided   bool
	// Auto selection: F is the first request carrying a non-zero header
	// ID; the next flexible-header request after it decides.
	sawF bool
}

func (hc *headerConn) request(_ *conn, q *request, _ *decode.Event) []cand {
	hv, x, h := q.h.HeaderVersion, q.x, &q.h
	out := judged(nil, hc.seed.judge(hv, x, q.at), judgeSeed)
	out = judged(out, hc.accepted.judge(hv, x, h, q.at), judgeAccepted)
	out = judged(out, hc.oldClient.judge(hv, x), judgeOldClient)
	hc.decideProfile(hv, x, h)
	return out
}

func judged(out, cs []cand, judge uint8) []cand {
	for _, c := range cs {
		c.judge = judge
		out = append(out, c)
	}
	return out
}

// decideProfile applies auto selection (docs/design/rules.md §2) once the request
// after F shows what the client does.
func (hc *headerConn) decideProfile(hv int, x headerID, h *decode.RequestHeader) {
	if hc.decided {
		return
	}
	if !hc.sawF {
		hc.sawF = x.carries
		return
	}
	if hv < 2 {
		return
	}
	hc.decided = true
	if !x.carries && h.ClientIDNull {
		hc.profile = ProfileAccepted
	} else {
		hc.profile = ProfileSeed
	}
}

func (hc *headerConn) ready() bool { return hc.decided }

// choose keeps the findings of the profile the connection is judged by.
func (hc *headerConn) choose(cands []cand) []cand {
	var judge uint8
	switch {
	case hc.decided && hc.profile == ProfileSeed:
		judge = judgeSeed
	case hc.decided && hc.profile == ProfileAccepted:
		judge = judgeAccepted
	case !hc.sawF && hc.choice == ProfileAuto:
		judge = judgeOldClient
	default:
		// Undetermined: only a reserved ID can be judged.
		for _, c := range cands {
			if c.rule == HeaderIDReserved && c.seen.ID.IsOne() && c.judge != judgeOldClient {
				return []cand{c}
			}
		}
		return nil
	}
	var out []cand
	for _, c := range cands {
		if c.judge == judge {
			out = append(out, c)
		}
	}
	return out
}

// describe shows the profile the connection was judged by. An old client
// (auto, no non-zero header ID ever) is shown as accepted once its first
// header-v3 request was judged; an undetermined connection shows none.
func (hc *headerConn) describe(row *Connection) {
	row.Profile = hc.profile
	if !hc.decided && hc.choice == ProfileAuto && !hc.sawF && hc.oldClient.done {
		row.Profile = ProfileAccepted
	}
}

// seedJudge applies the seed profile's header rules (docs/design/rules.md §2–3):
// every flexible-header request must repeat what the first one did.
type seedJudge struct {
	midStream bool
	started   bool
	firstHas  bool // the first flexible-header request carried an ID
	firstAt   kafka.FrameRef
	est       kafka.UUID
	hasEst    bool
	estAt     kafka.FrameRef
}

func (j *seedJudge) judge(hv int, x headerID, at kafka.FrameRef) []cand {
	if hv < 2 {
		return nil // header v0/v1 requests are exempt
	}
	var out []cand
	if x.tag && x.id.IsOne() {
		out = append(out, cand{rule: HeaderIDReserved, expected: Value{Kind: ValueNonReserved}, seen: Value{Kind: ValueIDNamed, ID: x.id}})
	}
	if !j.started {
		j.started, j.firstAt = true, at
		j.firstHas = x.carries
		if x.carries {
			j.est, j.hasEst, j.estAt = x.id, true, at
		}
		return out
	}
	switch {
	case j.hasEst && x.carries && x.id != j.est:
		out = append(out, cand{rule: HeaderIDChanged, expected: Value{Kind: ValueID, ID: j.est}, seen: x.value()})
	case j.hasEst && !x.carries:
		out = append(out, cand{rule: HeaderIDDropped, expected: Value{Kind: ValueID, ID: j.est}, seen: x.value()})
	case !j.hasEst && x.carries && j.midStream:
		// A mid-stream connection's established ID is the first one shown.
		j.est, j.hasEst, j.estAt = x.id, true, at
	case !j.hasEst && x.carries && !j.firstHas:
		out = append(out, cand{rule: HeaderIDLate, expected: Value{Kind: ValueNoIDFirst}, seen: x.value()})
	}
	est, has := j.establishedAt()
	return withEstablished(out, est, has, at)
}

// establishedAt is the frame that established the connection's ID or its
// absence (docs/design/rules.md §3 evidence); none on a mid-stream connection that
// showed no ID yet.
func (j *seedJudge) establishedAt() (kafka.FrameRef, bool) {
	if j.hasEst {
		return j.estAt, true
	}
	return j.firstAt, !j.midStream
}

// withEstablished adds the establishing frame to header findings, unless
// it is the request's own.
func withEstablished(out []cand, est kafka.FrameRef, has bool, at kafka.FrameRef) []cand {
	if !has || est.Frame == 0 || est.Same(at) {
		return out
	}
	for i := range out {
		out[i].related = append([]Related{{est, RoleEstablished}}, out[i].related...)
	}
	return out
}

// acceptedJudge applies the accepted profile's header rules: the first
// header-v3 request carries a non-reserved ID, later ones omit it and send
// a null ClientId.
type acceptedJudge struct {
	midStream bool
	started   bool
	firstAt   kafka.FrameRef
	est       kafka.UUID
	hasEst    bool
	estAt     kafka.FrameRef
}

// usesV3 reports whether a request uses header v3: its API version is
// mapped to it, or it is a flexible-header request that carries tag 0 (v3
// and v2 are the same bytes, so the tag shows the client used v3).
func usesV3(hv int, x headerID) bool {
	return hv == 3 || hv == 2 && x.tag
}

func (j *acceptedJudge) judge(hv int, x headerID, h *decode.RequestHeader, at kafka.FrameRef) []cand {
	if !usesV3(hv, x) || h.APIKey == decode.KeySaslHandshake {
		return nil
	}
	var out []cand
	if x.tag && x.id.IsReserved() {
		out = append(out, cand{rule: HeaderIDReserved, expected: Value{Kind: ValueNonReserved}, seen: x.value()})
	}
	if !j.started {
		j.started, j.firstAt = true, at
		switch {
		case x.carries && !x.id.IsOne():
			j.est, j.hasEst, j.estAt = x.id, true, at
		case !x.tag && !j.midStream:
			out = append(out, cand{rule: HeaderIDMissingFirst, expected: Value{Kind: ValueFirstV3ID}, seen: Value{Kind: ValueNoID}})
		}
		return out
	}
	switch {
	case x.carries && j.hasEst && x.id != j.est:
		out = append(out, cand{rule: HeaderIDChanged, expected: Value{Kind: ValueID, ID: j.est}, seen: x.value()})
	case x.carries && !j.hasEst && j.midStream:
		j.est, j.hasEst, j.estAt = x.id, true, at
	}
	if !h.ClientIDNull {
		out = append(out, cand{rule: HeaderClientIDRepeated, expected: Value{Kind: ValueNullClientID}, seen: Value{Kind: ValueClientID, Text: kept(h.ClientID)}})
	}
	if x.carries && j.hasEst && x.id == j.est && !at.Same(j.estAt) {
		out = append(out, cand{rule: HeaderIDRepeated, expected: Value{Kind: ValueNoIDRepeated}, seen: x.value()})
	}
	if j.hasEst {
		return withEstablished(out, j.estAt, true, at)
	}
	return withEstablished(out, j.firstAt, !j.midStream, at)
}

// oldClientJudge covers auto mode's "no F" case: the first request mapped
// to header v3 by its API version is judged under accepted.
type oldClientJudge struct {
	midStream bool
	done      bool
}

func (j *oldClientJudge) judge(hv int, x headerID) []cand {
	if hv != 3 || j.done {
		return nil
	}
	j.done = true
	switch {
	case x.tag && x.id.IsZero():
		return []cand{{rule: HeaderIDReserved, expected: Value{Kind: ValueNonReserved}, seen: Value{Kind: ValueIDNamed, ID: x.id}}}
	case !x.tag && !j.midStream:
		return []cand{{rule: HeaderIDMissingFirst, expected: Value{Kind: ValueFirstV3ID}, seen: Value{Kind: ValueNoID}}}
	}
	return nil
}
