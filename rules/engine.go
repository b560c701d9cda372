package rules

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/kidscope/kidscope/decode"
	"github.com/twmb/franz-go/pkg/kerr"
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
	// (default 50 000); every finding is still counted by severity.
	MaxFindings int
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
	return o
}

// ConnInfo identifies a connection when it opens.
type ConnInfo struct {
	ID        int
	Key       ConnKey
	MidStream bool // the capture missed the start of the client's requests
	First     decode.Where
}

// CloseInfo says how a connection ended.
type CloseInfo struct {
	// ByBroker: the broker closed it (FIN or RST); At is where.
	ByBroker bool
	At       decode.Where
	Counters decode.Counters
	NotKafka string
	ClientID string
}

// Engine applies the rules of RULES.md to the events of many connections,
// fed in capture order. It is pure: no I/O, clocks or goroutines.
type Engine struct {
	opt      Options
	conns    map[int]*connState
	findings []Finding
	out      []Finding // findings completed by the current call

	tele      telemetryState
	groups    groupState
	instances map[decode.UUID]*instanceState
	seq       int64 // requests carrying an instance ID, for eviction order
	splits    map[splitKey]bool
	clients   map[clientKey]map[decode.UUID]*idUse // open connections by client
	brokers   map[netip.AddrPort]*brokerState
	closed    []Connection
	// What the caps left out, and every finding's severity.
	droppedConns, droppedFindings, droppedInstances int64
	bySeverity                                      [3]int64
}

// New returns an engine.
func New(opt Options) *Engine {
	return &Engine{
		opt:       opt.withDefaults(),
		conns:     map[int]*connState{},
		tele:      newTelemetryState(),
		groups:    newGroupState(),
		instances: map[decode.UUID]*instanceState{},
		splits:    map[splitKey]bool{},
		clients:   map[clientKey]map[decode.UUID]*idUse{},
		brokers:   map[netip.AddrPort]*brokerState{},
	}
}

// connState is what the engine keeps of an open connection.
type connState struct {
	info      ConnInfo
	seed      seedJudge
	accepted  acceptedJudge
	oldClient oldClientJudge
	profile   Profile
	decided   bool
	// Auto selection: F is the first request carrying a non-zero header
	// ID; the next flexible-header request after it decides.
	sawF bool
	// firstID is the first non-zero header ID the connection showed,
	// which identifies the client to the telemetry rules.
	firstID    decode.UUID
	hasFirstID bool
	clientID   string
	// undecided are requests with possible findings, waiting for the
	// profile or their answer.
	undecided []*reqRec
	lastReq   *reqRec    // the last request the broker received, when it has candidates
	indexed   *clientKey // where indexClient put it
	gapSide   [2]bool    // a gap not yet reported, per side
	gaps      int        // gaps on either side, for the connections table
	afterGap  bool
	requests  int64
	responses int64
	last      decode.Where
	sawKafka  bool
	// Requests awaiting their answer, by correlation ID, and the member
	// ID last used per group. Short lists (a connection has a request or
	// two in flight, and one group): a map each would cost 100,000
	// connections more than all their other state.
	joins     pairs[int32, joinRequest]
	teleAsked pairs[int32, teleRequest]
	members   pairs[string, string]
}

// pairs is a short list of keys and values, searched from end to end. At
// maxAsked entries it starts anew: requests never answered are let go.
type pairs[K comparable, V any] []pair[K, V]

type pair[K comparable, V any] struct {
	k K
	v V
}

func (p pairs[K, V]) index(k K) int {
	return slices.IndexFunc(p, func(e pair[K, V]) bool { return e.k == k })
}

func (p pairs[K, V]) get(k K) (V, bool) {
	if i := p.index(k); i >= 0 {
		return p[i].v, true
	}
	var zero V
	return zero, false
}

func (p *pairs[K, V]) set(k K, v V) {
	if i := p.index(k); i >= 0 {
		(*p)[i].v = v
		return
	}
	if len(*p) >= maxAsked {
		*p = nil
	}
	*p = append(*p, pair[K, V]{k, v})
}

