package samples

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The expectations are written by hand from docs/design/rules.md (see the README). The
// checks here do not judge them against the rules (that would be a second
// rules engine); they catch slips in the data: findings in the wrong
// place, two §3/§4 findings on one request, §8 findings that the script's
// TCP behaviour contradicts, instance IDs shared or split by accident,
// broker verdicts no answer supports, and gaps in the coverage the issue
// asks for.

// requestIndex maps each Request of a built scenario's script to its
// message.
func requestIndex(b *Built) map[*Request]int {
	out := map[*Request]int{}
	k := 0
	for _, m := range b.Messages {
		if m.Request {
			k++
		}
	}
	// Requests are appended in script order per connection as steps run;
	// match them by connection and order.
	next := map[int]int{}
	byConn := map[int][]int{}
	for i, m := range b.Messages {
		if m.Request {
			byConn[m.Conn] = append(byConn[m.Conn], i)
		}
	}
	for ci, c := range b.Conns {
		for _, st := range c.Steps {
			for _, r := range st.Reqs {
				out[r] = byConn[ci][next[ci]]
				next[ci]++
			}
		}
	}
	if len(out) != k {
		panic(fmt.Sprintf("%d requests in the script, %d written", len(out), k))
	}
	return out
}

// responseOf returns the index of the response to request i, or -1.
func responseOf(b *Built, i int) int {
	for j, m := range b.Messages {
		if !m.Request && m.Answers == i {
			return j
		}
	}
	return -1
}

// answerOf is where a scripted answer keeps its error codes, written by
// hand from Kafka's message schemas for the responses the scenarios send
// (not from the decoder's table): the top-level ErrorCode where the version
// has one, and the codes of its items.
func answerOf(body Body) (top int16, hasTop bool, nested []int16) {
	if v1, ok := body.(*v1Body); ok {
		body, _ = v1.V0()
	}
	v := body.GetVersion()
	add := func(c int16) { nested = append(nested, c) }
	switch r := body.(type) {
	case *kmsg.ApiVersionsResponse:
		return r.ErrorCode, true, nil
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode, true, nil
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode, true, nil
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode, true, nil
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return r.ErrorCode, true, nil
	case *kmsg.ShareGroupHeartbeatResponse:
		return r.ErrorCode, true, nil
	case *kmsg.StreamsGroupHeartbeatResponse:
		return r.ErrorCode, true, nil
	case *kmsg.GetTelemetrySubscriptionsResponse:
		return r.ErrorCode, true, nil
	case *kmsg.PushTelemetryResponse:
		return r.ErrorCode, true, nil
	case *kmsg.InitProducerIDResponse:
		return r.ErrorCode, true, nil
	case *kmsg.SASLHandshakeResponse:
		return r.ErrorCode, true, nil
	case *kmsg.SASLAuthenticateResponse:
		return r.ErrorCode, true, nil
	case *kmsg.LeaveGroupResponse:
		for _, m := range r.Members {
			add(m.ErrorCode)
		}
		return r.ErrorCode, true, nested
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		for _, t := range r.Topics {
			add(t.ErrorCode)
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
		return r.ErrorCode, v >= 13, nested
	case *kmsg.FetchResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
		return r.ErrorCode, v >= 7, nested
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case *kmsg.FindCoordinatorResponse:
		for _, c := range r.Coordinators {
			add(c.ErrorCode)
		}
		return r.ErrorCode, v <= 3, nested
	case *kmsg.OffsetFetchResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
		for _, g := range r.Groups {
			add(g.ErrorCode)
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					add(p.ErrorCode)
				}
			}
		}
		return r.ErrorCode, v >= 2 && v <= 7, nested
	case *kmsg.OffsetDeleteResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
		return r.ErrorCode, true, nested
	}
	return 0, false, nested
}

// answerTells is docs/design/rules.md §5 on one answer: whether it rejected the
// request with INVALID_REQUEST or processed it.
func answerTells(body Body) (rejected, processed bool) {
	top, hasTop, nested := answerOf(body)
	if hasTop {
		return top == errInvalidRequest, top == errNone
	}
	if len(nested) == 0 {
		return false, false
	}
	all, none := true, true
	for _, c := range nested {
		all = all && c == errInvalidRequest
		none = none && c != errInvalidRequest
	}
	return all, none
}

