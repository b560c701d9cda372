package samples

import (
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/samples/netsim"
)

// Broker verdicts (docs/design/rules.md §5) from the answers of APIs whose bodies the
// rules do not otherwise read: the top-level ErrorCode where the version
// has one, else the codes nested per topic, partition or group. In each,
// client P on broker1 (knows KIP-1313) and client Q on broker2 (does not)
// send the same request with a changed header ID. broker1 answers it as
// Apache Kafka's getErrorResponse of that request does: INVALID_REQUEST at
// the top level, or in every item where the version has no top-level
// code; broker2 processes it and answers as usual.

// rejectWith fills the step's answer with code the way an Apache broker's
// error response for that request does.
func (s Step) rejectWith(code int16) Step {
	switch r := s.Resps[0].Body.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				p := &r.Topics[i].Partitions[j]
				p.ErrorCode, p.BaseOffset, p.LogAppendTime, p.LogStartOffset = code, -1, -1, -1
			}
		}
	case *kmsg.MetadataResponse:
		// Every topic asked for, with the code and no partitions.
		for i := range r.Topics {
			r.Topics[i].ErrorCode, r.Topics[i].Partitions = code, nil
		}
		r.Brokers = nil
	case *kmsg.FetchResponse:
		// v13+: the top-level code alone; v7–12: also every partition;
		// before v7: every partition.
		if r.Version >= 7 {
			r.ErrorCode = code
		}
		if r.Version >= 13 {
			r.Topics = nil
		}
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				p := &r.Topics[i].Partitions[j]
				p.ErrorCode, p.HighWatermark, p.LastStableOffset, p.LogStartOffset, p.RecordBatches = code, -1, -1, -1, []byte{}
			}
		}
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	case *kmsg.InitProducerIDResponse:
		r.ErrorCode, r.ProducerID, r.ProducerEpoch = code, -1, -1
	default:
		panic("rejectWith: no error response for this body")
	}
	return s
}

// produceParts is Produce v of n records to each of parts partitions.
func produceParts(h HeaderID, v int16, topic string, parts int32) Step {
	s := produceV(h, v, topic, 500, 3)
	req := s.Reqs[0].Body.(*kmsg.ProduceRequest)
	resp := s.Resps[0].Body.(*kmsg.ProduceResponse)
	for p := int32(1); p < parts; p++ {
		rp := req.Topics[0].Partitions[0]
		rp.Partition = p
		rp.Records = recordBatch(0, 3, topic)
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		sp := resp.Topics[0].Partitions[0]
		sp.Partition, sp.BaseOffset = p, 500+int64(p)*10
		resp.Topics[0].Partitions = append(resp.Topics[0].Partitions, sp)
	}
	return s
}

// acks sets the Produce request's acks; with 0 no broker answers it.
func (s Step) acks(n int16) Step {
	s.Reqs[0].Body.(*kmsg.ProduceRequest).Acks = n
	if n == 0 {
		s.Resps = nil
	}
	return s
}

// verdictPair is P on broker1 and Q on broker2, each a seed client with
// its own ID that opens with ApiVersions and Metadata and then sends
// step(the other ID) as a changed header ID.
func verdictPair(n uint64, step func(id HeaderID, enforce bool) Step) []Conn {
	conn := func(cli string, broker netip.AddrPort, clientID, est string, a, b uint64, enforce bool) Conn {
		return Conn{Client: ep(cli), Broker: broker, ClientID: clientID, Profile: Seed, Steps: []Step{
			apiVersions(Tag(uid(a))).label(est),
			metadata(Tag(uid(a)), "orders"),
			step(Tag(uid(b)), enforce).find("header-id-changed", est),
		}}
	}
	return []Conn{
		conn("10.0.1.70:51220", broker1, "orders-app", "est-p", n, n+1, true),
		conn("10.0.1.71:44318", broker2, "billing-app", "est-q", n+2, n+3, false),
	}
}