// take returns and removes k's value.
func (p *pairs[K, V]) take(k K) (V, bool) {
	i := p.index(k)
	if i < 0 {
		var zero V
		return zero, false
	}
	v, last := (*p)[i].v, len(*p)-1
	(*p)[i] = (*p)[last]
	(*p)[last] = pair[K, V]{}
	*p = (*p)[:last]
	if last == 0 {
		*p = nil // an empty list keeps no memory
	}
	return v, true
}

// maxAsked caps the requests awaiting an answer, and the groups, that a
// connection's lists keep.
const maxAsked = 64

// reqRec is one request with the findings it may get.
type reqRec struct {
	at       decode.Where
	h        decode.RequestHeader
	seed     []cand // header findings under seed
	accepted []cand // under accepted
	old      []cand // under the old-client case of auto
	other    []cand // telemetry findings, profile-independent
	extra    []cand // group and instance findings, outside precedence
	afterGap bool
	answered bool
	respAt   decode.Where
	ans      decode.Answer
	// noResponse: the request gets no response by design (acks = 0).
	noResponse bool
}

func (r *reqRec) hasCandidates() bool {
	return len(r.seed)+len(r.accepted)+len(r.old)+len(r.other)+len(r.extra) > 0
}

// Open starts a connection.
func (e *Engine) Open(c ConnInfo) []Finding {
	e.out = e.out[:0]
	cs := &connState{info: c, last: c.First}
	cs.seed.midStream, cs.accepted.midStream, cs.oldClient.midStream = c.MidStream, c.MidStream, c.MidStream
	switch e.opt.Profile {
	case ForceSeed:
		cs.profile, cs.decided = ProfileSeed, true
	case ForceAccepted:
		cs.profile, cs.decided = ProfileAccepted, true
	}
	e.conns[c.ID] = cs
	e.broker(c.Key.Broker).connections++
	return e.out
}

// Gap tells the engine that bytes of a connection's side were lost.
func (e *Engine) Gap(connID int, side decode.Side, at decode.Where) {
	if cs := e.conns[connID]; cs != nil {
		cs.gapSide[side] = true
		cs.afterGap = true
		cs.gaps++
	}
}

// Event feeds one decoder event of a connection. It returns the findings
// it completed (valid until the next call).
func (e *Engine) Event(connID int, ev *decode.Event) []Finding {
	e.out = e.out[:0]
	cs := e.conns[connID]
	if cs == nil {
		return e.out
	}
	cs.last = ev.At
	switch ev.Kind {
	case decode.EventRequest:
		cs.sawKafka = true
		e.request(cs, ev)
	case decode.EventResponse:
		cs.sawKafka = true
		e.response(cs, ev)
	case decode.EventResync:
		if cs.gapSide[ev.Side] {
			cs.gapSide[ev.Side] = false
			e.emit(cs, Finding{Rule: StreamGap, At: ev.At, Message: fmt.Sprintf(
				"bytes of the %ss were lost; the Kafka framing was found again %d bytes later", ev.Side, ev.Skipped)})
		}
	case decode.EventNotKafka:
		e.emit(cs, Finding{Rule: StreamNotKafka, At: ev.At, Seen: ev.Reason,
			Message: fmt.Sprintf("the bytes on this Kafka port are not Kafka: %s", ev.Reason)})
	}
	return e.out
}

func (e *Engine) request(cs *connState, ev *decode.Event) {
	h := &ev.Msg.Request
	cs.requests++
	if !h.ClientIDNull && h.HeaderVersion > 0 {
		cs.clientID = h.ClientID
	}
	x := headerIDOf(h)
	r := &reqRec{at: ev.At, h: *h, afterGap: cs.afterGap, noResponse: ev.Msg.NoResponse}
	hv := h.HeaderVersion
	r.seed = cs.seed.judge(hv, x, ev.At)
	r.accepted = cs.accepted.judge(hv, x, h, ev.At)
	r.old = cs.oldClient.judge(hv, x)
	newFirst := x.carries && !cs.hasFirstID
	if newFirst {
		cs.firstID, cs.hasFirstID = x.id, true
	}
	if newFirst || x.carries && x.id != cs.firstID {
		e.tele.headerSeen(cs, x, ev.At)
	}
	e.decideProfile(cs, hv, x, h)
	r.other = e.tele.request(cs, ev, x)
	r.extra = append(r.extra, e.groups.request(cs, ev, x)...)
	r.extra = append(r.extra, e.instanceSeen(cs, ev, x)...)
	e.indexClient(cs)
	// Only a request with possible findings is looked at again as the last
	// one (brokerVerdict); any other is dropped here, and with it the
	// memory of each idle connection's last request.
	cs.lastReq = nil
	if r.hasCandidates() {
		cs.lastReq = r
		cs.undecided = append(cs.undecided, r)
	}
	e.settle(cs, false)
}

