package rules

import (
	"testing"

	"github.com/kidscope/kidscope/decode"
)

func TestHeaderChecker(t *testing.T) {
	testChecker(t, &headerChecker{}, []checkerCase{
		{"changed (seed)", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, with(idA), nil) // 2,3
			c.ok(metadata, 12, with(idA), nil)   // 4,5: N carries an ID: seed
			c.ok(metadata, 12, with(idB), nil)   // 6,7
		}, []typed{{rule: HeaderIDChanged, at: 6, expected: idValue(idA), seen: named(idB),
			related: []Related{rel(2, RoleEstablished), rel(7, RoleAnswer)}, answer: answered(0)}}},
		{"dropped (seed): absent, then ZERO", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, with(idA), nil) // 2,3
			c.ok(metadata, 12, none(), nil)      // 4,5
			c.ok(metadata, 12, with(zero), nil)  // 6,7
		}, []typed{
			{rule: HeaderIDDropped, at: 4, expected: idValue(idA), seen: Value{Kind: ValueNoID},
				related: []Related{rel(2, RoleEstablished), rel(5, RoleAnswer)}, answer: answered(0)},
			{rule: HeaderIDDropped, at: 6, expected: idValue(idA), seen: named(zero),
				related: []Related{rel(2, RoleEstablished), rel(7, RoleAnswer)}, answer: answered(0)},
		}},
		{"late (seed)", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, none(), nil)  // 2,3
			c.ok(metadata, 12, with(idA), nil) // 4,5: F
			c.ok(metadata, 12, with(idA), nil) // 6,7: N carries it: seed
		}, []typed{
			{rule: HeaderIDLate, at: 4, expected: Value{Kind: ValueNoIDFirst}, seen: named(idA),
				related: []Related{rel(2, RoleEstablished), rel(5, RoleAnswer)}, answer: answered(0)},
			{rule: HeaderIDLate, at: 6, expected: Value{Kind: ValueNoIDFirst}, seen: named(idA),
				related: []Related{rel(2, RoleEstablished), rel(7, RoleAnswer)}, answer: answered(0)},
		}},
		{"missing first (old client, judged as accepted)", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, none(), nil)    // 2,3
			c.ok(gts, 1, none(), &decode.Body{}) // 4,5
		}, []typed{{rule: HeaderIDMissingFirst, at: 4, expected: Value{Kind: ValueFirstV3ID}, seen: Value{Kind: ValueNoID},
			related: []Related{rel(5, RoleAnswer)}, answer: answered(0), also: []string{TelemetryIDMissing}}}},
		{"reserved: ONE on an undetermined connection, no answer", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.req(metadata, 12, with(one), nil) // 2
		}, []typed{{rule: HeaderIDReserved, at: 2, expected: Value{Kind: ValueNonReserved}, seen: named(one),
			answer: Answer{State: NoResponse}}}},
		{"reserved: an explicit ZERO (accepted forced), the broker closes", Options{Profile: ForceAccepted}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.req(offsetDel, 1, with(zero), nil) // 2
			c.close(true)                        // 3
		}, []typed{{rule: HeaderIDReserved, at: 2, expected: Value{Kind: ValueNonReserved}, seen: named(zero),
			answer: Answer{State: ClosedByBroker}}}},
		{"accepted: client ID repeated, ID repeated, changed", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, none(), nil)               // 2,3
			c.ok(offsetDel, 1, with(idA), nil)              // 4,5: F
			c.ok(metadata, 12, none().nullClient(), nil)    // 6,7: N: accepted
			c.ok(offsetDel, 1, none(), nil)                 // 8,9: ClientId repeated
			c.ok(offsetDel, 1, with(idA).nullClient(), nil) // 10,11: ID repeated
			c.ok(offsetDel, 1, with(idB).nullClient(), nil) // 12,13: changed
		}, []typed{
			{rule: HeaderClientIDRepeated, at: 8, expected: Value{Kind: ValueNullClientID}, seen: Value{Kind: ValueClientID, Text: "app"},
				related: []Related{rel(4, RoleEstablished), rel(9, RoleAnswer)}, answer: answered(0)},
			{rule: HeaderIDRepeated, at: 10, expected: Value{Kind: ValueNoIDRepeated}, seen: named(idA),
				related: []Related{rel(4, RoleEstablished), rel(11, RoleAnswer)}, answer: answered(0)},
			{rule: HeaderIDChanged, at: 12, expected: idValue(idA), seen: named(idB),
				related: []Related{rel(4, RoleEstablished), rel(13, RoleAnswer)}, answer: answered(0)},
		}},
		{"precedence: changed first, the telemetry rules named", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, with(idA), nil)         // 2,3
			c.ok(metadata, 12, with(idA), nil)           // 4,5
			c.ok(pushT, 0, with(idB), push(zero, false)) // 6,7
		}, []typed{{rule: HeaderIDChanged, at: 6, expected: idValue(idA), seen: named(idB),
			related: []Related{rel(2, RoleEstablished), rel(7, RoleAnswer)}, answer: answered(0),
			also: []string{TelemetryPushReservedID, TelemetryBodyMismatch}}}},
	})
}
