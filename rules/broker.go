package rules

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TLSNoKey is what a connection carries (decode.Outcome.NotKafka) when it
// is TLS and the key logs lack its keys. TLSKeyNotYetKnown is live's
// variant: the key log still grows, but the ciphertext held while waiting
// for the key reached its bound, so the connection's start is lost.
// TLSWrongKey: the key log had secrets for the connection, but its records
// did not verify with them.
const (
	TLSNoKey          = "TLS (no key)"
	TLSKeyNotYetKnown = "TLS, key not yet known"
	TLSWrongKey       = "TLS (the key log's secrets do not decrypt it)"
)

// TLSWithoutKey reports whether a connection's not-Kafka reason says it was
// TLS that could not be decrypted.
func TLSWithoutKey(reason string) bool {
	return reason == TLSNoKey || reason == TLSKeyNotYetKnown || reason == TLSWrongKey
}

// BrokerRejectedValid is the broker verdict's rule (docs/design/rules.md §4).
const BrokerRejectedValid = "broker-rejected-valid"

var brokerRules = []Rule{
	{ID: BrokerRejectedValid, Severity: Warning, Group: GroupTelemetry, AtAnswer: true, After: BrokerIDConflict,
		Summary: "the broker answered INVALID_REQUEST to a request no rule finds wrong",
		Detail: "The broker answered INVALID_REQUEST (42) to a request in which none of kidscope's rules finds anything wrong: " +
			"its header ID, telemetry IDs and member IDs are consistent with the connection.",
		Why: "The client's call failed for a reason the capture does not show: the broker checks something kidscope does not " +
			"(another reading of KIP-1313, a body field), or it is wrong. The client gets an error that following the KIPs cannot fix.",
		Fix: "Broker: look up the request in its log (by client address and correlation ID) to see why it was rejected, " +
			"and compare its KIP-1313 implementation with the profile the connection was judged by (kidscope analyze --profile seed or accepted judges it by the other). " +
			"Client: nothing, unless the broker's log names a field.",
		Example: "tel-broker-rejects-valid"},
}

// brokerChecker judges each broker endpoint by its answers (docs/design/rules.md §5):
// what it did with the requests that rules with Verdict found wrong, and
// whether it rejects requests no rule finds wrong. It also notes whether
// its ApiVersions offered the telemetry APIs.
type brokerChecker struct {
	brokers     map[netip.AddrPort]*brokerState
	maxBrokers  int
	maxEvidence int
	// unlisted stands for the brokers past maxBrokers: their connections
	// are counted, their answers judged by no one.
	unlisted     brokerState
	unlistedConn int64
}

func newBrokerChecker(maxBrokers, maxEvidence int) *brokerChecker {
	return &brokerChecker{brokers: map[netip.AddrPort]*brokerState{}, maxBrokers: maxBrokers, maxEvidence: maxEvidence}
}

func (*brokerChecker) rules() []Rule { return brokerRules }

func (bc *brokerChecker) open(c *conn) connChecker {
	b := bc.broker(c.info.Endpoints.Broker)
	b.connections++
	if b == &bc.unlisted {
		bc.unlistedConn++
	}
	return &brokerConn{b: b, max: bc.maxEvidence}
}

// brokerConn is the broker verdict's part of one connection: its broker.
type brokerConn struct {
	passive
	b   *brokerState
	max int // evidence frames kept per verdict
}

// close counts the connection in its broker's row of the matrix: Kafka
// connections that sent a request, by client kind.
func (bcn *brokerConn) close(c *conn, ci CloseInfo) []cand {
	if TLSWithoutKey(ci.NotKafka) {
		bcn.b.tlsNoKey++
	}
	if ci.NotKafka == "" && c.requests > 0 {
		kind := 0
		if c.hasFirstID {
			kind = 1
		}
		bcn.b.kinds[kind]++
	}
	return nil
}

// rejectedValid is a broker-rejected-valid finding about the request at.
func rejectedValid(at kafka.FrameRef) cand {
	return cand{rule: BrokerRejectedValid, expected: Value{Kind: ValueAccepted},
		seen: Value{Kind: ValueErrorCode, Code: kerr.InvalidRequest.Code}, related: []Related{related(at, RoleRequest)}}
}

func (bcn *brokerConn) response(_ *conn, q *request, ev *decode.Event) []cand {
	m := &ev.Msg
	if m.Request.APIKey == decode.KeyApiVersions && m.HasBody && m.HasErrorCode && m.ErrorCode == 0 {
		bcn.b.offersTelemetry(m.Body.APIVersions)
	}
	if rejected, _ := judgeAnswer(m.Answer); q == nil && rejected {
		// A request with no possible finding, rejected.
		return []cand{rejectedValid(m.RequestAt)}
	}
	return nil
}