func TestExpectations(t *testing.T) {
	for _, b := range allBuilt(t) {
		t.Run(b.Scenario.Name, func(t *testing.T) { checkExpectation(t, b) })
	}
}

func checkExpectation(t *testing.T, b *Built) {
	e := b.Expect
	frames := b.ConnLast
	maxFrame := slices.Max(frames)
	for _, f := range e.Findings {
		r, ok := LookupRule(f.Rule)
		// A rule's findings have its severity, or info where it says
		// less of what the capture cannot judge.
		if !ok || r.Severity.String() != f.Severity && f.Severity != "info" {
			t.Errorf("finding %s: unknown rule or wrong severity %s", f.Rule, f.Severity)
		}
		if f.Frame < 1 || f.Frame > maxFrame {
			t.Errorf("finding %s at frame %d outside the capture", f.Rule, f.Frame)
		}
	}
	if len(e.Connections) != len(b.Conns) {
		t.Errorf("%d connections expected, %d in the capture", len(e.Connections), len(b.Conns))
	}

	idx := requestIndex(b)
	findsAt := map[int][]string{} // conn → rules found on it
	for ci, c := range b.Conns {
		var firstUnanswered = -1
		var unansweredFinds, gapFinds []int
		for si, st := range c.Steps {
			for _, r := range st.Reqs {
				i := idx[r]
				m := b.Messages[i]
				n34 := 0
				for _, f := range r.Finds {
					rule, _ := LookupRule(f.Rule)
					findsAt[ci] = append(findsAt[ci], f.Rule)
					if rule.AtAnswer {
						t.Errorf("conn %d step %d: %s is about an answer, but is put on the request", ci, si, f.Rule)
					}
					if rule.Precedence > 0 {
						n34++
					}
					switch f.Rule {
					case "stream-unanswered":
						unansweredFinds = append(unansweredFinds, i)
					case "stream-gap":
						gapFinds = append(gapFinds, i)
					case "stream-mid-start", "stream-not-kafka":
						t.Errorf("conn %d step %d: %s is put on a request", ci, si, f.Rule)
					}
					if rule.Group == rules.GroupHeader && len(f.Related) > 1 {
						t.Errorf("conn %d step %d: %s names more than the establishing frame", ci, si, f.Rule)
					}
				}
				if n34 > 1 {
					t.Errorf("conn %d step %d: %d findings of §3/§4 on one request (docs/design/rules.md §1 allows one)", ci, si, n34)
				}
				if m.Frame > 0 && !m.Partial && responseOf(b, i) < 0 && !expectsNoAnswer(r.Body) && firstUnanswered < 0 {
					firstUnanswered = i
				}
			}
			for _, r := range st.Resps {
				for _, f := range r.Finds {
					findsAt[ci] = append(findsAt[ci], f.Rule)
					if rule, _ := LookupRule(f.Rule); !rule.AtAnswer {
						t.Errorf("conn %d step %d: %s is put on a response", ci, si, f.Rule)
					}
				}
			}
			if st.Raw != nil {
				for _, f := range st.Raw.Finds {
					findsAt[ci] = append(findsAt[ci], f.Rule)
				}
			}
		}
		for _, f := range c.Finds {
			findsAt[ci] = append(findsAt[ci], f.Rule)
		}

		// §8, from the script's TCP behaviour.
		switch {
		case firstUnanswered < 0 && len(unansweredFinds) > 0:
			t.Errorf("conn %d: stream-unanswered, but every request is answered", ci)
		case firstUnanswered >= 0 && !slices.Equal(unansweredFinds, []int{firstUnanswered}):
			t.Errorf("conn %d: a request is unanswered: want one stream-unanswered, at the first such request", ci)
		}
		midStart := slices.Contains(findsAt[ci], "stream-mid-start")
		if midStart != c.MidStream || strings.Count(strings.Join(findsAt[ci], " "), "stream-mid-start") > 1 {
			t.Errorf("conn %d: mid-stream %v, but stream-mid-start findings %v", ci, c.MidStream, findsAt[ci])
		}
		lost := false
		for i, m := range b.Messages {
			if m.Conn == ci && m.Request && m.Frame == 0 && !m.Partial {
				lost = true
				next := -1
				for j := i + 1; j < len(b.Messages); j++ {
					if b.Messages[j].Conn == ci && b.Messages[j].Request {
						next = j
						break
					}
				}
				if !slices.Equal(gapFinds, []int{next}) {
					t.Errorf("conn %d: a request is lost: want stream-gap at the next request", ci)
				}
			}
		}
		if !lost && len(gapFinds) > 0 {
			t.Errorf("conn %d: stream-gap, but nothing is lost", ci)
		}
		tls := false
		for _, st := range c.Steps {
			if st.Raw != nil && st.Raw.What == "TLS" {
				if !tls && (len(st.Raw.Finds) != 1 || st.Raw.Finds[0].Rule != "stream-not-kafka") {
					t.Errorf("conn %d: TLS, but its first record has no stream-not-kafka", ci)
				}
				tls = true
			}
		}
		if !tls && slices.Contains(findsAt[ci], "stream-not-kafka") {
			t.Errorf("conn %d: stream-not-kafka on a Kafka connection", ci)
		}
	}

	checkInstances(t, b, findsAt)
	checkVerdicts(t, b, idx)
	if b.Scenario.Large && len(e.Findings) > 0 {
		t.Errorf("the large capture must be clean, has %d findings", len(e.Findings))
	}
}

