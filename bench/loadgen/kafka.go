package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// The Kafka layer: bodies are encoded by franz-go's kmsg, headers and
// framing by kidscope's own decode.AppendRequest and AppendResponse, with
// the header versions of kidscope's API table.

// API versions on the wire: what current Java clients and franz-go send to
// a Kafka 4.x broker. All are flexible: request header v2, response header
// v1, except ApiVersions (response header v0).
const (
	vProduce                = 9
	vFetch                  = 13
	vMetadata               = 12
	vApiVersions            = 3
	vJoinGroup              = 9
	vSyncGroup              = 5
	vHeartbeat              = 4
	vOffsetCommit           = 8
	vOffsetCommit848        = 9
	vConsumerGroupHeartbeat = 1
	vTelemetry              = 0 // GetTelemetrySubscriptions and PushTelemetry v0: the ID travels in the body too

	errNone              = 0
	errInvalidRequest    = 42
	errMemberIDRequired  = 79
	errUnknownMemberID   = 25
	pushIntervalMillis   = 5000
	sessionTimeoutMillis = 45000
)

// headerID overrides the instance ID a request header carries.
type headerID struct {
	set bool
	has bool
	id  kafka.UUID
}

// request frames r as the next request of c: correlation ID, client ID, and
// the instance's header ID when it is a new client (or the override).
func (g *gen) request(c *conn, r kmsg.Request, over headerID) *message {
	c.corr++
	api, ok := decode.LookupAPI(r.Key())
	if !ok {
		panic(fmt.Sprintf("loadgen: API key %d not in kidscope's table", r.Key()))
	}
	h := decode.RequestHeader{
		APIKey: r.Key(), APIVersion: r.GetVersion(), CorrelationID: c.corr,
		HeaderVersion: api.RequestHeaderVersion(r.GetVersion()), ClientID: c.inst.clientID,
	}
	if c.inst.newClient {
		h.HasInstanceID, h.InstanceID = true, c.inst.hid
	}
	if over.set {
		h.HasInstanceID, h.InstanceID = over.has, over.id
	}
	g.body = r.AppendTo(g.body[:0])
	data := decode.AppendRequest(g.alloc(len(g.body)+64+len(h.ClientID)), h, g.body)
	return &message{dir: toBroker, data: data, key: r.Key(), ver: r.GetVersion(), corr: c.corr}
}

// response frames r as the answer to req.
func (g *gen) response(req *message, r kmsg.Response) *message {
	r.SetVersion(req.ver)
	api, _ := decode.LookupAPI(req.key)
	g.body = r.AppendTo(g.body[:0])
	data := decode.AppendResponse(g.alloc(len(g.body)+16), req.corr, api.ResponseHeaderVersion(req.ver), g.body)
	return &message{dir: toClient, data: data, key: req.key, ver: req.ver, corr: req.corr, resp: true}
}

// pair is a request and its answer, as exchange steps.
func pair(req, resp *message) []step {
	return []step{{kind: stepData, m: req}, {kind: stepData, m: resp}}
}

// ---- connection setup ----

func (g *gen) apiVersions(c *conn) []step {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = vApiVersions
	req.ClientSoftwareName, req.ClientSoftwareVersion = c.inst.software[0], c.inst.software[1]
	m := g.request(c, req, headerID{})
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ApiKeys = g.apiKeys
	return pair(m, g.response(m, resp))
}

