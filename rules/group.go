package rules

import (
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The group membership rules (docs/design/rules.md §6).
const (
	JoinMemberIDNotUsed            = "join-member-id-not-used"
	JoinMemberIDRequiredOldVersion = "join-member-id-required-old-version"
	HeartbeatMemberIDEmpty         = "heartbeat-member-id-empty"
	HeartbeatMemberIDChanged       = "heartbeat-member-id-changed"
	ShareHeartbeatMemberIDEmpty    = "share-heartbeat-member-id-empty"
	StreamsHeartbeatMemberIDEmpty  = "streams-heartbeat-member-id-empty"
)

var groupRules = []Rule{
	{ID: JoinMemberIDNotUsed, Severity: Error, Group: GroupMembership, CrossConnection: true,
		Summary: "after MEMBER_ID_REQUIRED with member ID M, the next JoinGroup for the group carries another ID",
		Detail: "KIP-394: a JoinGroup v4+ with an empty member ID is answered MEMBER_ID_REQUIRED (79) with the member ID M the coordinator assigned for group G. " +
			"The client's next JoinGroup for G carries a member ID other than M (empty, stale or another): on the same connection, " +
			"or on another connection of the same client instance (linked by its header ID). " +
			"A client that leaves G (LeaveGroup) in between starts again with an empty member ID, as Apache Kafka's consumer does: its next JoinGroup is not judged.",
		Why: "The coordinator keeps M as a pending member until the session timeout. A rejoin with another ID is answered UNKNOWN_MEMBER_ID, or gets yet another MEMBER_ID_REQUIRED: " +
			"the consumer loops without joining, the group's rebalance waits, its partitions are not consumed meanwhile, and pending members pile up on the coordinator.",
		Fix: "Client: on MEMBER_ID_REQUIRED, send the next JoinGroup at once with the member ID from the response, also when it reconnects to the coordinator in between. " +
			"Broker: nothing to change.",
		Example: "grp-join-rejoin-wrong"},
	{ID: JoinMemberIDRequiredOldVersion, Severity: Warning, Group: GroupMembership, AtAnswer: true,
		Summary: "MEMBER_ID_REQUIRED sent in answer to JoinGroup v0–v3",
		Detail:  "The coordinator answered MEMBER_ID_REQUIRED (79) to a JoinGroup v0, v1, v2 or v3. KIP-394 starts at JoinGroup v4: clients that send older versions do not know the error code.",
		Why:     "An old client does not understand error 79: it may treat it as fatal or unknown and never join the group, so its partitions go unconsumed.",
		Fix: "Broker: answer MEMBER_ID_REQUIRED only to JoinGroup v4 and later, as Apache Kafka does; for older versions accept the empty member ID and assign one in the normal answer. " +
			"Client: a client that sends JoinGroup v4 or later handles it.",
		Example: "grp-join-old-version"},
	{ID: HeartbeatMemberIDEmpty, Severity: Error, Group: GroupMembership,
		Summary: "ConsumerGroupHeartbeat v1+ with an empty MemberId",
		Detail: "A ConsumerGroupHeartbeat v1 or later (the KIP-848 consumer group protocol) carries an empty MemberId. " +
			"Since KIP-1082 (v1) the client makes its member ID, a UUID, before its first heartbeat and keeps it for its lifetime; v0, in which the coordinator assigned it, is not judged.",
		Why: "The coordinator rejects the heartbeat with INVALID_REQUEST: the consumer never joins the group and its partitions are not consumed.",
		Fix: "Client: make a member ID (a random UUID) when the consumer is created and send it from the first heartbeat on; " +
			"a client that still relies on the coordinator to assign it must use ConsumerGroupHeartbeat v0. Broker: nothing to change.",
		Example: "grp-cgh-empty-member"},
	{ID: HeartbeatMemberIDChanged, Severity: Warning, Group: GroupMembership,
		Summary: "the member ID changes on a connection and group without leaving first",
		Detail: "On one connection and group, a ConsumerGroupHeartbeat, ShareGroupHeartbeat or StreamsGroupHeartbeat carries a member ID other than the previous one, " +
			"and the old member did not leave in between (MemberEpoch -1, or -2 for a static member that will rejoin).",
		Why: "The coordinator sees a new member while the old one keeps its partitions until its session times out: " +
			"the group rebalances twice, those partitions are not consumed in between and lag grows. " +
			"It usually means the client made a new member ID after an error or a reconnect.",
		Fix:     "Client: keep one member ID for the consumer's lifetime (KIP-1082), and leave the group (MemberEpoch -1, or -2 for a static member) before joining under a new one. Broker: nothing to change.",
		Example: "grp-cgh-member-changed"},
	{ID: ShareHeartbeatMemberIDEmpty, Severity: Error, Group: GroupMembership,
		Summary: "ShareGroupHeartbeat with an empty MemberId",
		Detail: "A ShareGroupHeartbeat (a KIP-932 share consumer) carries an empty MemberId. " +
			"The share consumer makes its member ID, a UUID, before its first heartbeat and keeps it for its lifetime; every version requires it.",
		Why: "The coordinator rejects the heartbeat with INVALID_REQUEST: the share consumer never joins its share group and fetches nothing from it.",
		Fix: "Client: make a member ID (a random UUID) when the share consumer is created and send it from the first ShareGroupHeartbeat on. " +
			"Broker: nothing to change.",
		Example: "grp-share-empty-member"},
	{ID: StreamsHeartbeatMemberIDEmpty, Severity: Error, Group: GroupMembership,
		Summary: "StreamsGroupHeartbeat with an empty MemberId",
		Detail: "A StreamsGroupHeartbeat (the KIP-1071 streams rebalance protocol) carries an empty MemberId. " +
			"The streams client makes its member ID, a UUID, before its first heartbeat and keeps it for the life of the process; every version requires it.",
		Why: "The coordinator rejects the heartbeat with INVALID_REQUEST: the streams application's instance gets no tasks and processes nothing.",
		Fix: "Client: make a member ID (a random UUID) when the streams client starts and send it from the first StreamsGroupHeartbeat on; " +
			"a static member keeps its group instance ID as well. Broker: nothing to change.",
		Example: "grp-streams-empty-member"},
}

// emptyMemberRule is the rule an empty member ID breaks in a heartbeat of
// this API and version: the member makes its own ID in ConsumerGroupHeartbeat
// v1+ (KIP-1082), and in every version of the share and streams heartbeats
// (kafka-clients 4.4.0's schemas); "" where the coordinator assigns it.
func emptyMemberRule(key, version int16) string {
	switch {
	case key == decode.KeyConsumerGroupHeartbeat && version >= 1:
		return HeartbeatMemberIDEmpty
	case key == decode.KeyShareGroupHeartbeat:
		return ShareHeartbeatMemberIDEmpty
	case key == decode.KeyStreamsGroupHeartbeat:
		return StreamsHeartbeatMemberIDEmpty
	}
	return ""
}

// groupChecker applies the group membership rules. Across connections it
// remembers the member IDs MEMBER_ID_REQUIRED answers assigned, by client
// instance and group.
type groupChecker struct {
	// required maps (client instance, group) to the member ID a
	// MEMBER_ID_REQUIRED answer assigned, and where.
	required bounded[string, assigned]
}

type assigned struct {
	member string
	at     kafka.FrameRef
}

type joinRequest struct {
	group   string
	version int16
	header  headerID
}

func newGroupChecker() *groupChecker {
	return &groupChecker{required: newBounded[string, assigned]()}
}

func (*groupChecker) rules() []Rule { return groupRules }

func (g *groupChecker) open(*conn) connChecker { return &groupConn{g: g} }

// groupConn is the group rules' part of one connection. Its lists are
// short (a connection has a request or two in flight, and one group): a
// map each would cost 100,000 connections more than all their other
// state.
type groupConn struct {
	passive
	g *groupChecker
	// joins are the JoinGroup requests awaiting their answer, members the
	// member ID last used per group and the request that carried it,
	// required this connection's keys in the checker's required (looking
	// for them among every connection's at each close cost as much as the
	// rest of a run with 100,000 connections).
	joins    pairs[int32, joinRequest]
	members  pairs[string, assigned]
	required []string
}

func groupKey(client, group string) string { return client + "\x00" + group }

func (gc *groupConn) request(c *conn, q *request, ev *decode.Event) []cand {
	g, x := gc.g, q.x
	m := &ev.Msg
	h := &m.Request
	if !m.HasBody {
		return nil
	}
	switch h.APIKey {
	case decode.KeyJoinGroup:
		group, member := kept(m.Body.GroupID), kept(m.Body.MemberID)
		gc.joins.set(h.CorrelationID, joinRequest{group: group, version: h.APIVersion, header: x})
		keys := gc.keys(c, x, group)
		for _, k := range keys {
			a, ok := g.required.get(k)
			if !ok {
				continue
			}
			// This is the client's next JoinGroup for the group.
			for _, k := range keys {
				g.required.delete(k)
			}
			if member != a.member {
				return []cand{{rule: JoinMemberIDNotUsed, expected: Value{Kind: ValueMemberID, Text: a.member},
					seen: Value{Kind: ValueMemberID, Text: member}, related: []Related{{a.at, RoleAssigned}}}}
			}
			return nil
		}
	case decode.KeyLeaveGroup:
		// A classic consumer that leaves (close, unsubscribe, a poll
		// timeout) forgets its member ID and joins again with an empty
		// one (Apache's AbstractCoordinator.maybeLeaveGroup resets its
		// generation): a MEMBER_ID_REQUIRED before it binds no later
		// JoinGroup.
		for _, k := range gc.keys(c, x, kept(m.Body.GroupID)) {
			g.required.delete(k)
		}
	case decode.KeyConsumerGroupHeartbeat, decode.KeyShareGroupHeartbeat, decode.KeyStreamsGroupHeartbeat:
		var out []cand
		group, member := kept(m.Body.GroupID), kept(m.Body.MemberID)
		if rule := emptyMemberRule(h.APIKey, h.APIVersion); rule != "" && member == "" {
			// Apache's coordinator rejects it (INVALID_REQUEST) whether or
			// not the broker knows KIP-1313.
			out = append(out, cand{rule: rule, expected: Value{Kind: ValueGeneratedMemberID}, seen: Value{Kind: ValueEmptyMemberID},
				rejectedAnyway: true})
		}
		last, _ := gc.members.get(group)
		if member != "" && last.member != "" && member != last.member {
			out = append(out, cand{rule: HeartbeatMemberIDChanged, expected: Value{Kind: ValueMemberID, Text: last.member},
				seen: Value{Kind: ValueMemberID, Text: member}, related: []Related{{last.at, RolePrevious}}})
		}
		switch {
		case m.Body.MemberEpoch < 0:
			gc.members.take(group) // leaving: a new member ID may follow
		case member != "":
			gc.members.set(group, assigned{member, ev.At})
		}
		return out
	}
	return nil
}

// keys are where the checker keeps what a client's request for group
// binds: by connection, and by client instance (its header ID).
func (gc *groupConn) keys(c *conn, x headerID, group string) []string {
	keys := []string{groupKey(connKey(c.info.ID), group)}
	if id, ok := c.instanceOf(x); ok {
		keys = append(keys, groupKey(headerKey(id), group))
	}
	return keys
}

func (gc *groupConn) response(c *conn, _ *request, ev *decode.Event) []cand {
	g := gc.g
	m := &ev.Msg
	if m.Request.APIKey != decode.KeyJoinGroup {
		return nil
	}
	req, ok := gc.joins.take(m.Request.CorrelationID)
	if !ok || !m.HasErrorCode || m.ErrorCode != kerr.MemberIDRequired.Code {
		return nil
	}
	a := assigned{member: kept(m.Body.MemberID), at: ev.At}
	ck := groupKey(connKey(c.info.ID), req.group)
	g.required.set(ck, a)
	gc.required = append(gc.required, ck)
	if id, ok := c.instanceOf(req.header); ok {
		g.required.set(groupKey(headerKey(id), req.group), a)
	}
	if req.version <= 3 {
		return []cand{{rule: JoinMemberIDRequiredOldVersion, expected: Value{Kind: ValueJoinGroupV4},
			seen: Value{Kind: ValueJoinGroupVersion, Version: req.version}}}
	}
	return nil
}

// close drops what was kept for the connection across connections.
func (gc *groupConn) close(*conn, CloseInfo) []cand {
	for _, k := range gc.required {
		gc.g.required.delete(k)
	}
	gc.required = nil
	return nil
}
