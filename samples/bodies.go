package samples

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"strconv"

	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds the bodies the scenarios send: realistic kmsg messages
// for each API a Java-like client uses, and the v1 telemetry bodies kmsg
// (v1.15.1) does not know yet.

// Error codes the scenarios use.
const (
	errNone                  int16 = 0
	errUnknownMemberID       int16 = 25
	errInvalidRequest        int16 = 42
	errMemberIDRequired      int16 = 79
	errUnknownSubscriptionID int16 = 117
)

// The cluster every scenario talks to: three brokers, advertised by name.
const (
	clusterID    = "kidscope-demo-cluster"
	subscription = int32(1718) // the telemetry subscription ID brokers hand out
)

func str(s string) *string { return &s }

// brokerName is the advertised host of broker node n.
func brokerName(n int32) string { return "broker-" + strconv.Itoa(int(n)) + ".kafka.internal" }

// brokerAPIs is what a broker built from Kafka's 2026 trunk (4.5) lists in
// ApiVersions for clients: every client API, telemetry and OffsetDelete up
// to v1 (KIP-1313 as accepted).
var brokerAPIs = [][3]int16{
	{0, 3, 13}, {1, 4, 18}, {2, 1, 10}, {3, 0, 13}, {8, 2, 10}, {9, 1, 10}, {10, 0, 6},
	{11, 0, 9}, {12, 0, 4}, {13, 0, 5}, {14, 0, 5}, {15, 0, 6}, {16, 0, 5}, {17, 0, 1},
	{18, 0, 4}, {19, 2, 7}, {20, 1, 6}, {21, 0, 2}, {22, 0, 6}, {23, 2, 4}, {24, 0, 5},
	{25, 0, 4}, {26, 0, 5}, {28, 0, 5}, {29, 1, 3}, {30, 1, 3}, {31, 1, 3}, {32, 1, 4},
	{33, 0, 2}, {34, 1, 2}, {35, 1, 4}, {36, 0, 2}, {37, 0, 3}, {38, 1, 3}, {39, 1, 2},
	{40, 1, 2}, {41, 1, 3}, {42, 0, 2}, {43, 0, 2}, {44, 0, 1}, {45, 0, 1}, {46, 0, 0},
	{47, 0, 1}, {48, 0, 1}, {49, 0, 1}, {50, 0, 0}, {51, 0, 0}, {55, 0, 2}, {57, 0, 2},
	{60, 0, 2}, {61, 0, 0}, {64, 0, 0}, {65, 0, 0}, {66, 0, 2}, {68, 0, 1}, {69, 0, 1},
	{71, 0, 1}, {72, 0, 1}, {74, 0, 1}, {75, 0, 0}, {76, 1, 1}, {77, 1, 1}, {78, 1, 1},
	{79, 1, 1}, {90, 0, 0}, {91, 0, 0}, {92, 0, 0},
}

// ---- requests and their usual answers, as steps ----

// exchange is a step of one request and its answer.
func exchange(h HeaderID, req, resp Body) Step {
	return Step{Reqs: []*Request{{Body: req, ID: h}}, Resps: []*Response{{Body: resp}}}
}

// apiVersions is ApiVersions v3, the first request of every connection.
func apiVersions(h HeaderID) Step {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "apache-kafka-java"
	req.ClientSoftwareVersion = "4.1.0"
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	for _, k := range brokerAPIs {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k[0], MinVersion: k[1], MaxVersion: k[2]})
	}
	return exchange(h, req, resp)
}

// metadata is Metadata v9 for topics, each with three partitions.
func metadata(h HeaderID, topics ...string) Step { return metadataV(h, 9, topics...) }