func verdictScenarios() []Scenario {
	both := []Broker{{broker1, Enforces}, {broker2, Ignores}}
	reject := func(s Step, enforce bool) Step {
		if enforce {
			return s.rejectWith(errInvalidRequest)
		}
		return s
	}
	return []Scenario{
		{
			Name: "vrd-init-producer-id",
			Description: "a changed header ID on InitProducerId v3: broker1 answers INVALID_REQUEST in its top-level ErrorCode (enforces), " +
				"broker2 assigns a producer ID (ignores)",
			Format: netsim.PcapNG, Seed: 401, Brokers: both,
			Conns: verdictPair(401, func(id HeaderID, e bool) Step { return reject(initProducerID(id), e) }),
		},
		{
			Name: "vrd-produce-v9",
			Description: "a changed header ID on Produce v9 (acks = -1) to three partitions, which has no top-level ErrorCode: " +
				"broker1 answers INVALID_REQUEST for every partition (enforces), broker2 appends the records (ignores)",
			Format: netsim.PcapNG, Seed: 402, Brokers: both,
			Conns: verdictPair(411, func(id HeaderID, e bool) Step { return reject(produceParts(id, 9, "orders", 3), e) }),
		},
		{
			Name: "vrd-metadata-v12",
			Description: "a changed header ID on Metadata v12 for two topics, which has no top-level ErrorCode: " +
				"broker1 answers INVALID_REQUEST for every topic (enforces), broker2 describes them (ignores)",
			Format: netsim.PcapNG, Seed: 403, Brokers: both,
			Conns: verdictPair(421, func(id HeaderID, e bool) Step { return reject(metadataV(id, 12, "orders", "billing"), e) }),
		},
		{
			Name: "vrd-fetch-v13",
			Description: "a changed header ID on Fetch v13: broker1 answers INVALID_REQUEST in the top-level ErrorCode with no topics (enforces), " +
				"broker2 returns records with top-level NONE (ignores)",
			Format: netsim.PcapNG, Seed: 404, Brokers: both,
			Conns: verdictPair(431, func(id HeaderID, e bool) Step { return reject(fetchV(id, 13, "orders", 0, 4), e) }),
		},
		{
			Name: "vrd-offset-commit",
			Description: "a changed header ID on OffsetCommit v8 of three partitions, which has no top-level ErrorCode: " +
				"broker1 answers INVALID_REQUEST for every partition (enforces), broker2 commits (ignores)",
			Format: netsim.PcapNG, Seed: 405, Brokers: both,
			Conns: verdictPair(441, func(id HeaderID, e bool) Step {
				return reject(offsetCommit(id, group, member, "orders", 120), e)
			}),
		},
		{
			Name: "vrd-fetch-v4",
			Description: "Fetch v4 (request header v1: no header ID, nothing a header rule can judge) keeps its codes per partition: " +
				"broker3 answers INVALID_REQUEST for every partition of a valid request (broker-rejected-valid); " +
				"broker2 answers the same request with records; neither answer is KIP-1313 evidence",
			Format: netsim.PcapNG, Seed: 406,
			Brokers: []Broker{{broker3, Unknown}, {broker2, Unknown}},
			Conns: []Conn{
				{Client: ep("10.0.1.72:40112"), Broker: broker3, ClientID: "legacy-consumer", Steps: []Step{
					apiVersions(NoTag),
					metadata(NoTag, "orders"),
					fetchV(NoTag, 4, "orders", 0, 4).rejectWith(errInvalidRequest).respFind("broker-rejected-valid"),
				}},
				{Client: ep("10.0.1.73:40114"), Broker: broker2, ClientID: "legacy-consumer", Steps: []Step{
					apiVersions(NoTag),
					metadata(NoTag, "orders"),
					fetchV(NoTag, 4, "orders", 0, 4),
				}},
			},
		},
		{
			Name: "vrd-produce-acks-zero",
			Description: "a changed header ID on Produce v9 with acks = 0, which no broker answers: the finding stands, " +
				"but the missing answer is neither unanswered nor KIP-1313 evidence, and the requests after it are answered; " +
				"a second client's acks = 0 produces are clean",
			Format: netsim.PcapNG, Seed: 407,
			Brokers: []Broker{{broker2, Unknown}},
			Conns: []Conn{
				{Client: ep("10.0.1.74:52230"), Broker: broker2, ClientID: "metrics-shipper", Profile: Seed, Steps: []Step{
					apiVersions(Tag(uid(451))).label("est"),
					metadata(Tag(uid(451)), "metrics"),
					produceParts(Tag(uid(452)), 9, "metrics", 2).acks(0).find("header-id-changed", "est"),
					metadata(Tag(uid(451)), "metrics"),
				}},
				{Client: ep("10.0.1.75:52232"), Broker: broker2, ClientID: "metrics-shipper-2", Profile: Seed, Steps: []Step{
					apiVersions(Tag(uid(453))),
					metadata(Tag(uid(453)), "metrics"),
					produceParts(Tag(uid(453)), 9, "metrics", 1).acks(0),
					produceParts(Tag(uid(453)), 9, "metrics", 1).acks(0),
					metadata(Tag(uid(453)), "metrics"),
				}},
			},
		},
		{
			Name: "vrd-explained-rejection",
			Description: "a seed client sends a changed header ID on a PushTelemetry v0 whose body ID is ZERO and on a ConsumerGroupHeartbeat v1 with an empty member ID: " +
				"broker2, which does not know KIP-1313, rejects both with INVALID_REQUEST for those reasons, as Apache Kafka does: no evidence that it enforces KIP-1313",
			Format: netsim.PcapNG, Seed: 408,
			Brokers: []Broker{{broker2, Unknown}},
			Conns: []Conn{
				{Client: ep("10.0.1.76:47702"), Broker: broker2, ClientID: "orders-app", Profile: Seed, Steps: []Step{
					apiVersions(Tag(uid(454))).label("est"),
					metadata(Tag(uid(454)), "orders"),
					pushV0(Tag(uid(455)), ZERO, false, 1, errInvalidRequest).find("header-id-changed", "est"),
					cghRejected(Tag(uid(455)), 1, cgroup, "", 0, errInvalidRequest, "MemberId can't be empty.").
						find("header-id-changed", "est").find("heartbeat-member-id-empty"),
				}},
			},
		},
	}
}
