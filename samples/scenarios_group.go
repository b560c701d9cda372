package samples

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/samples/netsim"
)

// Group membership rules (docs/design/rules.md §6): KIP-394's MEMBER_ID_REQUIRED and
// KIP-848/KIP-1082's client-generated member IDs.

const (
	memberP     = "orders-consumer-1-3c8e2f6a-9b1d-4f7e-8a2c-5d6e7f8a9b0c"
	memberP2    = "orders-consumer-1-71a4c9d2-0e3b-4c5d-9f8e-1a2b3c4d5e6f"
	memberQ     = "stock-consumer-1-0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f"
	memberQ2    = "stock-consumer-1-b6c5d4e3-f2a1-4b0c-9d8e-7f6a5b4c3d2e"
	staleMember = "orders-consumer-1-e5d4c3b2-a1f0-4e9d-8c7b-6a5f4e3d2c1b"
	// Client-generated ConsumerGroupHeartbeat v1 member IDs (KIP-1082):
	// UUIDs in Kafka's base64 text form.
	cghMember1 = "7yA9xQk3RUy0vS2dPq8ZLw"
	cghMember2 = "Hb4mN1cTQ6ikW0rEyu5fJA"
	// The member ID a broker hands out on ConsumerGroupHeartbeat v0.
	cghBrokerMember = "bVd2Qm9LTr6Xc1eF8sYpGg"
)

const cgroup = "orders-stream-consumers"

// consumerStart is an old client's connection set-up with the group's
// coordinator.
func consumerStart(h HeaderID, groupName string) []Step {
	return []Step{apiVersions(h), metadata(h, "orders"), findCoordinator(h, groupName)}
}