func metadataV(h HeaderID, v int16, topics ...string) Step {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = v
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = str(t)
		req.Topics = append(req.Topics, rt)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = v
	for n := int32(1); n <= 3; n++ {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = n, brokerName(n), 9092, str("az-"+strconv.Itoa(int(n)))
		resp.Brokers = append(resp.Brokers, b)
	}
	resp.ClusterID = str(clusterID)
	resp.ControllerID = 1
	for ti, t := range topics {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = str(t)
		rt.TopicID = topicID(t)
		for p := int32(0); p < 3; p++ {
			rp := kmsg.NewMetadataResponseTopicPartition()
			leader := (p+int32(ti))%3 + 1
			rp.Partition, rp.Leader, rp.LeaderEpoch = p, leader, 4
			rp.Replicas = []int32{leader, leader%3 + 1, (leader+1)%3 + 1}
			rp.ISR = rp.Replicas
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return exchange(h, req, resp)
}

// topicID is a made-up topic ID.
func topicID(t string) [16]byte {
	var id [16]byte
	for i := range id {
		id[i] = byte(i*31) ^ t[i%len(t)]
	}
	return id
}

// findCoordinator is FindCoordinator v3 for a group; broker 2 coordinates.
func findCoordinator(h HeaderID, group string) Step {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorKey = group
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.Version = 3
	resp.NodeID, resp.Host, resp.Port = 2, brokerName(2), 9092
	return exchange(h, req, resp)
}

// subscriptionMetadata is a consumer's JoinGroup protocol metadata: the
// ConsumerProtocol subscription of the client generation that sends this
// JoinGroup version (v0 before JoinGroup v6, Kafka 2.4).
func subscriptionMetadata(joinVersion int16, topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	if joinVersion >= 6 {
		m.Version = 3
		m.Generation = -1
		m.Rack = str("az-1")
	}
	return m.AppendTo(nil)
}

func joinRequest(v int16, group, member string, topics ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = v
	req.Group = group
	req.SessionTimeoutMillis = 45000
	req.RebalanceTimeoutMillis = 300000
	req.MemberID = member
	req.ProtocolType = "consumer"
	meta := subscriptionMetadata(v, topics...)
	req.Protocols = []kmsg.JoinGroupRequestProtocol{
		{Name: "range", Metadata: meta},
		{Name: "cooperative-sticky", Metadata: meta},
	}
	return req
}

// joinResponse answers JoinGroup: code 0 makes member the leader of
// generation 1, MEMBER_ID_REQUIRED hands member out.
func joinResponse(v int16, code int16, member string, topics ...string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = v
	resp.ErrorCode = code
	resp.MemberID = member
	switch code {
	case errNone:
		resp.Generation = 1
		resp.ProtocolType = str("consumer")
		resp.Protocol = str("range")
		resp.LeaderID = member
		resp.Members = []kmsg.JoinGroupResponseMember{{MemberID: member, ProtocolMetadata: subscriptionMetadata(v, topics...)}}
	default:
		resp.Generation = -1
		if code != errMemberIDRequired {
			resp.MemberID = ""
		}
	}
	if v < 7 {
		resp.ProtocolType = nil
	}
	return resp
}

// joinRequired is a first JoinGroup with no member ID, answered
// MEMBER_ID_REQUIRED with the member ID the broker hands out.
func joinRequired(h HeaderID, v int16, group, assigned string) Step {
	return exchange(h, joinRequest(v, group, "", "orders"), joinResponse(v, errMemberIDRequired, assigned, "orders"))
}

// joinWith is a JoinGroup with a member ID, answered with the member as
// leader of generation 1.
func joinWith(h HeaderID, v int16, group, member string) Step {
	return exchange(h, joinRequest(v, group, member, "orders"), joinResponse(v, errNone, member, "orders"))
}

// joinRejected is a JoinGroup with a member ID answered with an error.
func joinRejected(h HeaderID, v int16, group, member string, code int16) Step {
	return exchange(h, joinRequest(v, group, member, "orders"), joinResponse(v, code, "", "orders"))
}

// syncGroup is SyncGroup v5: the leader assigns every partition to itself.
func syncGroup(h HeaderID, group, member string) Step {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = 3
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "orders", Partitions: []int32{0, 1, 2}}}
	assignment := a.AppendTo(nil)
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.Generation, req.MemberID = group, 1, member
	req.ProtocolType, req.Protocol = str("consumer"), str("range")
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: assignment}}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = 5
	resp.ProtocolType, resp.Protocol = str("consumer"), str("range")
	resp.MemberAssignment = assignment
	return exchange(h, req, resp)
}

// heartbeat is Heartbeat v4 of generation 1.
func heartbeat(h HeaderID, group, member string) Step {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.Generation, req.MemberID = group, 1, member
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = 4
	return exchange(h, req, resp)
}

