package rules

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// The header rules (RULES.md §3).
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
	{ID: HeaderIDChanged, Severity: Error, Section: "3", Place: 1, Profile: "both", Precedence: 3, Verdict: true,
		Summary: "a later request carries a non-zero instance ID different from the connection's established one",
		Detail:  "Every request of a connection that carries a header client instance ID (tag 0) must carry the ID the connection established with its first ID-relevant request (seed: the first flexible-header request; accepted: the first header-v3 request; mid-stream: the first non-zero ID seen). Evidence: the establishing frame, the offending frame, both IDs, the broker's answer.",
		Example: "hdr-seed-changed"},
	{ID: HeaderIDDropped, Severity: Error, Section: "3", Place: 2, Profile: "seed", Precedence: 4, Verdict: true,
		Summary: "the first flexible-header request carried ID X; a later one carries none (or ZERO)",
		Detail:  "Under the seed profile a connection whose first flexible-header request carried an ID must carry it on every later flexible-header request; header-v1 requests are exempt. An explicit ZERO counts as absent.",
		Example: "hdr-seed-dropped"},
	{ID: HeaderIDLate, Severity: Error, Section: "3", Place: 3, Profile: "seed", Precedence: 5, Verdict: true,
		Summary: "the first flexible-header request carried no ID; a later one carries an ID",
		Detail:  "Under the seed profile a connection whose first flexible-header request carried no ID must never carry one. Never fires on a connection whose start the capture missed.",
		Example: "hdr-seed-late"},
	{ID: HeaderIDMissingFirst, Severity: Error, Section: "3", Place: 4, Profile: "accepted", Precedence: 2, Verdict: true,
		Summary: "the first header-v3 request of the connection carries no ID",
		Detail:  "Under the accepted profile the first request that uses request header v3 must carry a non-reserved client instance ID. Never fires on a connection whose start the capture missed.",
		Example: "hdr-acc-missing-first"},
	{ID: HeaderIDReserved, Severity: Error, Section: "3", Place: 5, Profile: "both", Precedence: 1, Verdict: true,
		Summary: "a header carries ONE, or (accepted) an explicit ZERO tag",
		Detail:  "ZERO (all zero) and ONE (…01) are reserved UUIDs. A header instance ID of ONE is always wrong; under the accepted profile an explicit ZERO tag is rejected too (under seed it means absent).",
		Example: "hdr-acc-reserved-zero"},
	{ID: HeaderClientIDRepeated, Severity: Warning, Section: "3", Place: 6, Profile: "accepted", Precedence: 12,
		Summary: "a later header-v3 request carries a non-null ClientId",
		Detail:  "Under the accepted profile later header-v3 requests send a null ClientId; the KIP text moved between \"ignored\" and \"rejected\", hence a warning.",
		Example: "hdr-acc-client-id-repeated"},
	{ID: HeaderIDRepeated, Severity: Info, Section: "3", Place: 7, Profile: "accepted", Precedence: 13,
		Summary: "a later header-v3 request repeats the same ID",
		Detail:  "Under the accepted profile later header-v3 requests omit the ID; repeating it is allowed or not depending on an unsettled upstream discussion.",
		Example: "hdr-acc-id-repeated"},
}

// headerChecker applies the header rules under the profiles of RULES.md
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

// decideProfile applies auto selection (RULES.md §2) once the request
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

// seedJudge applies the seed profile's header rules (RULES.md §2–3):
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
// absence (RULES.md §3 evidence); none on a mid-stream connection that
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