func groupScenarios() []Scenario {
	w, xq := uid(401), uid(402)
	var out []Scenario

	out = append(out, Scenario{
		Name: "grp-join-rejoin",
		Description: "JoinGroup answered MEMBER_ID_REQUIRED, and the client rejoins with the member ID it was given: on the same connection (an old client), " +
			"and on a new connection after the first one dropped (a seed client, linked by its header ID); nothing to find",
		Format: netsim.PcapNG, Seed: 401,
		Brokers: []Broker{{broker2, Unknown}},
		Conns: []Conn{
			{Client: ep("10.0.1.60:43318"), Broker: broker2, ClientID: "orders-consumer", Steps: append(consumerStart(NoTag, group),
				joinRequired(NoTag, 7, group, memberP),
				joinWith(NoTag, 7, group, memberP),
				syncGroup(NoTag, group, memberP),
				offsetFetch(NoTag, group, "orders"),
				fetch("orders", 1200, 4),
				heartbeat(NoTag, group, memberP).after(3*second),
				offsetCommit(NoTag, group, memberP, "orders", 1204),
				leaveGroup(NoTag, group, memberP),
			)},
			{Client: ep("10.0.1.61:50942"), Broker: broker2, ClientID: "stock-consumer", Profile: Seed, End: BrokerResets,
				Steps: append(consumerStart(Tag(w), "stock-consumers"),
					joinRequired(Tag(w), 7, "stock-consumers", memberQ))},
			{Client: ep("10.0.1.61:50958"), Broker: broker2, ClientID: "stock-consumer", Profile: Seed, Steps: []Step{
				apiVersions(Tag(w)).after(200 * millisecond),
				joinWith(Tag(w), 7, "stock-consumers", memberQ),
				syncGroup(Tag(w), "stock-consumers", memberQ),
			}},
		},
	})

	out = append(out, Scenario{
		Name: "grp-join-leave-rejoin",
		Description: "JoinGroup answered MEMBER_ID_REQUIRED, then the consumer leaves the group (LeaveGroup: closed, unsubscribed or past its poll timeout) " +
			"and joins again with an empty member ID, as Apache Kafka's consumer does after leaving; nothing to find",
		Format: netsim.PcapNG, Seed: 409,
		Brokers: []Broker{{broker2, Unknown}},
		Conns: []Conn{
			{Client: ep("10.0.1.64:40270"), Broker: broker2, ClientID: "orders-consumer", Steps: append(consumerStart(NoTag, group),
				joinRequired(NoTag, 7, group, memberP),
				leaveGroup(NoTag, group, memberP),
				joinRequired(NoTag, 7, group, memberP2).after(2*second),
				joinWith(NoTag, 7, group, memberP2),
				syncGroup(NoTag, group, memberP2),
			)},
		},
	})

	out = append(out, Scenario{
		Name: "grp-join-rejoin-wrong",
		Description: "JoinGroup answered MEMBER_ID_REQUIRED, and the client's next JoinGroup does not carry the member ID it was given: a stale ID on the same connection " +
			"(answered UNKNOWN_MEMBER_ID), and an empty one on the seed client's next connection",
		Format: netsim.PcapNG, Seed: 402,
		Brokers: []Broker{{broker2, Unknown}},
		Conns: []Conn{
			{Client: ep("10.0.1.62:35570"), Broker: broker2, ClientID: "orders-consumer", Steps: append(consumerStart(NoTag, group),
				joinRequired(NoTag, 7, group, memberP),
				joinRejected(NoTag, 7, group, staleMember, errUnknownMemberID).find("join-member-id-not-used"),
				joinRequired(NoTag, 7, group, memberP2).after(100*millisecond),
				joinWith(NoTag, 7, group, memberP2),
				syncGroup(NoTag, group, memberP2),
			)},
			{Client: ep("10.0.1.63:58402"), Broker: broker2, ClientID: "stock-consumer", Profile: Seed, End: BrokerResets,
				Steps: append(consumerStart(Tag(xq), "stock-consumers"),
					joinRequired(Tag(xq), 7, "stock-consumers", memberQ))},
			{Client: ep("10.0.1.63:58418"), Broker: broker2, ClientID: "stock-consumer", Profile: Seed, Steps: []Step{
				apiVersions(Tag(xq)).after(200 * millisecond),
				joinRequired(Tag(xq), 7, "stock-consumers", memberQ2).find("join-member-id-not-used"),
				joinWith(Tag(xq), 7, "stock-consumers", memberQ2),
				syncGroup(Tag(xq), "stock-consumers", memberQ2),
			}},
		},
	})

	out = append(out, Scenario{
		Name:        "grp-join-old-version",
		Description: "a broker answers MEMBER_ID_REQUIRED to JoinGroup v3, a version that predates it (KIP-394 starts at v4); the client rejoins with the ID",
		Format:      netsim.PcapNG, Seed: 403,
		Brokers: []Broker{{broker3, Unknown}},
		Conns: []Conn{{Client: ep("10.0.1.64:47796"), Broker: broker3, ClientID: "legacy-consumer", Steps: append(consumerStart(NoTag, group),
			joinRequired(NoTag, 3, group, memberP).respFind("join-member-id-required-old-version"),
			joinWith(NoTag, 3, group, memberP),
		)}},
	})

	cghEmpty := func(first Step) []Conn {
		return []Conn{
			{Client: ep("10.0.1.65:39184"), Broker: broker1, ClientID: "orders-stream-consumer", Steps: append(consumerStart(NoTag, cgroup), first)},
			{Client: ep("10.0.1.66:54422"), Broker: broker1, ClientID: "legacy-stream-consumer", Steps: append(consumerStart(NoTag, cgroup),
				cgh(NoTag, 0, cgroup, "", 0, cghBrokerMember, 1),
				cgh(NoTag, 0, cgroup, cghBrokerMember, 1, cghBrokerMember, 1).after(5*second),
			)},
		}
	}
	out = append(out, pair(Scenario{
		Name: "grp-cgh-empty-member",
		Description: "ConsumerGroupHeartbeat v1 with an empty MemberId (KIP-1082: the client must generate it); the broker answers INVALID_REQUEST. " +
			"Beside it, a v0 client joins with an empty MemberId and uses the one the broker gives (allowed in v0)",
		Format: netsim.PcapNG, Seed: 404,
		Brokers: []Broker{{broker1, Unknown}},
		Conns: cghEmpty(cghRejected(NoTag, 1, cgroup, "", 0, errInvalidRequest, "MemberId can't be empty.").
			find("heartbeat-member-id-empty")),
	}, "clean twin of grp-cgh-empty-member: the v1 heartbeat carries a client-generated member ID",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker1, Unknown}}
			s.Conns = cghEmpty(cgh(NoTag, 1, cgroup, cghMember1, 0, cghMember1, 1))
		})...)

	cghChanged := func(third Step, more ...Step) []Conn {
		steps := append(consumerStart(NoTag, cgroup),
			cgh(NoTag, 1, cgroup, cghMember1, 0, cghMember1, 1),
			cgh(NoTag, 1, cgroup, cghMember1, 1, cghMember1, 1).after(5*second),
			third)
		return []Conn{{Client: ep("10.0.1.67:44610"), Broker: broker1, ClientID: "orders-stream-consumer",
			Steps: append(steps, more...)}}
	}
	out = append(out, pair(Scenario{
		Name:        "grp-cgh-member-changed",
		Description: "ConsumerGroupHeartbeat v1: on one connection and group the member ID changes without the member leaving first (MemberEpoch -1)",
		Format:      netsim.PcapNG, Seed: 405,
		Brokers: []Broker{{broker1, Unknown}},
		Conns: cghChanged(cgh(NoTag, 1, cgroup, cghMember2, 0, cghMember2, 2).after(5 * second).
			find("heartbeat-member-id-changed")),
	}, "clean twin of grp-cgh-member-changed: the member leaves (MemberEpoch -1) before it joins again with a new member ID",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker1, Unknown}}
			s.Conns = cghChanged(cgh(NoTag, 1, cgroup, cghMember1, -1, cghMember1, -1).after(5*second),
				cgh(NoTag, 1, cgroup, cghMember2, 0, cghMember2, 2).after(200*millisecond))
		})...)

	out = append(out, Scenario{
		Name: "grp-share-empty-member",
		Description: "a share consumer's ShareGroupHeartbeat v1 with an empty MemberId (the member makes its ID in every version); the broker answers INVALID_REQUEST. " +
			"A second share consumer changes its member ID without leaving; a third leaves (MemberEpoch -1) before it joins under a new one",
		Format: netsim.PcapNG, Seed: 410,
		Brokers: []Broker{{broker1, Unknown}},
		Conns: []Conn{
			{Client: ep("10.0.1.68:41502"), Broker: broker1, ClientID: "orders-share-consumer", Steps: append(consumerStart(NoTag, sgroup),
				shareHB(sgroup, "", 0, errInvalidRequest).find("share-heartbeat-member-id-empty"))},
			{Client: ep("10.0.1.69:41518"), Broker: broker1, ClientID: "orders-share-consumer", Steps: append(consumerStart(NoTag, sgroup),
				shareHB(sgroup, cghMember1, 0, errNone),
				shareHB(sgroup, cghMember2, 0, errNone).after(5*second).find("heartbeat-member-id-changed"))},
			{Client: ep("10.0.1.69:41530"), Broker: broker1, ClientID: "billing-share-consumer", Steps: append(consumerStart(NoTag, sgroup),
				shareHB(sgroup, cghMember1, 0, errNone),
				shareHB(sgroup, cghMember1, -1, errNone).after(5*second),
				shareHB(sgroup, cghMember2, 0, errNone).after(200*millisecond))},
		},
	})

	inst := "orders-streams-1"
	out = append(out, Scenario{
		Name: "grp-streams-empty-member",
		Description: "a streams application's StreamsGroupHeartbeat v1 with an empty MemberId (the member makes its ID in every version); the broker answers INVALID_REQUEST. " +
			"A static member leaves to rejoin (MemberEpoch -2) and joins again under a new member ID, which is no change",
		Format: netsim.PcapNG, Seed: 411,
		Brokers: []Broker{{broker1, Unknown}},
		Conns: []Conn{
			{Client: ep("10.0.1.70:43300"), Broker: broker1, ClientID: "orders-streams", Steps: append(consumerStart(NoTag, tgroup),
				streamsHB(tgroup, "", 0, nil, errInvalidRequest).find("streams-heartbeat-member-id-empty"))},
			{Client: ep("10.0.1.71:43316"), Broker: broker1, ClientID: "orders-streams", Steps: append(consumerStart(NoTag, tgroup),
				streamsHB(tgroup, cghMember1, 0, &inst, errNone),
				streamsHB(tgroup, cghMember1, -2, &inst, errNone).after(5*second),
				streamsHB(tgroup, cghMember2, 0, &inst, errNone).after(second))},
		},
	})
	return out
}

