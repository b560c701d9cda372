package synth

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/samples/netsim"
)

// Sizes of the large messages of Standard.
const (
	ProduceRecords = 6000  // bytes of record batches in the Produce request: five segments
	FetchRecords   = 40000 // bytes of record batches in the Fetch response: 28 segments
)

// Seg bends the segments of the messages of Standard, by label.
type Seg map[string][]netsim.SegOpt

func str(s string) *string { return &s }

// Standard writes a client's typical conversation: ApiVersions v3 (whose
// response uses header v0), Metadata v12, GetTelemetrySubscriptions v0,
// a multi-KB Produce v9 pipelined with PushTelemetry v0, JoinGroup v9
// answered MEMBER_ID_REQUIRED and the rejoin, a Fetch v12 with a large
// response, three small non-flexible requests in one segment answered by
// three responses in one segment, and a closing Metadata v12. Every request
// from Metadata on carries InstanceID except the batch and the last one.
// seg bends chosen messages' segments.
func (c *Conn) Standard(seg Seg) {
	corr := c.Request("apiversions", &kmsg.ApiVersionsRequest{ClientSoftwareName: "kidscope-synth", ClientSoftwareVersion: "1.0"}, 3, false, seg["apiversions"]...)
	c.Respond("apiversions-resp", corr, &kmsg.ApiVersionsResponse{ApiKeys: []kmsg.ApiVersionsResponseApiKey{
		{ApiKey: 0, MaxVersion: 11}, {ApiKey: 1, MaxVersion: 16}, {ApiKey: 3, MaxVersion: 12}, {ApiKey: 11, MaxVersion: 9},
		{ApiKey: 18, MaxVersion: 4}, {ApiKey: 71, MaxVersion: 0}, {ApiKey: 72, MaxVersion: 0}}}, seg["apiversions-resp"]...)

	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: str("orders")}}
	corr = c.Request("metadata", md, 12, true, seg["metadata"]...)
	mdr := kmsg.NewPtrMetadataResponse()
	mdr.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "broker-1.kafka.internal", Port: 9092}}
	mdr.ClusterID = str("synth-cluster")
	mdr.Topics = []kmsg.MetadataResponseTopic{{Topic: str("orders"), TopicID: [16]byte{1, 2, 3},
		Partitions: []kmsg.MetadataResponseTopicPartition{{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}}}
	c.Respond("metadata-resp", corr, mdr, seg["metadata-resp"]...)

	corr = c.Request("gts", &kmsg.GetTelemetrySubscriptionsRequest{ClientInstanceID: InstanceID}, 0, true, seg["gts"]...)
	c.Respond("gts-resp", corr, &kmsg.GetTelemetrySubscriptionsResponse{ClientInstanceID: InstanceID, SubscriptionID: 7,
		AcceptedCompressionTypes: []int8{0}, PushIntervalMillis: 30000, TelemetryMaxBytes: 1 << 20,
		RequestedMetrics: []string{"org.apache.kafka.producer."}}, seg["gts-resp"]...)

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 30000
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders",
		Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: Records(ProduceRecords, 1)}}}}
	pcorr := c.Request("produce", produce, 9, true, seg["produce"]...)
	push := &kmsg.PushTelemetryRequest{ClientInstanceID: InstanceID, SubscriptionID: 7, Metrics: []byte("otlp metrics")}
	qcorr := c.Request("push", push, 0, true, seg["push"]...)
	pr := kmsg.NewPtrProduceResponse()
	pr.Topics = []kmsg.ProduceResponseTopic{{Topic: "orders", Partitions: []kmsg.ProduceResponseTopicPartition{{Partition: 0, BaseOffset: 42}}}}
	c.Respond("produce-resp", pcorr, pr, seg["produce-resp"]...)
	c.Respond("push-resp", qcorr, &kmsg.PushTelemetryResponse{}, seg["push-resp"]...)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "billing", 45000, 60000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: []byte{0, 3, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's'}}}
	corr = c.Request("join", join, 9, true, seg["join"]...)
	c.Respond("join-resp", corr, &kmsg.JoinGroupResponse{ErrorCode: 79, Generation: -1, MemberID: "synth-1-4f3c"}, seg["join-resp"]...)
	join.MemberID = "synth-1-4f3c"
	corr = c.Request("rejoin", join, 9, true, seg["rejoin"]...)
	c.Respond("rejoin-resp", corr, &kmsg.JoinGroupResponse{Generation: 1, Protocol: str("cooperative-sticky"),
		LeaderID: "synth-1-4f3c", MemberID: "synth-1-4f3c"}, seg["rejoin-resp"]...)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 500, 1, 50<<20
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	corr = c.Request("fetch", fetch, 12, true, seg["fetch"]...)
	fr := kmsg.NewPtrFetchResponse()
	fr.Topics = []kmsg.FetchResponseTopic{{Topic: "orders", Partitions: []kmsg.FetchResponseTopicPartition{{Partition: 0,
		HighWatermark: 100, LastStableOffset: 100, PreferredReadReplica: -1, RecordBatches: Records(FetchRecords, 2)}}}}
	c.Respond("fetch-resp", corr, fr, seg["fetch-resp"]...)

	// Several frames per segment: three small requests in one write, and
	// their three responses in one write.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "billing", 1, "synth-1-4f3c"
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "orders", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}}}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "billing"
	batch := []Frame{c.NewRequest("batch-heartbeat", hb, 3, false), c.NewRequest("batch-listoffsets", lo, 5, false),
		c.NewRequest("batch-findcoordinator", fc, 2, false)}
	c.Send(batch, seg["batch"]...)
	hbr := kmsg.NewPtrHeartbeatResponse()
	lor := kmsg.NewPtrListOffsetsResponse()
	fcr := kmsg.NewPtrFindCoordinatorResponse()
	fcr.Host, fcr.Port = "broker-1.kafka.internal", 9092
	c.Send([]Frame{c.NewResponse("batch-heartbeat-resp", batch[0].msg.Corr, hbr),
		c.NewResponse("batch-listoffsets-resp", batch[1].msg.Corr, lor),
		c.NewResponse("batch-findcoordinator-resp", batch[2].msg.Corr, fcr)}, seg["batch-resp"]...)

	corr = c.Request("metadata2", md, 12, false, seg["metadata2"]...)
	c.Respond("metadata2-resp", corr, mdr, seg["metadata2-resp"]...)
}

// Short writes a short exchange: Metadata v12 with InstanceID and its
// response, then ApiVersions v3 and its response.
func (c *Conn) Short(label string) {
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: str("orders")}}
	corr := c.Request(label+"metadata", md, 12, true)
	c.Respond(label+"metadata-resp", corr, kmsg.NewPtrMetadataResponse())
	corr = c.Request(label+"apiversions", &kmsg.ApiVersionsRequest{ClientSoftwareName: "kidscope-synth", ClientSoftwareVersion: "1.0"}, 3, false)
	c.Respond(label+"apiversions-resp", corr, &kmsg.ApiVersionsResponse{ApiKeys: []kmsg.ApiVersionsResponseApiKey{{ApiKey: 3, MaxVersion: 12}}})
}