func (g *gen) metadata(c *conn, over headerID) []step {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = vMetadata
	for _, t := range c.inst.topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(g.topics[t].name)
		req.Topics = append(req.Topics, rt)
	}
	m := g.request(c, req, over)
	resp := kmsg.NewPtrMetadataResponse()
	for i := range g.brokers {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = int32(i + 1)
		b.Host = fmt.Sprintf("kafka-%d.kafka.svc.cluster.local", i+1)
		b.Port = brokerPort
		b.Rack = kmsg.StringPtr(fmt.Sprintf("eu-west-1%c", 'a'+i%3))
		resp.Brokers = append(resp.Brokers, b)
	}
	resp.ClusterID = kmsg.StringPtr("kidscope-loadgen-cluster")
	resp.ControllerID = 1
	nb := int32(len(g.brokers))
	for _, ti := range c.inst.topics {
		t := &g.topics[ti]
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.TopicID = kmsg.StringPtr(t.name), t.id
		for p := int32(0); p < t.parts; p++ {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.LeaderEpoch = p, 1+p%nb, 7
			for r := int32(0); r < min(nb, 3); r++ {
				rp.Replicas = append(rp.Replicas, 1+(p+r)%nb)
			}
			rp.ISR, rp.OfflineReplicas = rp.Replicas, []int32{}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return pair(m, g.response(m, resp))
}

// ---- telemetry (KIP-714), done right ----

// getTelemetry is GetTelemetrySubscriptions v0 with body ID r; the broker
// answers code and, on success, the instance's telemetry ID (it assigns one
// when r is ZERO and echoes r otherwise, as Apache brokers do).
func (g *gen) getTelemetry(c *conn, r kafka.UUID, code int16) []step {
	in := c.inst
	req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	req.Version = vTelemetry
	req.ClientInstanceID = r
	m := g.request(c, req, headerID{})
	resp := kmsg.NewPtrGetTelemetrySubscriptionsResponse()
	resp.ErrorCode = code
	if code == errNone {
		if r == (kafka.UUID{}) {
			in.teleID = g.uuid()
		} else {
			in.teleID = r
		}
		in.subID = int32(g.rng.Uint32() >> 1)
		resp.ClientInstanceID = in.teleID
		resp.SubscriptionID = in.subID
		resp.AcceptedCompressionTypes = []int8{0, 1, 2, 3, 4}
		resp.PushIntervalMillis = pushIntervalMillis
		resp.TelemetryMaxBytes = 1 << 20
		resp.DeltaTemporality = true
		resp.RequestedMetrics = []string{"org.apache.kafka.client.", "org.apache.kafka.producer.", "org.apache.kafka.consumer."}
		c.teleReady = true
	}
	return pair(m, g.response(m, resp))
}

// pushTelemetry is PushTelemetry v0 under the instance's telemetry ID.
func (g *gen) pushTelemetry(c *conn, terminating bool) []step {
	in := c.inst
	req := kmsg.NewPtrPushTelemetryRequest()
	req.Version = vTelemetry
	req.ClientInstanceID = in.teleID
	req.SubscriptionID = in.subID
	req.Terminating = terminating
	req.Metrics = g.random(200 + g.rng.IntN(2800)) // stands in for the OTLP bytes
	m := g.request(c, req, headerID{})
	in.lastPush = g.now
	in.pushes++
	return pair(m, g.response(m, kmsg.NewPtrPushTelemetryResponse()))
}

// telemetry is the periodic exchange of an instance's telemetry
// connection: a GetTelemetrySubscriptions first when the connection has
// not had one (and every tenth time, as a subscription refresh), then a
// push. New clients send their header ID in the body; old clients send
// ZERO until a broker gave them an ID, then that ID.
func (g *gen) telemetry(c *conn) []step {
	var out []step
	if !c.teleReady || c.inst.pushes%10 == 9 {
		r := c.inst.teleID
		if c.inst.newClient {
			r = c.inst.hid
		}
		out = g.getTelemetry(c, r, errNone)
	}
	return append(out, g.pushTelemetry(c, false)...)
}

// ---- producers ----

func (g *gen) produce(c *conn, big bool) []step {
	req := kmsg.NewPtrProduceRequest()
	req.Version = vProduce
	req.Acks = -1
	req.TimeoutMillis = 30000
	resp := kmsg.NewPtrProduceResponse()
	nparts := 1
	if (big || g.rng.IntN(4) == 0) && len(c.parts) > 1 {
		nparts = 2
	}
	first := g.rng.IntN(len(c.parts))
	// The batches go to one scratch buffer; the partitions take slices of
	// it once it no longer grows.
	g.recs = g.recs[:0]
	var ends [2]int
	var counts [2]int32
	for i := 0; i < nparts; i++ {
		ps := &c.parts[(first+i)%len(c.parts)]
		size := 1024 + g.rng.IntN(63*1024+1)
		if big {
			size = 64 * 1024
		}
		g.recs, counts[i] = g.recordBatch(g.recs, 0, size, c.pid, 0, ps.seq)
		ends[i] = len(g.recs)
	}
	start := 0
	for i := 0; i < nparts; i++ {
		ps := &c.parts[(first+i)%len(c.parts)]
		t := &g.topics[ps.topic]
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = t.name
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = ps.part, g.recs[start:ends[i]]
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		start = ends[i]

		key := tp{ps.topic, ps.part}
		st := kmsg.NewProduceResponseTopic()
		st.Topic = t.name
		sp := kmsg.NewProduceResponseTopicPartition()
		sp.Partition, sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = ps.part, g.logEnd[key], -1, 0
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		g.logEnd[key] += int64(counts[i])
		ps.seq += counts[i]
	}
	m := g.request(c, req, headerID{})
	return pair(m, g.response(m, resp))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordBatch appends a magic-2 record batch of about size bytes
// (uncompressed, values from the random pool, a correct CRC-32C) and
// returns it with its record count.
func (g *gen) recordBatch(dst []byte, base int64, size int, pid int64, epoch int16, seq int32) ([]byte, int32) {
	start := len(dst)
	dst = append(dst, make([]byte, 61)...)
	ts := g.now / 1e6
	var n int32
	var delta int64
	for len(dst)-start < size || n == 0 {
		left := size - (len(dst) - start)
		vlen := 100 + g.rng.IntN(1800)
		if vlen > left-40 {
			vlen = max(left-40, 16)
		}
		klen := -1
		if g.rng.IntN(3) != 0 {
			klen = 16
		}
		delta += int64(g.rng.IntN(3))
		var head [24]byte
		h := head[:0]
		h = append(h, 0) // attributes
		h = binary.AppendVarint(h, delta)
		h = binary.AppendVarint(h, int64(n))
		h = binary.AppendVarint(h, int64(klen))
		body := len(h) + max(klen, 0) + varintLen(int64(vlen)) + vlen + 1
		dst = binary.AppendVarint(dst, int64(body))
		dst = append(dst, h...)
		if klen > 0 {
			dst = append(dst, g.random(klen)...)
		}
		dst = binary.AppendVarint(dst, int64(vlen))
		dst = append(dst, g.random(vlen)...)
		dst = append(dst, 0) // no headers
		n++
	}
	b := dst[start:]
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], 7) // partition leader epoch
	b[16] = 2                             // magic
	binary.BigEndian.PutUint16(b[21:], 0) // attributes: no compression
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts+delta))
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return dst, n
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// ---- consumers ----