// The share group (KIP-932) and the streams group (KIP-1071) of the
// scenarios.
const (
	sgroup = "orders-share-consumers"
	tgroup = "orders-streams-app"
)

// nextEpoch is the epoch a coordinator answers a heartbeat at epoch with:
// 1 for a join, the same epoch otherwise (a leave's included).
func nextEpoch(epoch int32) int32 {
	if epoch == 0 {
		return 1
	}
	return epoch
}

// shareHB is ShareGroupHeartbeat v1 of member at epoch (0 joins, with its
// subscription), answered with code (NONE: epoch 1).
func shareHB(group, member string, epoch int32, code int16) Step {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{"orders"}
	}
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = 1
	resp.ErrorCode = code
	if code == errNone {
		resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis = str(member), nextEpoch(epoch), 5000
	} else {
		resp.ErrorMessage = str("MemberId can't be empty.")
	}
	return exchange(NoTag, req, resp)
}

// streamsHB is StreamsGroupHeartbeat v1 of member at epoch (0 joins, with
// its topology; instance: a static member), answered with code (NONE:
// epoch 1).
func streamsHB(group, member string, epoch int32, instance *string, code int16) Step {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = group, member, epoch, instance
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 300000
		sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		sub.SubtopologyID, sub.SourceTopics = "0", []string{"orders"}
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}}
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.Version = 1
	resp.ErrorCode = code
	if code == errNone {
		resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis = member, nextEpoch(epoch), 5000
	} else {
		resp.ErrorMessage = str("MemberId can't be empty.")
	}
	return exchange(NoTag, req, resp)
}
