package rules

import (
	"net/netip"
	"testing"
)

func TestInventoryChecker(t *testing.T) {
	testChecker(t, newInventoryChecker(10), []checkerCase{
		{"shared across addresses, split within one client", Options{}, func(s *script) {
			a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			a.ok(metadata, 12, with(idA), nil) // 2,3
			b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
			b.ok(metadata, 12, with(idA), nil) // 5,6: shared
			c := s.open(3, "10.0.0.1:5001", "10.0.0.9:9092", false)
			c.ok(metadata, 12, with(idB), nil) // 8,9: split
		}, []typed{
			{rule: InstanceIDShared, at: 5, expected: Value{Kind: ValueOneAddress, Addr: netip.MustParseAddr("10.0.0.1")},
				seen:    Value{Kind: ValueAlsoFrom, ID: idA, Addr: netip.MustParseAddr("10.0.0.2")},
				related: []Related{rel(2, RoleFirstSeen), rel(6, RoleAnswer)}, answer: answered(0)},
			{rule: InstanceIDSplit, at: 8, expected: Value{Kind: ValueOtherConnection, ID: idA}, seen: idValue(idB),
				related: []Related{rel(1, RoleOtherConnection), rel(9, RoleAnswer)}, answer: answered(0)},
		}},
		{"twin: one address, and the other connection closed first", Options{}, func(s *script) {
			a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			a.ok(metadata, 12, with(idA), nil)
			a.close(false)
			c := s.open(2, "10.0.0.1:5001", "10.0.0.9:9092", false)
			c.ok(metadata, 12, with(idB), nil)
		}, nil},
	})
}
