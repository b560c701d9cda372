package rules

import (
	"fmt"
	"testing"

	"github.com/kidscope/kidscope/decode"
)

// The cases here follow what Apache Kafka's broker and clients do (the
// facts each rests on are named with it).

// TestTerminatedStaysAfterEcho: a GetTelemetrySubscriptions that names the
// ID after a terminating push is answered NONE by Apache
// (ClientMetricsManager echoes any non-zero ID) and the next push is still
// rejected (the instance keeps its terminating state): that push is
// telemetry-push-after-terminating, not a valid request the broker
// rejected.
func TestTerminatedStaysAfterEcho(t *testing.T) {
	s := newScript(t, Options{})
	c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	c.gtsNew(idX)                            // 2,3
	c.ok(pushT, 0, none(), push(idX, true))  // 4,5: terminating
	corr := c.req(gts, 0, none(), tele(idX)) // 6
	c.resp(corr, 0, tele(idX))               // 7: echoed
	corr = c.req(pushT, 0, none(), push(idX, false))
	c.resp(corr, 42, nil) // 8,9
	if got, want := rulesOf(s.done(), true), "telemetry-push-after-terminating@8"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestTerminatedAcrossBrokers: the terminating state is the client's:
// a push for the ID to another broker is still a finding, and that broker
// accepting it (Apache keeps the state per broker) is no evidence about
// its KIP-1313 support.
func TestTerminatedAcrossBrokers(t *testing.T) {
	s := newScript(t, Options{})
	a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	a.gtsNew(idX)                           // 2,3
	a.ok(pushT, 0, none(), push(idX, true)) // 4,5
	b := s.open(2, "10.0.0.1:5001", "10.0.0.8:9092", false)
	b.ok(pushT, 0, none(), push(idX, false)) // 7,8: accepted
	res := s.done()
	if got, want := rulesOf(res, true), "telemetry-push-after-terminating@7"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for _, br := range res.Brokers {
		if br.Verdict != VerdictUnknown {
			t.Errorf("broker %v: %v, want unknown", br.Endpoint, br.Verdict)
		}
	}
}

// TestExplainedRejections: Apache rejects a PushTelemetry with a reserved
// body ID, a push after its ID's terminating push on the same broker, and
// a ConsumerGroupHeartbeat v1 with an empty member ID with INVALID_REQUEST
// whether or not it knows KIP-1313; such a rejection of a request that
// also breaks a header rule does not make the broker one that enforces
// KIP-1313. Processing such a request still shows that it ignores it.
func TestExplainedRejections(t *testing.T) {
	s := newScript(t, Options{})
	seed := func(id int, broker string) *sconn {
		c := s.open(id, fmt.Sprintf("10.0.0.1:%d", 5000+id), broker, false)
		c.ok(apiVersions, 3, with(idA), nil)
		c.ok(metadata, 12, with(idA), nil) // seed
		return c
	}
	// Reserved body ID and a changed header ID: rejected, unknown.
	c := seed(1, "10.0.0.9:9092")
	corr := c.req(pushT, 0, with(idB), push(zero, false))
	c.resp(corr, 42, nil)
	// The same, processed: ignores.
	c = seed(2, "10.0.0.8:9092")
	c.ok(pushT, 0, with(idB), push(zero, false))
	// After a terminating push to the same broker, a changed header ID:
	// rejected, unknown.
	c = seed(3, "10.0.0.7:9092")
	corr = c.req(gts, 0, with(idA), tele(idA))
	c.resp(corr, 0, tele(idA))
	c.ok(pushT, 0, with(idA), push(idA, true))
	corr = c.req(pushT, 0, with(idB), push(idA, false))
	c.resp(corr, 42, nil)
	// After a terminating push to another broker: this one has no reason
	// of its own, so its rejection tells: enforces.
	c = seed(4, "10.0.0.6:9092")
	corr = c.req(pushT, 0, with(idB), push(idA, false))
	c.resp(corr, 42, nil)
	// ConsumerGroupHeartbeat v1 with an empty member ID and a changed
	// header ID: rejected, unknown.
	c = seed(5, "10.0.0.5:9092")
	corr = c.req(cgh, 1, with(idB), &decode.Body{GroupID: "g"})
	c.resp(corr, 42, nil)
	// Twin: only the header rule: enforces.
	c = seed(6, "10.0.0.4:9092")
	corr = c.req(cgh, 1, with(idB), &decode.Body{GroupID: "g", MemberID: "m"})
	c.resp(corr, 42, nil)
	got := map[string]string{}
	for _, b := range s.done().Brokers {
		got[b.Endpoint.String()] = b.Verdict.String()
	}
	want := map[string]string{"10.0.0.9:9092": "unknown", "10.0.0.8:9092": "ignores", "10.0.0.7:9092": "unknown",
		"10.0.0.6:9092": "enforces", "10.0.0.5:9092": "unknown", "10.0.0.4:9092": "enforces"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("broker %s: %s, want %s", k, got[k], v)
		}
	}
}