// fetch is Fetch v13 in a session; the answer holds up to 1 MiB of record
// batches (at least minSize when it is not zero), or nothing in a quarter
// of the cases (a long poll that timed out).
func (g *gen) fetch(c *conn, minSize int) []step {
	req := kmsg.NewPtrFetchRequest()
	req.Version = vFetch
	req.ReplicaID = -1
	req.MaxWaitMillis = 500
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.IsolationLevel = 1
	req.SessionID, req.SessionEpoch = c.sessionID, c.sessEpoch
	if c.sessionID == 0 {
		c.sessionID = int32(g.rng.Uint32()>>1) | 1
	}
	c.sessEpoch++
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID = c.sessionID

	total := 0
	switch {
	case minSize > 0:
		total = minSize + g.rng.IntN(1<<20-minSize+1)
	case g.rng.IntN(4) != 0:
		total = int(1024 * math.Exp(g.rng.Float64()*math.Log(1024))) // log-uniform 1 KiB to 1 MiB
	}
	share := make([]int, len(c.parts))
	if total > 0 {
		k := 1 + g.rng.IntN(min(3, len(c.parts)))
		for i := 0; i < k; i++ {
			share[g.rng.IntN(len(c.parts))] += total / k
		}
	}
	g.recs = g.recs[:0]
	ends := make([]int, len(c.parts))
	for i := range c.parts {
		ps := &c.parts[i]
		for left := share[i]; left > 0; {
			n := min(left, 1024+g.rng.IntN(63*1024+1))
			if left-n < 1024 {
				n = left
			}
			var cnt int32
			g.recs, cnt = g.recordBatch(g.recs, ps.offset, n, -1, -1, -1)
			ps.offset += int64(cnt)
			left -= n
		}
		ends[i] = len(g.recs)
	}
	start := 0
	lastTopic := -1
	for i := range c.parts {
		ps := &c.parts[i]
		t := &g.topics[ps.topic]
		if ps.topic != lastTopic {
			lastTopic = ps.topic
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = t.name, t.id
			req.Topics = append(req.Topics, rt)
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = t.name, t.id
			resp.Topics = append(resp.Topics, st)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset = ps.part, 7, ps.offset
		rp.LastFetchedEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = -1, -1, 1<<20
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition, sp.PreferredReadReplica = ps.part, -1
		sp.RecordBatches = g.recs[start:ends[i]:ends[i]]
		sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		hw := ps.offset + int64(g.rng.IntN(100))
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, hw, 0
		start = ends[i]
		st := &resp.Topics[len(resp.Topics)-1]
		st.Partitions = append(st.Partitions, sp)
	}
	m := g.request(c, req, headerID{})
	return pair(m, g.response(m, resp))
}

// joinGroup is JoinGroup v9 with member ID member; the coordinator answers
// code with member ID assign (MEMBER_ID_REQUIRED, KIP-394) or the join
// (error NONE: this member leads the group, alone in this model).
func (g *gen) joinGroup(c *conn, member string, code int16, assign string) []step {
	in := c.inst
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = vJoinGroup
	req.Group = in.group
	req.SessionTimeoutMillis = sessionTimeoutMillis
	req.RebalanceTimeoutMillis = 300000
	req.MemberID = member
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "cooperative-sticky", g.subscription(in)
	req.Protocols = append(req.Protocols, p)
	m := g.request(c, req, headerID{})
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode = code
	resp.MemberID = assign
	resp.Generation = -1
	if code == errNone {
		in.generation++
		resp.Generation = in.generation
		resp.ProtocolType = kmsg.StringPtr("consumer")
		resp.Protocol = kmsg.StringPtr("cooperative-sticky")
		resp.LeaderID = assign
		mem := kmsg.NewJoinGroupResponseMember()
		mem.MemberID, mem.ProtocolMetadata = assign, p.Metadata
		resp.Members = append(resp.Members, mem)
	}
	return pair(m, g.response(m, resp))
}

// subscription is the consumer protocol's subscription metadata (v0):
// version, topics, no user data.
func (g *gen) subscription(in *instance) []byte {
	var m kmsg.ConsumerMemberMetadata // v0, no user data
	for _, t := range in.topics {
		m.Topics = append(m.Topics, g.topics[t].name)
	}
	return m.AppendTo(nil)
}

func (g *gen) syncGroup(c *conn) []step {
	in := c.inst
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = vSyncGroup
	req.Group, req.Generation, req.MemberID = in.group, in.generation, in.member
	req.ProtocolType = kmsg.StringPtr("consumer")
	req.Protocol = kmsg.StringPtr("cooperative-sticky")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = in.member, g.assignment(c)
	req.GroupAssignment = append(req.GroupAssignment, a)
	m := g.request(c, req, headerID{})
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
	resp.MemberAssignment = a.MemberAssignment
	return pair(m, g.response(m, resp))
}

// assignment is the consumer protocol's assignment (v0) of c's partitions.
func (g *gen) assignment(c *conn) []byte {
	var a kmsg.ConsumerMemberAssignment // v0, no user data
	for _, ps := range c.parts {
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic, t.Partitions = g.topics[ps.topic].name, []int32{int32(ps.part)}
		a.Topics = append(a.Topics, t)
	}
	return a.AppendTo(nil)
}

func (g *gen) heartbeat(c *conn) []step {
	in := c.inst
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = vHeartbeat
	req.Group, req.Generation, req.MemberID = in.group, in.generation, in.member
	m := g.request(c, req, headerID{})
	return pair(m, g.response(m, kmsg.NewPtrHeartbeatResponse()))
}

// consumerHeartbeat is ConsumerGroupHeartbeat v1 (KIP-848, with the
// client-generated member IDs of KIP-1082); the coordinator answers code
// and, on success, the member's next epoch.
func (g *gen) consumerHeartbeat(c *conn, member string, epoch int32, code int16) []step {
	in := c.inst
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = vConsumerGroupHeartbeat
	req.Group, req.MemberID, req.MemberEpoch = in.group, member, epoch
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 300000
		for _, t := range in.topics {
			req.SubscribedTopicNames = append(req.SubscribedTopicNames, g.topics[t].name)
		}
		req.ServerAssignor = kmsg.StringPtr("uniform")
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	m := g.request(c, req, headerID{})
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.ErrorCode = code
	resp.HeartbeatIntervalMillis = pushIntervalMillis
	switch code {
	case errNone:
		resp.MemberID = kmsg.StringPtr(member)
		if epoch == 0 {
			in.generation++
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			for _, ps := range c.parts {
				t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
				t.TopicID, t.Partitions = g.topics[ps.topic].id, []int32{ps.part}
				a.Topics = append(a.Topics, t)
			}
			resp.Assignment = &a
		}
		resp.MemberEpoch = in.generation
	case errInvalidRequest:
		resp.ErrorMessage = kmsg.StringPtr("MemberId can't be empty.")
	default:
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Member %s is not a member of group %s.", member, in.group))
	}
	return pair(m, g.response(m, resp))
}

func (g *gen) offsetCommit(c *conn) []step {
	in := c.inst
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = vOffsetCommit
	if c.role == roleGroup848 {
		req.Version = vOffsetCommit848
	}
	req.Group, req.Generation, req.MemberID = in.group, in.generation, in.member
	resp := kmsg.NewPtrOffsetCommitResponse()
	lastTopic := -1
	for i := range c.parts {
		ps := &c.parts[i]
		if ps.topic != lastTopic {
			lastTopic = ps.topic
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = g.topics[ps.topic].name
			req.Topics = append(req.Topics, rt)
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			resp.Topics = append(resp.Topics, st)
		}
		ps.offset += int64(g.rng.IntN(4000))
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = ps.part, ps.offset, 7, kmsg.StringPtr("")
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
		sp := kmsg.NewOffsetCommitResponseTopicPartition()
		sp.Partition = ps.part
		st := &resp.Topics[len(resp.Topics)-1]
		st.Partitions = append(st.Partitions, sp)
	}
	m := g.request(c, req, headerID{})
	return pair(m, g.response(m, resp))
}

// apiKeyTable is what a Kafka 4.1 broker advertises: every key kmsg knows
// up to 80, telemetry (71, 72) included.
func apiKeyTable() []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for k := int16(0); k <= 80; k++ {
		r := kmsg.RequestForKey(k)
		if r == nil {
			continue
		}
		a := kmsg.NewApiVersionsResponseApiKey()
		a.ApiKey, a.MaxVersion = k, r.MaxVersion()
		out = append(out, a)
	}
	return out
}

// memberID is a KIP-1082 client-generated member ID: a random UUID in
// Kafka's text form.
func (g *gen) memberID() string {
	return g.uuid().String()
}