// leaveGroup is LeaveGroup v4 for one member.
func leaveGroup(h HeaderID, group, member string) Step {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 4
	req.Group = group
	rm := kmsg.NewLeaveGroupRequestMember()
	rm.MemberID = member
	req.Members = []kmsg.LeaveGroupRequestMember{rm}
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = 4
	m := kmsg.NewLeaveGroupResponseMember()
	m.MemberID = member
	resp.Members = []kmsg.LeaveGroupResponseMember{m}
	return exchange(h, req, resp)
}

// offsetFetch is OffsetFetch v7 of a group's committed offsets.
func offsetFetch(h HeaderID, group, topic string) Step {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	req.RequireStable = true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0, 1, 2}}}
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = 7
	rt := kmsg.NewOffsetFetchResponseTopic()
	rt.Topic = topic
	for p := int32(0); p < 3; p++ {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, int64(1200+40*p), 4, str("")
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = []kmsg.OffsetFetchResponseTopic{rt}
	return exchange(h, req, resp)
}

// offsetCommit is OffsetCommit v8 of generation 1.
func offsetCommit(h HeaderID, group, member, topic string, offset int64) Step {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation, req.MemberID = group, 1, member
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < 3; p++ {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, offset+int64(p), 4, str("")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = 8
	st := kmsg.NewOffsetCommitResponseTopic()
	st.Topic = topic
	for p := int32(0); p < 3; p++ {
		sp := kmsg.NewOffsetCommitResponseTopicPartition()
		sp.Partition = p
		st.Partitions = append(st.Partitions, sp)
	}
	resp.Topics = []kmsg.OffsetCommitResponseTopic{st}
	return exchange(h, req, resp)
}

// offsetDelete is OffsetDelete v0 (request header v1: never a tag 0).
func offsetDelete(group, topic string) Step {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Version = 0
	req.Group = group
	req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = 0
	resp.Topics = []kmsg.OffsetDeleteResponseTopic{{Topic: topic, Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{Partition: 0}}}}
	return exchange(NoTag, req, resp)
}

// fetch is Fetch v11 (request header v1: never a tag 0), answered with
// records when n > 0.
func fetch(topic string, offset int64, n int) Step { return fetchV(NoTag, 11, topic, offset, n) }

func fetchV(h HeaderID, v int16, topic string, offset int64, n int) Step {
	req := kmsg.NewPtrFetchRequest()
	req.Version = v
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 52428800
	req.IsolationLevel = 1
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	if v >= 13 {
		rt.TopicID = topicID(topic)
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.PartitionMaxBytes = 0, 4, offset, 1048576
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	req.Rack = "az-1"
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	resp.SessionID = 0
	st := kmsg.NewFetchResponseTopic()
	st.Topic = topic
	if v >= 13 {
		st.TopicID = rt.TopicID
	}
	sp := kmsg.NewFetchResponseTopicPartition()
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = offset+int64(n), offset+int64(n), 0
	if n > 0 {
		sp.RecordBatches = recordBatch(offset, n, topic)
	}
	st.Partitions = []kmsg.FetchResponseTopicPartition{sp}
	resp.Topics = []kmsg.FetchResponseTopic{st}
	return exchange(h, req, resp)
}

// produce is Produce v8 (request header v1: never a tag 0) of n records.
func produce(topic string, base int64, n int) Step { return produceV(NoTag, 8, topic, base, n) }

func produceV(h HeaderID, v int16, topic string, base int64, n int) Step {
	req := kmsg.NewPtrProduceRequest()
	req.Version = v
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = recordBatch(0, n, topic)
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = v
	st := kmsg.NewProduceResponseTopic()
	st.Topic = topic
	sp := kmsg.NewProduceResponseTopicPartition()
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = base, -1, 0
	st.Partitions = []kmsg.ProduceResponseTopicPartition{sp}
	resp.Topics = []kmsg.ProduceResponseTopic{st}
	return exchange(h, req, resp)
}

// batchTime is the first timestamp of every record batch (2025-01-01 12:00 UTC).
const batchTime = int64(1735732800000)

// recordBatch is a v2 record batch of n small made-up order events with a
// correct CRC-32C.
func recordBatch(first int64, n int, topic string) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{TimestampDelta64: int64(i * 3), OffsetDelta: int32(i),
			Key:   []byte("order-" + strconv.Itoa(int(first)+1000+i)),
			Value: []byte(`{"topic":"` + topic + `","item":"sku-` + strconv.Itoa(40+i%7) + `","qty":` + strconv.Itoa(1+i%3) + `}`)}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // the zero length above took one byte
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{FirstOffset: first, PartitionLeaderEpoch: -1, Magic: 2,
		LastOffsetDelta: int32(n - 1), FirstTimestamp: batchTime, MaxTimestamp: batchTime + int64(3*(n-1)),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n), Records: recs}
	out := b.AppendTo(nil)
	// Length counts the bytes after itself; the CRC covers attributes on.
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(out[17:], crc)
	return out
}