// checkInstances guards against instance IDs shared or split by accident:
// instance-id-shared must be expected exactly when one header ID comes
// from two client addresses, instance-id-split exactly when one address
// and ClientId has overlapping connections with different IDs.
func checkInstances(t *testing.T, b *Built, findsAt map[int][]string) {
	t.Helper()
	addrs := map[kafka.UUID][]netip.Addr{}
	ids := make([]map[kafka.UUID]bool, len(b.Conns))
	for i := range ids {
		ids[i] = map[kafka.UUID]bool{}
	}
	for _, m := range b.Messages {
		if !m.Request || m.Frame == 0 || m.Instance == nil || m.Instance.IsZero() {
			continue
		}
		ids[m.Conn][*m.Instance] = true
		if a := m.Client.Addr(); !slices.Contains(addrs[*m.Instance], a) {
			addrs[*m.Instance] = append(addrs[*m.Instance], a)
		}
	}
	wantShared := 0
	for _, as := range addrs {
		if len(as) > 1 {
			wantShared++
		}
	}
	wantSplit := 0
	for i := range b.Conns {
		for j := i + 1; j < len(b.Conns); j++ {
			ci, cj := b.Conns[i], b.Conns[j]
			overlap := b.ConnFirst[i] <= b.ConnLast[j] && b.ConnFirst[j] <= b.ConnLast[i]
			if ci.Client.Addr() != cj.Client.Addr() || ci.ClientID != cj.ClientID || !overlap {
				continue
			}
			for id := range ids[i] {
				for jd := range ids[j] {
					if id != jd {
						wantSplit++
					}
				}
			}
		}
	}
	var shared, split int
	for _, rules := range findsAt {
		for _, r := range rules {
			switch r {
			case "instance-id-shared":
				shared++
			case "instance-id-split":
				split++
			}
		}
	}
	if shared != wantShared {
		t.Errorf("%d instance IDs come from several addresses, %d instance-id-shared findings", wantShared, shared)
	}
	if split != wantSplit {
		t.Errorf("%d overlapping connection pairs with different IDs, %d instance-id-split findings", wantSplit, split)
	}
}

// checkVerdicts requires each broker's verdict to follow from the answers
// to the requests given an error-severity header finding or
// telemetry-body-mismatch (docs/design/rules.md §5).
func checkVerdicts(t *testing.T, b *Built, idx map[*Request]int) {
	t.Helper()
	enforces, ignores := map[netip.AddrPort]bool{}, map[netip.AddrPort]bool{}
	for ci, c := range b.Conns {
		var last *Request
		for _, st := range c.Steps {
			for _, r := range st.Reqs {
				last = r
			}
		}
		for _, st := range c.Steps {
			for _, r := range st.Reqs {
				tells := false
				for _, f := range r.Finds {
					if rule, _ := LookupRule(f.Rule); rule.Verdict {
						tells = true
					}
				}
				if !tells {
					continue
				}
				i := idx[r]
				j := responseOf(b, i)
				switch {
				case j < 0 && r == last && (c.End == BrokerCloses || c.End == BrokerResets):
					enforces[c.Broker] = true
				case expectsNoAnswer(r.Body):
					// acks = 0: no answer by design, no evidence.
				case j >= 0:
					rejected, processed := answerTells(b.Messages[j].Body)
					rejected = rejected && !rejectedAnyway(r.Body)
					enforces[c.Broker] = enforces[c.Broker] || rejected
					ignores[c.Broker] = ignores[c.Broker] || processed
				default:
					t.Errorf("conn %d: an offending request is unanswered, and the broker does not close", ci)
				}
			}
		}
	}
	for _, br := range b.Scenario.Brokers {
		want := Unknown
		switch {
		case enforces[br.Addr] && ignores[br.Addr]:
			want = Mixed
		case enforces[br.Addr]:
			want = Enforces
		case ignores[br.Addr]:
			want = Ignores
		}
		if br.KIP1313 != want {
			t.Errorf("broker %v: verdict %s, but its answers say %s", br.Addr, br.KIP1313, want)
		}
	}
}

