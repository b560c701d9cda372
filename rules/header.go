package rules

import (
	"github.com/kidscope/kidscope/decode"
)

// cand is a finding a rule would make, before precedence picks one.
type cand struct {
	rule     string
	expected string
	seen     string
	related  []Frame
}

// idText is how expected and seen IDs read in findings.
func idText(id decode.UUID, present bool) string {
	switch {
	case !present:
		return "no ID"
	case id.IsZero():
		return "ZERO"
	case id.IsOne():
		return "ONE"
	}
	return id.String()
}

// headerID is what a request header says of the instance ID.
type headerID struct {
	tag     bool        // tag 0 present (size 16)
	id      decode.UUID // its value
	carries bool        // a non-zero value (ONE counts)
}

func headerIDOf(h *decode.RequestHeader) headerID {
	return headerID{tag: h.HasInstanceID, id: h.InstanceID, carries: h.HasInstanceID && !h.InstanceID.IsZero()}
}

func (x headerID) text() string { return idText(x.id, x.tag) }

func frameOf(w decode.Where) Frame { return Frame{File: w.File, Frame: w.Frame} }

// seedJudge applies the seed profile's header rules (RULES.md §2–3):
// every flexible-header request must repeat what the first one did.
type seedJudge struct {
	midStream bool
	started   bool
	firstHas  bool // the first flexible-header request carried an ID
	firstAt   Frame
	est       decode.UUID
	hasEst    bool
	estAt     Frame
}

func (j *seedJudge) judge(hv int, x headerID, at decode.Where) []cand {
	if hv < 2 {
		return nil // header v0/v1 requests are exempt
	}
	var out []cand
	if x.tag && x.id.IsOne() {
		out = append(out, cand{rule: HeaderIDReserved, expected: "a non-reserved ID", seen: "ONE"})
	}
	if !j.started {
		j.started, j.firstAt = true, frameOf(at)
		j.firstHas = x.carries
		if x.carries {
			j.est, j.hasEst, j.estAt = x.id, true, frameOf(at)
		}
		return out
	}
	switch {
	case j.hasEst && x.carries && x.id != j.est:
		out = append(out, cand{rule: HeaderIDChanged, expected: j.est.String(), seen: x.text()})
	case j.hasEst && !x.carries:
		out = append(out, cand{rule: HeaderIDDropped, expected: j.est.String(), seen: x.text()})
	case !j.hasEst && x.carries && j.midStream:
		// A mid-stream connection's established ID is the first one shown.
		j.est, j.hasEst, j.estAt = x.id, true, frameOf(at)
	case !j.hasEst && x.carries && !j.firstHas:
		out = append(out, cand{rule: HeaderIDLate, expected: "no ID (the first flexible-header request carried none)", seen: x.text()})
	}
	return withEstablished(out, j.establishedAt(), at)
}

// establishedAt is the frame that established the connection's ID or its
// absence (RULES.md §3 evidence).
func (j *seedJudge) establishedAt() Frame {
	if j.hasEst {
		return j.estAt
	}
	if j.midStream {
		return Frame{}
	}
	return j.firstAt
}

// withEstablished adds the establishing frame to header findings, unless
// it is the request's own.
func withEstablished(out []cand, est Frame, at decode.Where) []cand {
	if est.Frame == 0 || est == frameOf(at) {
		return out
	}
	for i := range out {
		out[i].related = append([]Frame{est}, out[i].related...)
	}
	return out
}

// acceptedJudge applies the accepted profile's header rules: the first
// header-v3 request carries a non-reserved ID, later ones omit it and send
// a null ClientId.
type acceptedJudge struct {
	midStream bool
	started   bool
	firstAt   Frame
	est       decode.UUID
	hasEst    bool
	estAt     Frame
}

// usesV3 reports whether a request uses header v3: its API version is
// mapped to it, or it is a flexible-header request that carries tag 0 (v3
// and v2 are the same bytes, so the tag shows the client used v3).
func usesV3(hv int, x headerID) bool {
	return hv == 3 || hv == 2 && x.tag
}

func (j *acceptedJudge) judge(hv int, x headerID, h *decode.RequestHeader, at decode.Where) []cand {
	if !usesV3(hv, x) || h.APIKey == decode.KeySaslHandshake {
		return nil
	}
	var out []cand
	if x.tag && x.id.IsReserved() {
		out = append(out, cand{rule: HeaderIDReserved, expected: "a non-reserved ID", seen: x.text()})
	}
	if !j.started {
		j.started, j.firstAt = true, frameOf(at)
		switch {
		case x.carries && !x.id.IsOne():
			j.est, j.hasEst, j.estAt = x.id, true, frameOf(at)
		case !x.tag && !j.midStream:
			out = append(out, cand{rule: HeaderIDMissingFirst, expected: "a non-reserved ID in the first header-v3 request", seen: "no ID"})
		}
		return out
	}
	switch {
	case x.carries && j.hasEst && x.id != j.est:
		out = append(out, cand{rule: HeaderIDChanged, expected: j.est.String(), seen: x.text()})
	case x.carries && !j.hasEst && j.midStream:
		j.est, j.hasEst, j.estAt = x.id, true, frameOf(at)
	}
	if !h.ClientIDNull {
		out = append(out, cand{rule: HeaderClientIDRepeated, expected: "a null ClientId", seen: "ClientId " + quote(h.ClientID)})
	}
	if x.carries && j.hasEst && x.id == j.est && frameOf(at) != j.estAt {
		out = append(out, cand{rule: HeaderIDRepeated, expected: "no ID (already established)", seen: x.text()})
	}
	est := j.firstAt
	if j.hasEst {
		est = j.estAt
	} else if j.midStream {
		est = Frame{}
	}
	return withEstablished(out, est, at)
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
		return []cand{{rule: HeaderIDReserved, expected: "a non-reserved ID", seen: "ZERO"}}
	case !x.tag && !j.midStream:
		return []cand{{rule: HeaderIDMissingFirst, expected: "a non-reserved ID in the first header-v3 request", seen: "no ID"}}
	}
	return nil
}

func quote(s string) string { return "\"" + s + "\"" }