// initProducerID is InitProducerId v3 of an idempotent producer.
func initProducerID(h HeaderID) Step {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 3
	req.TransactionTimeoutMillis = 60000
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.Version = 3
	resp.ProducerID, resp.ProducerEpoch = 4001, 0
	return exchange(h, req, resp)
}

// ---- telemetry (KIP-714, KIP-1313) ----

// gtsResponse is a GetTelemetrySubscriptions v0 answer.
func gtsResponse(code int16, b kafka.UUID) *kmsg.GetTelemetrySubscriptionsResponse {
	resp := kmsg.NewPtrGetTelemetrySubscriptionsResponse()
	resp.Version = 0
	resp.ErrorCode = code
	if code == errNone {
		resp.ClientInstanceID = b
		resp.SubscriptionID = subscription
		resp.AcceptedCompressionTypes = []int8{0, 4, 3, 1} // none, zstd, lz4, gzip
		resp.PushIntervalMillis = 30000
		resp.TelemetryMaxBytes = 1048576
		resp.DeltaTemporality = true
		resp.RequestedMetrics = []string{"org.apache.kafka.producer.", "org.apache.kafka.consumer."}
	}
	return resp
}

// gtsV0 is GetTelemetrySubscriptions v0 with body ID r, answered NONE with
// ClientInstanceId b.
func gtsV0(h HeaderID, r, b kafka.UUID) Step {
	req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	req.Version = 0
	req.ClientInstanceID = r
	return exchange(h, req, gtsResponse(errNone, b))
}

// gtsV0Err is GetTelemetrySubscriptions v0 with body ID r, answered with
// an error.
func gtsV0Err(h HeaderID, r kafka.UUID, code int16) Step {
	s := gtsV0(h, r, ZERO)
	s.Resps[0].Body = gtsResponse(code, ZERO)
	return s
}

// gtsV1 is GetTelemetrySubscriptions v1 (no body ID), answered with code.
func gtsV1(h HeaderID, code int16) Step {
	req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	resp := gtsResponse(code, ZERO)
	return exchange(h, &v1Body{v0: req, cut: 0}, &v1Body{v0: resp, cut: 6})
}

// metricsPayload is a small OTLP MetricsData message: one gauge.
func metricsPayload(seq int) []byte {
	dp := protoFixed64(nil, 3, uint64(batchTime+int64(seq)*30000)*1000000) // time_unix_nano
	dp = protoDouble(dp, 4, 2.5+float64(seq))                              // as_double
	gauge := protoBytes(nil, 1, dp)                                        // data_points
	metric := protoBytes(nil, 1, []byte("org.apache.kafka.producer.record.queue.time.avg"))
	metric = protoBytes(metric, 5, gauge) // gauge
	scope := protoBytes(nil, 2, metric)   // metrics
	attr := protoBytes(nil, 1, []byte("client_id"))
	attr = protoBytes(attr, 2, protoBytes(nil, 1, []byte("orders-app")))
	resource := protoBytes(nil, 1, attr) // attributes
	rm := protoBytes(nil, 1, resource)
	rm = protoBytes(rm, 2, scope)
	return protoBytes(nil, 1, rm) // resource_metrics
}

func protoBytes(b []byte, field int, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(field<<3|2))
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func protoFixed64(b []byte, field int, v uint64) []byte {
	b = binary.AppendUvarint(b, uint64(field<<3|1))
	return binary.LittleEndian.AppendUint64(b, v)
}

func protoDouble(b []byte, field int, v float64) []byte {
	return protoFixed64(b, field, math.Float64bits(v))
}

func pushRequest(r kafka.UUID, terminating bool, seq int) *kmsg.PushTelemetryRequest {
	req := kmsg.NewPtrPushTelemetryRequest()
	req.Version = 0
	req.ClientInstanceID = r
	req.SubscriptionID = subscription
	req.Terminating = terminating
	req.Metrics = metricsPayload(seq)
	return req
}

