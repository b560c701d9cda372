package rules

import (
	"testing"

	"github.com/kidscope/kidscope/decode"
)

func TestGroupChecker(t *testing.T) {
	member := func(m string) Value { return Value{Kind: ValueMemberID, Text: m} }
	testChecker(t, newGroupChecker(), []checkerCase{
		{"join: MEMBER_ID_REQUIRED, wrong and right rejoin, old version", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			corr := c.req(joinGroup, 9, none(), &decode.Body{GroupID: "g"})         // 2
			c.resp(corr, 79, &decode.Body{MemberID: "m-1"})                         // 3
			c.ok(joinGroup, 9, none(), &decode.Body{GroupID: "g", MemberID: "m-2"}) // 4,5: wrong
			corr = c.req(joinGroup, 9, none(), &decode.Body{GroupID: "h"})
			c.resp(corr, 79, &decode.Body{MemberID: "m-3"})
			c.ok(joinGroup, 9, none(), &decode.Body{GroupID: "h", MemberID: "m-3"}) // right
			corr = c.req(joinGroup, 3, none(), &decode.Body{GroupID: "k"})          // 10
			c.resp(corr, 79, &decode.Body{MemberID: "m-4"})                         // 11: old version
		}, []typed{
			{rule: JoinMemberIDNotUsed, at: 4, expected: member("m-1"), seen: member("m-2"),
				related: []Related{rel(3, RoleAssigned), rel(5, RoleAnswer)}, answer: answered(0)},
			{rule: JoinMemberIDRequiredOldVersion, at: 11, expected: Value{Kind: ValueJoinGroupV4}, seen: Value{Kind: ValueJoinGroupVersion, Version: 3},
				answer: answered(79)},
		}},
		{"heartbeat: empty, changed, and a new ID after leaving", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			corr := c.req(cgh, 1, none(), &decode.Body{GroupID: "g"}) // 2
			c.resp(corr, 42, nil)                                     // 3
			c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "a"})
			c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "b"}) // 6,7
			c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "b", MemberEpoch: -1})
			c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "c"})
			c.ok(cgh, 0, none(), &decode.Body{GroupID: "v0"})
		}, []typed{
			{rule: HeartbeatMemberIDEmpty, at: 2, expected: Value{Kind: ValueGeneratedMemberID}, seen: Value{Kind: ValueEmptyMemberID},
				related: []Related{rel(3, RoleAnswer)}, answer: answered(42)},
			{rule: HeartbeatMemberIDChanged, at: 6, expected: member("a"), seen: member("b"),
				related: []Related{rel(4, RolePrevious), rel(7, RoleAnswer)}, answer: answered(0)},
		}},
		{"share and streams heartbeats: empty in every version, changed, static leave", Options{}, func(s *script) {
			const share, streams = 76, 88
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			corr := c.req(share, 1, none(), &decode.Body{GroupID: "s"}) // 2
			c.resp(corr, 42, nil)                                       // 3
			c.ok(share, 1, none(), &decode.Body{GroupID: "s", MemberID: "a"})
			c.ok(share, 1, none(), &decode.Body{GroupID: "s", MemberID: "b"}) // 6,7: changed
			c.ok(streams, 0, none(), &decode.Body{GroupID: "t"})              // 8,9: empty in v0 too
			inst := "i"
			c.ok(streams, 1, none(), &decode.Body{GroupID: "t", MemberID: "x", GroupInstanceID: &inst})
			c.ok(streams, 1, none(), &decode.Body{GroupID: "t", MemberID: "x", GroupInstanceID: &inst, MemberEpoch: -2})
			c.ok(streams, 1, none(), &decode.Body{GroupID: "t", MemberID: "y", GroupInstanceID: &inst}) // after a static leave: fine
		}, []typed{
			{rule: ShareHeartbeatMemberIDEmpty, at: 2, expected: Value{Kind: ValueGeneratedMemberID}, seen: Value{Kind: ValueEmptyMemberID},
				related: []Related{rel(3, RoleAnswer)}, answer: answered(42)},
			{rule: HeartbeatMemberIDChanged, at: 6, expected: member("a"), seen: member("b"),
				related: []Related{rel(4, RolePrevious), rel(7, RoleAnswer)}, answer: answered(0)},
			{rule: StreamsHeartbeatMemberIDEmpty, at: 8, expected: Value{Kind: ValueGeneratedMemberID}, seen: Value{Kind: ValueEmptyMemberID},
				related: []Related{rel(9, RoleAnswer)}, answer: answered(0)},
		}},
	})
}
