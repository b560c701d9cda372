package rules

import (
	"testing"

	"github.com/kidscope/kidscope/decode"
)

func TestTelemetryChecker(t *testing.T) {
	testChecker(t, newTelemetryChecker(), []checkerCase{
		{"body mismatch, rejected", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, with(idA), nil)
			corr := c.req(gts, 0, with(idA), tele(zero)) // 4
			c.resp(corr, 42, nil)                        // 5
		}, []typed{{rule: TelemetryBodyMismatch, at: 4, expected: Value{Kind: ValueHeaderBodyID, ID: idA}, seen: Value{Kind: ValueBodyID, ID: zero},
			related: []Related{rel(5, RoleAnswer)}, answer: answered(42)}}},
		{"assigned ID not reused: another one, then ZERO", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.gtsNew(idX)                            // 2,3: assigned X
			c.ok(pushT, 0, none(), push(idX, false)) // 4,5
			c.ok(pushT, 0, none(), push(idB, false)) // 6,7
			c.gtsNew(idX)                            // 8,9
		}, []typed{
			{rule: TelemetryIDNotReused, at: 6, expected: idValue(idX), seen: named(idB),
				related: []Related{rel(3, RoleAssigned), rel(7, RoleAnswer)}, answer: answered(0), also: []string{TelemetryPushUnknownID}},
			{rule: TelemetryIDNotReused, at: 8, expected: idValue(idX), seen: named(zero),
				related: []Related{rel(3, RoleAssigned), rel(9, RoleAnswer)}, answer: answered(0)},
		}},
		{"push reserved, after terminating, unknown", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			corr := c.req(gts, 0, none(), tele(idX))  // 2
			c.resp(corr, 0, tele(zero))               // 3: X accepted
			c.ok(pushT, 0, none(), push(zero, false)) // 4,5
			c.ok(pushT, 0, none(), push(idX, true))   // 6,7: terminating
			c.ok(pushT, 0, none(), push(idX, false))  // 8,9
			d := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
			d.req(pushT, 0, none(), push(idB, false)) // 11, never answered
		}, []typed{
			{rule: TelemetryPushReservedID, at: 4, expected: Value{Kind: ValueNonReserved}, seen: named(zero),
				related: []Related{rel(5, RoleAnswer)}, answer: answered(0), also: []string{TelemetryIDNotReused}},
			{rule: TelemetryPushAfterTerminate, at: 8, expected: Value{Kind: ValueNoPushAfterEnd}, seen: Value{Kind: ValuePushFor, ID: idX},
				related: []Related{rel(6, RoleTerminated), rel(9, RoleAnswer)}, answer: answered(0)},
			{rule: TelemetryPushUnknownID, at: 11, expected: Value{Kind: ValueExchangedID}, seen: idValue(idB),
				answer: Answer{State: NoResponse}, count: 1},
		}},
		{"v1 with no ID anywhere", Options{Profile: ForceSeed}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(gts, 1, none(), &decode.Body{}) // 2,3
		}, []typed{{rule: TelemetryIDMissing, at: 2, expected: Value{Kind: ValueHeaderID}, seen: Value{Kind: ValueNoIDAnywhere},
			related: []Related{rel(3, RoleAnswer)}, answer: answered(0)}}},
		{"broker assigns nothing, then another ID than the client's", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.gtsNew(zero)                           // 2,3
			corr := c.req(gts, 0, none(), tele(idX)) // 4
			c.resp(corr, 0, tele(idB))               // 5
		}, []typed{
			{rule: BrokerIDNotAssigned, at: 3, expected: Value{Kind: ValueNewID}, seen: named(zero),
				related: []Related{rel(2, RoleRequest)}, answer: answered(0)},
			{rule: BrokerIDConflict, at: 5, expected: Value{Kind: ValueEchoOrZero, ID: idX}, seen: idValue(idB),
				related: []Related{rel(4, RoleRequest)}, answer: answered(0)},
		}},
		{"broker re-issues an ID another connection got", Options{}, func(s *script) {
			a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			a.gtsNew(idX) // 2,3
			b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
			b.gtsNew(idX) // 5,6
		}, []typed{{rule: BrokerIDReissued, at: 6, expected: Value{Kind: ValueNewID}, seen: Value{Kind: ValueSeenElsewhereID, ID: idX},
			related: []Related{rel(3, RoleFirstSeen), rel(5, RoleRequest)}, answer: answered(0)}}},
		{"twin: the initial exchange and its use find nothing", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.gtsNew(idX)
			c.ok(pushT, 0, none(), push(idX, false))
		}, nil},
	})
}