// decideProfile applies auto selection (RULES.md §2) once the request
// after F shows what the client does.
func (e *Engine) decideProfile(cs *connState, hv int, x headerID, h *decode.RequestHeader) {
	if cs.decided {
		return
	}
	if !cs.sawF {
		cs.sawF = x.carries
		return
	}
	if hv < 2 {
		return
	}
	cs.decided = true
	if !x.carries && h.ClientIDNull {
		cs.profile = ProfileAccepted
	} else {
		cs.profile = ProfileSeed
	}
}

func (e *Engine) response(cs *connState, ev *decode.Event) {
	cs.responses++
	m := &ev.Msg
	if !m.Matched {
		return
	}
	var r *reqRec
	for _, u := range cs.undecided {
		if !u.answered && u.h.CorrelationID == m.Response.CorrelationID {
			r = u
			break
		}
	}
	if r != nil {
		r.answered, r.respAt, r.ans = true, ev.At, m.Answer
	}
	if m.Request.APIKey == decode.KeyApiVersions && m.HasBody && m.HasErrorCode && m.ErrorCode == 0 {
		e.broker(cs.info.Key.Broker).offersTelemetry(m.Body.APIVersions)
	}
	for _, c := range e.tele.response(cs, ev) {
		e.emitCand(cs, c, ev.At, &m.Request, m.Answer, true, nil)
	}
	for _, c := range e.groups.response(cs, ev) {
		e.emitCand(cs, c, ev.At, &m.Request, m.Answer, true, nil)
	}
	if enforces, _ := judgeAnswer(m.Answer); r == nil && enforces {
		// A request with no possible finding, rejected.
		e.emitCand(cs, cand{rule: BrokerRejectedValid, expected: "the request accepted", seen: "INVALID_REQUEST",
			related: []Frame{frameOf(m.RequestAt)}}, ev.At, &m.Request, m.Answer, true, nil)
	}
	e.settle(cs, false)
}

// judgeAnswer says whether a broker's answer rejected a request as
// INVALID_REQUEST or processed it (RULES.md §5): by its top-level ErrorCode
// where the API and version has one, else by its nested codes (an Apache
// broker that rejects a request puts the same code in every item). Any
// other top-level code, an answer with no items, and an answer whose body
// was not read tell neither.
func judgeAnswer(a decode.Answer) (rejected, processed bool) {
	if a.HasErrorCode {
		return a.ErrorCode == kerr.InvalidRequest.Code, a.ErrorCode == 0
	}
	if len(a.Nested) == 0 {
		return false, false
	}
	if slices.Contains(a.Nested, kerr.InvalidRequest.Code) {
		return len(a.Nested) == 1, false
	}
	return false, true
}

// ClosedByBroker is the broker answer of a request after which the broker
// closed the connection without answering.
const ClosedByBroker = "connection closed by the broker"