// TestPushUnknownOncePerID: Apache's Java client asks for its
// subscription once and then only pushes, to whichever broker it is
// connected to (the subscription ID is the same on every broker): a
// capture that starts late sees each of its pushes. One finding per ID,
// at its first push, counting the pushes it stands for; info when that
// push's connection began before the capture. An ID an exchange on
// another connection produced is known on every broker.
func TestPushUnknownOncePerID(t *testing.T) {
	s := newScript(t, Options{})
	a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", true) // mid-stream
	for range 3 {
		a.ok(pushT, 0, none(), push(idX, false)) // 2,4,6
	}
	b := s.open(2, "10.0.0.1:5001", "10.0.0.8:9092", false)
	b.ok(pushT, 0, none(), push(idX, false)) // 9: the same ID, to another broker
	c := s.open(3, "10.0.0.2:5000", "10.0.0.9:9092", false)
	c.ok(pushT, 0, none(), push(idB, false)) // 12
	c.ok(pushT, 0, none(), push(idB, false)) // 14
	d := s.open(4, "10.0.0.3:5000", "10.0.0.9:9092", false)
	d.gtsNew(idA) // 17,18
	e := s.open(5, "10.0.0.3:5001", "10.0.0.8:9092", false)
	e.ok(pushT, 0, none(), push(idA, false)) // known: nothing
	res := s.done()
	var got []string
	for _, f := range res.Findings {
		if f.Rule == TelemetryPushUnknownID {
			got = append(got, fmt.Sprintf("%d %s ×%d", f.At.Frame, f.Severity, f.Count))
		}
	}
	if want := "[2 info ×4 12 warning ×2]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
	if n := res.FindingsByRule[TelemetryPushUnknownID]; n != 2 {
		t.Errorf("%d findings counted, want 2", n)
	}
}

// TestLeaveGroupForgetsMemberID: a classic consumer that leaves the group
// between MEMBER_ID_REQUIRED and its next JoinGroup joins again with an
// empty member ID (Apache's AbstractCoordinator.maybeLeaveGroup resets its
// generation, member ID included): no join-member-id-not-used, on the
// same connection or another of the same instance. A LeaveGroup of
// another group changes nothing.
func TestLeaveGroupForgetsMemberID(t *testing.T) {
	const leaveGroup = 13
	required := func(c *sconn, h hdr, group string) {
		corr := c.req(joinGroup, 4, h, &decode.Body{GroupID: group})
		c.resp(corr, 79, &decode.Body{MemberID: "m-" + group})
	}
	s := newScript(t, Options{})
	a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	required(a, none(), "g")                                // 2,3
	a.ok(leaveGroup, 3, none(), &decode.Body{GroupID: "g"}) // 4,5
	a.ok(joinGroup, 4, none(), &decode.Body{GroupID: "g"})  // 6,7: empty again: fine
	required(a, none(), "h")                                // 8,9
	a.ok(leaveGroup, 3, none(), &decode.Body{GroupID: "x"}) // 10,11: another group
	a.ok(joinGroup, 4, none(), &decode.Body{GroupID: "h"})  // 12,13: not used
	b := s.open(2, "10.0.0.1:5001", "10.0.0.9:9092", false)
	required(b, with(idA), "k")                                // 15,16
	b.ok(leaveGroup, 3, with(idA), &decode.Body{GroupID: "k"}) // 17,18
	c := s.open(3, "10.0.0.1:5002", "10.0.0.8:9092", false)
	c.ok(joinGroup, 4, with(idA), &decode.Body{GroupID: "k"}) // the same instance, elsewhere: fine
	if got, want := rulesOf(s.done(), true), "join-member-id-not-used@12"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestStaticMemberLeaves: a static member leaves with MemberEpoch -2
// (ConsumerGroupHeartbeat's schema; Apache's coordinator takes -2 with an
// instance ID as a static member leaving to rejoin): a new member ID after
// it is no change.
func TestStaticMemberLeaves(t *testing.T) {
	s := newScript(t, Options{})
	c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	inst := "i"
	c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "a", GroupInstanceID: &inst})
	c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "a", GroupInstanceID: &inst, MemberEpoch: -2})
	c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "b", GroupInstanceID: &inst})
	if got := rulesOf(s.done(), true); got != "" {
		t.Errorf("got %q, want nothing", got)
	}
}