func pushResponse(code int16) *kmsg.PushTelemetryResponse {
	resp := kmsg.NewPtrPushTelemetryResponse()
	resp.Version = 0
	resp.ErrorCode = code
	return resp
}

// pushV0 is PushTelemetry v0 with body ID r, answered with code. seq
// varies the metrics.
func pushV0(h HeaderID, r kafka.UUID, terminating bool, seq int, code int16) Step {
	return exchange(h, pushRequest(r, terminating, seq), pushResponse(code))
}

// pushV1 is PushTelemetry v1 (no body ID), answered with code.
func pushV1(h HeaderID, terminating bool, seq int, code int16) Step {
	return exchange(h, &v1Body{v0: pushRequest(ZERO, terminating, seq), cut: 0},
		&v1Body{v0: pushResponse(code), cut: -1})
}

// v1Body is a v1 body of GetTelemetrySubscriptions or PushTelemetry: the
// v0 body kmsg encodes without its 16-byte ClientInstanceId, which v1
// moved to the header (seed 001_*.txt). PushTelemetry's v1 response is its
// v0 response (cut < 0).
type v1Body struct {
	v0 interface {
		Body
		flexible
	}
	cut int // offset of ClientInstanceId in the v0 body, or -1
}

func (b *v1Body) Key() int16        { return b.v0.Key() }
func (b *v1Body) GetVersion() int16 { return 1 }
func (b *v1Body) IsFlexible() bool  { return true }

func (b *v1Body) AppendTo(dst []byte) []byte {
	full := b.v0.AppendTo(nil)
	if b.cut >= 0 {
		full = append(full[:b.cut:b.cut], full[b.cut+16:]...)
	}
	return append(dst, full...)
}

// V0 returns the kmsg message the body is cut from and where its
// ClientInstanceId was (-1: nowhere), for the round-trip test.
func (b *v1Body) V0() (Body, int) { return b.v0, b.cut }

// ---- new consumer groups (KIP-848, KIP-1082) ----

// cgh is ConsumerGroupHeartbeat: member at epoch, answered with the
// member ID to use (the broker's for v0 with an empty one) at epoch next.
func cgh(h HeaderID, v int16, group, member string, epoch int32, answerMember string, next int32) Step {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = v
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 300000
		req.SubscribedTopicNames = []string{"orders"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		req.ServerAssignor = str("uniform")
	} else {
		req.RebalanceTimeoutMillis = -1
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = v
	resp.MemberEpoch = next
	resp.HeartbeatIntervalMillis = 5000
	if answerMember != "" {
		resp.MemberID = str(answerMember)
	}
	if epoch == 0 {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID = topicID("orders")
		t.Partitions = []int32{0, 1, 2}
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{t}
		resp.Assignment = &a
	}
	return exchange(h, req, resp)
}

// cghRejected is ConsumerGroupHeartbeat answered with an error.
func cghRejected(h HeaderID, v int16, group, member string, epoch int32, code int16, msg string) Step {
	s := cgh(h, v, group, member, epoch, "", 0)
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = v
	resp.ErrorCode = code
	resp.ErrorMessage = str(msg)
	resp.MemberEpoch = 0
	s.Resps[0].Body = resp
	return s
}

// ---- SASL ----

// saslHandshake is SaslHandshake (request header v1: never a tag 0).
func saslHandshake(v int16, mechanism string) Step {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = v
	req.Mechanism = mechanism
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = v
	resp.SupportedMechanisms = []string{"PLAIN", "SCRAM-SHA-512"}
	return exchange(NoTag, req, resp)
}

// saslAuthenticate is SaslAuthenticate v2 with a SASL/PLAIN token.
func saslAuthenticate(h HeaderID, token []byte) Step {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = 2
	req.SASLAuthBytes = token
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 2
	resp.SessionLifetimeMillis = 3600000
	return exchange(h, req, resp)
}

// plainToken is a SASL/PLAIN token of a made-up demo account.
func plainToken(user string) []byte {
	return []byte("\x00" + user + "\x00" + user + "-demo-password")
}

// sizePrefixed is a SASL v0 token as it travels: int32 size, then bytes.
func sizePrefixed(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}