// Close ends a connection: what still waits is judged with what the
// capture holds.
func (e *Engine) Close(connID int, ci CloseInfo) []Finding {
	e.out = e.out[:0]
	cs := e.conns[connID]
	if cs == nil {
		return e.out
	}
	if ci.ClientID != "" {
		cs.clientID = ci.ClientID
	}
	// An old client (auto, no non-zero header ID ever) is shown as accepted
	// once its first header-v3 request was judged; an undetermined
	// connection shows no profile.
	// (An undecided connection's profile is still ProfileNone.)
	if !cs.decided && e.opt.Profile == ProfileAuto && !cs.sawF && cs.oldClient.done {
		cs.profile = ProfileAccepted
	}
	// The broker closed after the last request it received, without an
	// answer: that is how a KIP-1313 broker may reject it.
	if ci.ByBroker && cs.lastReq != nil && !cs.lastReq.answered {
		cs.lastReq.respAt = ci.At
	}
	e.settle(cs, true)
	for s, gap := range cs.gapSide {
		if gap {
			e.emit(cs, Finding{Rule: StreamGap, At: cs.last, Message: fmt.Sprintf("bytes of the %ss were lost and the framing was not found again", decode.Side(s))})
		}
	}
	if cs.info.MidStream && cs.sawKafka {
		e.emit(cs, Finding{Rule: StreamMidStart, At: cs.info.First,
			Message: "the connection began before the capture: first-request rules were not applied to it"})
	}
	if n := ci.Counters.Unanswered; n > 0 {
		e.emit(cs, Finding{Rule: StreamUnanswered, At: cs.last, Count: n,
			Message: plural(n, "request has", "requests have") + " no response in the capture"})
	}
	conn := Connection{ID: cs.info.ID, Key: cs.info.Key, ClientID: cs.clientID, HasClient: cs.clientID != "",
		InstanceID: cs.firstID, HasInstanceID: cs.hasFirstID, Profile: cs.profile, MidStream: cs.info.MidStream,
		NewClient: cs.hasFirstID, Requests: cs.requests, Responses: cs.responses, Unanswered: ci.Counters.Unanswered, Gaps: cs.gaps,
		NotKafka: ci.NotKafka, First: cs.info.First, Last: cs.last}
	if len(e.closed) >= e.opt.MaxConnections {
		// Keep the most recent: drop the oldest half at once, so that the
		// copy is paid rarely.
		drop := len(e.closed) / 2
		e.closed = e.closed[:copy(e.closed, e.closed[drop:])]
		e.droppedConns += int64(drop)
	}
	e.closed = append(e.closed, conn)
	e.unindexClient(cs)
	e.tele.forget(connID)
	e.groups.forget(connID)
	delete(e.conns, connID)
	return e.out
}

// settle finalises the requests whose findings can now be decided: the
// profile is known (or the connection closed) and the answer is in (or the
// connection closed).
func (e *Engine) settle(cs *connState, closing bool) {
	keep := cs.undecided[:0]
	for i, r := range cs.undecided {
		// A request with no header finding under any profile does not wait
		// for the profile; over the cap, the oldest are judged as they are.
		profileKnown := cs.decided || closing || len(r.seed)+len(r.accepted)+len(r.old) == 0
		over := len(cs.undecided)-i > maxUndecided
		if over || profileKnown && (r.answered || closing) {
			e.finalize(cs, r, closing)
			continue
		}
		keep = append(keep, r)
	}
	cs.undecided = keep
}

// maxUndecided caps the requests a connection keeps waiting for their
// profile or answer.
const maxUndecided = 1024

// finalize picks a request's finding by precedence and records the
// broker's answer to it.
func (e *Engine) finalize(cs *connState, r *reqRec, closing bool) {
	var header []cand
	switch {
	case cs.decided && cs.profile == ProfileSeed:
		header = r.seed
	case cs.decided && cs.profile == ProfileAccepted:
		header = r.accepted
	case !cs.sawF && e.opt.Profile == ProfileAuto:
		header = r.old // an old client
	default:
		// Undetermined: only a reserved ID can be judged.
		for _, c := range append(append([]cand(nil), r.seed...), r.accepted...) {
			if c.rule == HeaderIDReserved && c.seen == "ONE" {
				header = []cand{c}
				break
			}
		}
	}
	all := append(append([]cand(nil), header...), r.other...)
	var pick *cand
	var also []string
	for _, id := range precedence {
		for i := range all {
			if all[i].rule != id {
				continue
			}
			if pick == nil {
				pick = &all[i]
			} else if !contains(also, id) && id != pick.rule {
				also = append(also, id)
			}
		}
	}
	found := false
	if pick != nil {
		found = true
		e.emitCand(cs, *pick, r.at, &r.h, r.ans, r.answered, r, also...)
		if s := severityOf(pick.rule); s == Error && (strings.HasPrefix(pick.rule, "header-") || pick.rule == TelemetryBodyMismatch) {
			e.brokerVerdict(cs, r)
		}
	}
	for _, c := range r.extra {
		found = true
		e.emitCand(cs, c, r.at, &r.h, r.ans, r.answered, r)
	}
	if rejected, _ := judgeAnswer(r.ans); !found && r.answered && rejected {
		e.emitCand(cs, cand{rule: BrokerRejectedValid, expected: "the request accepted", seen: "INVALID_REQUEST",
			related: []Frame{frameOf(r.at)}}, r.respAt, &r.h, r.ans, true, nil)
	}
}