// rejectedAnyway reports whether Apache Kafka rejects a request with
// INVALID_REQUEST for a reason of its body, whether or not it knows
// KIP-1313: a PushTelemetry v0 whose ClientInstanceId is ZERO or ONE
// (ClientMetricsManager), a ConsumerGroupHeartbeat v1+, a
// ShareGroupHeartbeat or a StreamsGroupHeartbeat with an empty MemberId
// (the group coordinator's request checks).
func rejectedAnyway(body Body) bool {
	switch r := body.(type) {
	case *kmsg.PushTelemetryRequest:
		return r.Version == 0 && (r.ClientInstanceID == ZERO || r.ClientInstanceID == ONE)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return r.Version >= 1 && r.MemberID == ""
	case *kmsg.ShareGroupHeartbeatRequest:
		return r.MemberID == ""
	case *kmsg.StreamsGroupHeartbeatRequest:
		return r.MemberID == ""
	}
	return false
}

// TestCoverage checks that the scenarios cover what issue #3 asks.
func TestCoverage(t *testing.T) {
	built := allBuilt(t)
	byName := map[string]*Built{}
	found := map[string]bool{}
	profileRule := map[string]bool{}
	verdicts := map[string]bool{}
	covers := map[string]bool{}
	for _, b := range built {
		byName[b.Scenario.Name] = b
		for _, c := range b.Scenario.Covers {
			covers[c] = true
		}
		for _, v := range b.Expect.Brokers {
			verdicts[v.KIP1313] = true
		}
		if b.Scenario.Large {
			continue
		}
		prof := map[string]string{}
		for _, c := range b.Expect.Connections {
			if c.Profile != nil {
				prof[c.Client] = *c.Profile
			}
		}
		for _, f := range b.Expect.Findings {
			found[f.Rule] = true
			profileRule[f.Rule+"/"+prof[f.Client]] = true
		}
	}
	for _, r := range rules.Catalog() {
		if !found[r.ID] {
			t.Errorf("no scenario produces %s", r.ID)
		}
		// A rule of a profile shows on a connection judged by it; one of
		// both profiles, under each.
		var profiles []string
		switch r.Profile {
		case "both":
			profiles = []string{"seed", "accepted"}
		case "seed", "accepted":
			profiles = []string{r.Profile}
		}
		for _, p := range profiles {
			if !profileRule[r.ID+"/"+p] {
				t.Errorf("no scenario shows %s/%s", r.ID, p)
			}
		}
	}
	for row := 1; row <= 5; row++ {
		for _, v := range []string{"enforces", "ignores"} {
			if c := fmt.Sprintf("row %d/%s", row, v); !covers[c] {
				t.Errorf("no scenario covers the seed table's %s", c)
			}
		}
	}
	for _, v := range []Verdict{Enforces, Ignores, Mixed, Unknown} {
		if !verdicts[string(v)] {
			t.Errorf("no broker %s KIP-1313", v)
		}
	}
	for name, b := range byName {
		if base, ok := strings.CutSuffix(name, "-clean"); ok && !b.Scenario.Large {
			v := byName[base]
			switch {
			case v == nil:
				t.Errorf("%s has no violating twin %s", name, base)
			case len(b.Expect.Findings) != 0:
				t.Errorf("%s must produce nothing, expects %d findings", name, len(b.Expect.Findings))
			case len(v.Expect.Findings) == 0:
				t.Errorf("%s expects nothing, but its twin is clean", base)
			}
		} else if strings.HasPrefix(name, "hdr-") && byName[name+"-clean"] == nil {
			t.Errorf("%s has no clean twin", name)
		}
	}
}