// settled records what the broker did with a request a Verdict rule found
// wrong, and finds a rejection of a request no rule found wrong. A
// rejection that another finding explains (Apache rejects the request for
// that reason with or without KIP-1313) is no evidence that the broker
// enforces KIP-1313; an answer that processed the request still shows
// that it ignores it.
func (bcn *brokerConn) settled(q *request, pick *cand, made []cand) []cand {
	if pick != nil {
		if r, _ := Lookup(pick.rule); r.Verdict {
			explained := slices.ContainsFunc(made, func(cd cand) bool { return cd.rejectedAnyway })
			bcn.b.judge(q, bcn.max, explained)
		}
	}
	if rejected, _ := judgeAnswer(q.ans); len(made) == 0 && q.answered && rejected {
		return []cand{rejectedValid(q.at)}
	}
	return nil
}

// judge records the broker's answer to a request a Verdict rule found
// wrong, keeping the first max frames of each verdict. explained: a
// rejection of it would be explained by another rule.
func (b *brokerState) judge(q *request, max int, explained bool) {
	rejected, processed := judgeAnswer(q.ans)
	switch {
	case q.noResponse:
		// No answer by design: neither a rejection nor evidence.
	case explained && rejected:
		// Rejected for another reason than KIP-1313, perhaps (a broker
		// that cannot parse a header closes the connection instead).
	case q.answered && rejected, q.closedByBroker:
		b.enforced++
		if len(b.enforce) < max {
			b.enforce = append(b.enforce, q.respAt)
		}
	case q.answered && processed:
		b.ignored++
		if len(b.ignore) < max {
			b.ignore = append(b.ignore, q.respAt)
		}
	}
}

// judgeAnswer says whether a broker's answer rejected a request as
// INVALID_REQUEST or processed it (docs/design/rules.md §5): by its top-level ErrorCode
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

// brokerState is what the engine knows of one broker endpoint.
type brokerState struct {
	enforce, ignore   []kafka.FrameRef
	enforced, ignored int64 // evidence, kept or not
	connections       int
	tlsNoKey          int    // connections that were TLS without their keys
	kinds             [2]int // closed Kafka connections by client kind (old, new)
	telemetry         bool   // its ApiVersions offered keys 71 and 72
	telemetryKnown    bool
}

// offersTelemetry records whether an ApiVersions answer offered the
// telemetry APIs (brokers offer them only with a metrics plugin).
func (b *brokerState) offersTelemetry(ranges []decode.VersionRange) {
	var get, push bool
	for _, r := range ranges {
		get = get || r.Key == decode.KeyGetTelemetrySubscriptions
		push = push || r.Key == decode.KeyPushTelemetry
	}
	b.telemetry, b.telemetryKnown = get && push, true
}

func (bc *brokerChecker) broker(ep netip.AddrPort) *brokerState {
	b := bc.brokers[ep]
	if b == nil {
		if len(bc.brokers) >= bc.maxBrokers {
			return &bc.unlisted
		}
		b = &brokerState{}
		bc.brokers[ep] = b
	}
	return b
}

func (bc *brokerChecker) list() []Broker {
	var out []Broker
	for ep, b := range bc.brokers {
		br := Broker{Endpoint: ep, EnforceFrames: slices.Clone(b.enforce), IgnoreFrames: slices.Clone(b.ignore),
			Enforced: b.enforced, Ignored: b.ignored, Connections: b.connections, TLSNoKey: b.tlsNoKey,
			Kinds: b.kinds, Telemetry: b.telemetry, TelemetryKnown: b.telemetryKnown, Verdict: VerdictOf(b.enforced, b.ignored)}
		out = append(out, br)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Endpoint.Compare(out[j].Endpoint) < 0 })
	return out
}

// BrokerVerdict is a broker endpoint's KIP-1313 verdict so far.
type BrokerVerdict struct {
	Endpoint netip.AddrPort
	Verdict  Verdict
}

// Verdicts returns the verdict so far of every broker the engine lists
// whose answers tell one (not unknown), ordered by endpoint: what a
// running engine can be asked between events (live's metrics), without
// the copying of Result.
func (e *Engine) Verdicts() []BrokerVerdict {
	var out []BrokerVerdict
	for ep, b := range e.brokers.brokers {
		if v := VerdictOf(b.enforced, b.ignored); v != VerdictUnknown {
			out = append(out, BrokerVerdict{ep, v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Endpoint.Compare(out[j].Endpoint) < 0 })
	return out
}

// VerdictOf is the verdict of a broker whose answers enforced KIP-1313
// enforced times and ignored it ignored times.
func VerdictOf(enforced, ignored int64) Verdict {
	switch {
	case enforced > 0 && ignored > 0:
		return VerdictMixed
	case enforced > 0:
		return VerdictEnforces
	case ignored > 0:
		return VerdictIgnores
	}
	return VerdictUnknown
}

// MatrixOf counts the closed Kafka connections of brokers (their Kinds) per
// client kind and verdict, and unlisted's, of brokers past the list, as
// of unknown verdict.
func MatrixOf(brokers []Broker, unlisted [2]int) Matrix {
	var m Matrix
	for _, b := range brokers {
		col := 2
		switch b.Verdict {
		case VerdictIgnores:
			col = 0
		case VerdictEnforces:
			col = 1
		}
		for kind, n := range b.Kinds {
			m.Cells[kind][col] += n
		}
	}
	for kind, n := range unlisted {
		m.Cells[kind][2] += n
	}
	return m
}