// brokerVerdict records what the broker did with a request an error rule
// found wrong (RULES.md §5).
func (e *Engine) brokerVerdict(cs *connState, r *reqRec) {
	b := e.broker(cs.info.Key.Broker)
	rejected, processed := judgeAnswer(r.ans)
	switch {
	case r.noResponse:
		// No answer by design: neither a rejection nor evidence.
	case r.answered && rejected:
		b.enforce = append(b.enforce, frameOf(r.respAt))
	case r.answered && processed:
		b.ignore = append(b.ignore, frameOf(r.respAt))
	case !r.answered && r == cs.lastReq && r.respAt.Frame != 0:
		b.enforce = append(b.enforce, frameOf(r.respAt)) // closed without an answer
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// emitCand turns a candidate into a finding at frame at, about the request
// with header h.
// also names the other §3/§4 rules that applied to the same request.
func (e *Engine) emitCand(cs *connState, c cand, at decode.Where, h *decode.RequestHeader, ans decode.Answer, answered bool, r *reqRec, also ...string) {
	f := Finding{Rule: c.rule, At: at, Related: c.related, APIKey: h.APIKey, APIVersion: h.APIVersion, HasAPI: true,
		CorrelationID: h.CorrelationID, Expected: c.expected, Seen: c.seen, Also: also}
	switch {
	case ans.Known():
		f.BrokerAnswer = answerText(ans)
	case r != nil && r.noResponse:
		f.BrokerAnswer = NoResponseByDesign
	case !answered && r != nil && r.respAt.Frame != 0:
		f.BrokerAnswer = ClosedByBroker
	case !answered:
		f.BrokerAnswer = NoResponse
	}
	if r != nil {
		f.AfterGap = r.afterGap
		if r.answered && r.respAt != at {
			f.Related = append(append([]Frame(nil), f.Related...), frameOf(r.respAt))
		}
	}
	e.emit(cs, f)
}

// answerText names the codes of an answer: the top-level one, or the
// distinct nested ones.
func answerText(a decode.Answer) string {
	var names []string
	for _, c := range a.Codes() {
		names = append(names, decode.ErrorName(c))
	}
	return strings.Join(names, ", ")
}

// emit completes a finding with the connection and the catalogue.
func (e *Engine) emit(cs *connState, f Finding) {
	f.Severity = severityOf(f.Rule)
	f.Conn, f.ConnID = cs.info.Key, cs.info.ID
	if f.Message == "" {
		f.Message = message(&f)
	}
	e.bySeverity[f.Severity]++
	if len(e.findings) < e.opt.MaxFindings {
		e.findings = append(e.findings, f)
	} else {
		e.droppedFindings++
	}
	e.out = append(e.out, f)
}

// message is a finding's one sentence.
func message(f *Finding) string {
	r, _ := Lookup(f.Rule)
	s := r.Summary
	if f.HasAPI {
		s = fmt.Sprintf("%s v%d (correlation %d): %s", decode.APIName(f.APIKey), f.APIVersion, f.CorrelationID, s)
	}
	if f.Rule == TelemetryPushUnknownID {
		s += " (the capture may have started after it)"
	}
	if f.AfterGap {
		s += "; bytes of this connection were lost before it"
	}
	if len(f.Also) > 0 {
		s += "; also: " + strings.Join(f.Also, ", ")
	}
	return s
}

// Result returns everything found, once every connection is closed.
func (e *Engine) Result() Result {
	res := Result{Findings: append([]Finding(nil), e.findings...), Connections: append([]Connection(nil), e.closed...)}
	sort.SliceStable(res.Findings, func(i, j int) bool {
		a, b := res.Findings[i].At, res.Findings[j].At
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Frame < b.Frame
	})
	sort.Slice(res.Connections, func(i, j int) bool { return res.Connections[i].ID < res.Connections[j].ID })
	res.Instances = e.instanceList()
	res.Dropped = Dropped{Connections: e.droppedConns, Findings: e.droppedFindings, Instances: e.droppedInstances}
	res.FindingsBySeverity = e.bySeverity
	res.Brokers = e.brokerList()
	res.Matrix = e.matrix(res.Connections, res.Brokers)
	return res
}

// plural writes a count with the singular or plural words.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
