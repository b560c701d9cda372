package decode

import (
	"bytes"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wire is a test conversation: the bytes of each side and, for every frame
// written, the side, offset where it ends and what it is.
type wire struct {
	side  [2][]byte
	items []item
}

type item struct {
	side kafka.Direction
	end  int // offset in side's bytes just past the frame
	key  int16
	ver  int16
	corr int32
}

var testID = kafka.UUID{0x5e, 0x11, 0x7a, 0x3d, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0xaa, 0xbb, 0xcc}

func (w *wire) request(key, ver int16, corr int32, clientID string, id *kafka.UUID, body kmsg.Request) {
	api, ok := LookupAPI(key)
	if !ok {
		panic(fmt.Sprintf("no api %d", key))
	}
	h := RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: corr, HeaderVersion: api.RequestHeaderVersion(ver), ClientID: clientID}
	if id != nil {
		h.InstanceID, h.HasInstanceID = *id, true
	}
	var b []byte
	if body != nil {
		body.SetVersion(ver)
		b = body.AppendTo(nil)
	}
	w.side[kafka.ToBroker] = AppendRequest(w.side[kafka.ToBroker], h, b)
	w.items = append(w.items, item{kafka.ToBroker, len(w.side[kafka.ToBroker]), key, ver, corr})
}

func (w *wire) response(key, ver int16, corr int32, body kmsg.Response) {
	api, _ := LookupAPI(key)
	var b []byte
	if body != nil {
		body.SetVersion(ver)
		b = body.AppendTo(nil)
	}
	w.side[kafka.ToClient] = AppendResponse(w.side[kafka.ToClient], corr, api.ResponseHeaderVersion(ver), b)
	w.items = append(w.items, item{kafka.ToClient, len(w.side[kafka.ToClient]), key, ver, corr})
}

// conversation is a client's typical opening plus the APIs the rules read.
func conversation() *wire {
	w := &wire{}
	id := testID
	w.request(18, 3, 0, "kgo", nil, &kmsg.ApiVersionsRequest{ClientSoftwareName: "kgo", ClientSoftwareVersion: "1"})
	av := &kmsg.ApiVersionsResponse{ApiKeys: []kmsg.ApiVersionsResponseApiKey{{ApiKey: 71, MaxVersion: 1}, {ApiKey: 72, MaxVersion: 1}}}
	w.response(18, 3, 0, av)
	w.request(3, 12, 1, "kgo", &id, &kmsg.MetadataRequest{})
	w.response(3, 12, 1, &kmsg.MetadataResponse{})
	w.request(71, 0, 2, "kgo", &id, &kmsg.GetTelemetrySubscriptionsRequest{ClientInstanceID: id})
	w.response(71, 0, 2, &kmsg.GetTelemetrySubscriptionsResponse{ClientInstanceID: id, SubscriptionID: 7})
	produce := &kmsg.ProduceRequest{Acks: -1, TimeoutMillis: 1000, Topics: []kmsg.ProduceRequestTopic{{Topic: "t",
		Partitions: []kmsg.ProduceRequestTopicPartition{{Records: bytes.Repeat([]byte{0}, 5000)}}}}}
	w.request(0, 9, 3, "kgo", &id, produce)
	w.request(72, 0, 4, "kgo", &id, &kmsg.PushTelemetryRequest{ClientInstanceID: id, SubscriptionID: 7, Terminating: true, CompressionType: 4, Metrics: []byte("secret")})
	w.response(0, 9, 3, &kmsg.ProduceResponse{})
	w.response(72, 0, 4, &kmsg.PushTelemetryResponse{ErrorCode: 42})
	w.request(11, 9, 5, "kgo", &id, &kmsg.JoinGroupRequest{Group: "g", ProtocolType: "consumer"})
	w.response(11, 9, 5, &kmsg.JoinGroupResponse{ErrorCode: 79, MemberID: "m-1"})
	w.request(68, 1, 6, "kgo", &id, &kmsg.ConsumerGroupHeartbeatRequest{Group: "g", MemberID: "", MemberEpoch: 0})
	w.response(68, 1, 6, &kmsg.ConsumerGroupHeartbeatResponse{ErrorCode: 42})
	return w
}

// feed sends the conversation through a Conn in chunks: each side's bytes
// cut at the given offsets, fed in the order the items complete, each chunk
// tagged with a frame number = its chunk index + 1 (per side: side*1000+).
func feed(c *Conn, w *wire, cuts [2][]int) []Event {
	var out []Event
	var pos [2]int
	chunk := [2]int{}
	deliver := func(s kafka.Direction, upto int) {
		for pos[s] < upto {
			end := upto
			for _, cut := range cuts[s] {
				if cut > pos[s] && cut < end {
					end = cut
					break
				}
			}
			chunk[s]++
			frame := int64(int(s)*1000 + chunk[s])
			out = append(out, c.Feed(s, w.side[s][pos[s]:end], []kafka.Span{{End: end - pos[s], At: kafka.FrameRef{Frame: frame}}})...)
			pos[s] = end
		}
	}
	for _, it := range w.items {
		deliver(it.side, it.end)
	}
	return append(out, c.Finish()...)
}

func messages(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind == EventRequest || e.Kind == EventResponse {
			out = append(out, e)
		}
	}
	return out
}

func TestConnWholeConversation(t *testing.T) {
	w := conversation()
	c := NewConn(Options{})
	c.Start(kafka.ToBroker, false)
	c.Start(kafka.ToClient, false)
	evs := feed(c, w, [2][]int{})
	msgs := messages(evs)
	if len(msgs) != len(w.items) {
		t.Fatalf("got %d messages, want %d: %+v", len(msgs), len(w.items), evs)
	}
	for i, it := range w.items {
		m := msgs[i]
		if m.Side != it.side || m.Msg.Request.APIKey != it.key || m.Msg.Request.APIVersion != it.ver || m.Msg.Request.CorrelationID != it.corr {
			t.Errorf("message %d: got side %v key %d v%d corr %d, want %v key %d v%d corr %d", i, m.Side,
				m.Msg.Request.APIKey, m.Msg.Request.APIVersion, m.Msg.Request.CorrelationID, it.side, it.key, it.ver, it.corr)
		}
		if m.Side == kafka.ToClient && !m.Msg.Matched {
			t.Errorf("response %d not matched", i)
		}
		if m.Msg.BodyErr != nil {
			t.Errorf("message %d: body error %v", i, m.Msg.BodyErr)
		}
	}
	byKey := func(side kafka.Direction, key int16) Message {
		for _, m := range msgs {
			if m.Side == side && m.Msg.Request.APIKey == key {
				return m.Msg
			}
		}
		t.Fatalf("no %v of key %d", side, key)
		return Message{}
	}
	if m := byKey(kafka.ToBroker, 18); m.Request.HasInstanceID || m.Request.ClientID != "kgo" || m.Request.HeaderVersion != 2 {
		t.Errorf("ApiVersions header: %+v", m.Request)
	}
	if m := byKey(kafka.ToClient, 18); !m.HasErrorCode || m.ErrorCode != 0 || len(m.Body.APIVersions) != 2 || m.Response.HeaderVersion != 0 {
		t.Errorf("ApiVersions response: %+v", m)
	}
	if m := byKey(kafka.ToBroker, 3); !m.Request.HasInstanceID || m.Request.InstanceID != testID {
		t.Errorf("Metadata header instance ID: %+v", m.Request)
	}
	if m := byKey(kafka.ToBroker, 71); !m.HasBody || m.Body.InstanceID != testID {
		t.Errorf("GetTelemetrySubscriptions body: %+v", m)
	}
	if m := byKey(kafka.ToClient, 71); m.Body.InstanceID != testID || m.Body.SubscriptionID != 7 || m.Response.HeaderVersion != 1 {
		t.Errorf("GetTelemetrySubscriptions response: %+v", m)
	}
	if m := byKey(kafka.ToBroker, 72); !m.Body.Terminating || m.Body.SubscriptionID != 7 || m.Body.CompressionType != 4 || m.Body.MetricsLength != 6 {
		t.Errorf("PushTelemetry body: %+v", m.Body)
	}
	if m := byKey(kafka.ToClient, 72); m.ErrorCode != 42 {
		t.Errorf("PushTelemetry response code %d", m.ErrorCode)
	}
	if m := byKey(kafka.ToClient, 11); m.ErrorCode != 79 || m.Body.MemberID != "m-1" {
		t.Errorf("JoinGroup response: %+v", m)
	}
	if m := byKey(kafka.ToBroker, 68); m.Body.GroupID != "g" || m.Body.MemberID != "" {
		t.Errorf("ConsumerGroupHeartbeat body: %+v", m.Body)
	}
	if n := c.Outcome().Counters; n.Requests != 7 || n.Responses != 7 || n.Unmatched != 0 || n.Resyncs != 0 || n.Malformed != 0 {
		t.Errorf("counters %+v", n)
	}
}

// TestConnSplitAtEveryOffset cuts the client side of the conversation in
// two at every byte offset of its first three frames (headers and the tag-0
// UUID included) and requires the same messages, each completed at the
// chunk holding its last byte.
func TestConnSplitAtEveryOffset(t *testing.T) {
	w := conversation()
	want := messages(feed(NewConn(Options{}), w, [2][]int{}))
	limit := w.items[4].end // through the GetTelemetrySubscriptions request
	for cut := 1; cut < limit; cut++ {
		c := NewConn(Options{})
		got := messages(feed(c, w, [2][]int{{cut}, {cut}}))
		if len(got) != len(want) {
			t.Fatalf("cut %d: %d messages, want %d", cut, len(got), len(want))
		}
		for i := range got {
			g, x := got[i].Msg, want[i].Msg
			if g.Request != x.Request || g.Body.InstanceID != x.Body.InstanceID || g.ErrorCode != x.ErrorCode {
				t.Fatalf("cut %d message %d: %+v, want %+v", cut, i, g.Request, x.Request)
			}
		}
		if n := c.Outcome().Counters; n.Resyncs != 0 || n.Malformed != 0 {
			t.Fatalf("cut %d: counters %+v", cut, n)
		}
	}
}

// TestConnFrameNumbers checks that a message completes at the frame holding
// its last byte when split across several chunks.
func TestConnFrameNumbers(t *testing.T) {
	w := conversation()
	c := NewConn(Options{})
	// Cut the client side at every 100 bytes: the frame number of a request
	// is the index of the chunk holding its last byte.
	var cuts []int
	for k := 100; k < len(w.side[kafka.ToBroker]); k += 100 {
		cuts = append(cuts, k)
	}
	evs := messages(feed(c, w, [2][]int{cuts, nil}))
	for _, e := range evs {
		if e.Side != kafka.ToBroker {
			continue
		}
		var end int
		for _, it := range w.items {
			if it.side == kafka.ToBroker && it.corr == e.Msg.Request.CorrelationID {
				end = it.end
			}
		}
		// chunk index of byte end-1: chunks are cut at every cut in cuts
		// and at every item end; count the boundaries before it.
		bounds := map[int]bool{}
		for _, k := range cuts {
			bounds[k] = true
		}
		for _, it := range w.items {
			if it.side == kafka.ToBroker {
				bounds[it.end] = true
			}
		}
		idx := int64(1)
		for b := range bounds {
			if b <= end-1 {
				idx++
			}
		}
		if e.At.Frame != idx {
			t.Errorf("request corr %d completed at frame %d, want %d", e.Msg.Request.CorrelationID, e.At.Frame, idx)
		}
	}
}

// TestConnMidStream starts both sides inside the produce request and its
// response: the decoder must find every later request and response.
func TestConnMidStream(t *testing.T) {
	w := conversation()
	startReq := w.items[6].end - 2500 // inside the Produce request body (zeros)
	var startResp int
	for _, it := range w.items {
		if it.side == kafka.ToClient && it.corr == 2 {
			startResp = it.end - 3
		}
	}
	c := NewConn(Options{})
	c.Start(kafka.ToBroker, true)
	c.Start(kafka.ToClient, true)
	var got []Event
	got = append(got, c.Feed(kafka.ToBroker, w.side[kafka.ToBroker][startReq:], []kafka.Span{{End: len(w.side[kafka.ToBroker]) - startReq, At: kafka.FrameRef{Frame: 1}}})...)
	got = append(got, c.Feed(kafka.ToClient, w.side[kafka.ToClient][startResp:], []kafka.Span{{End: len(w.side[kafka.ToClient]) - startResp, At: kafka.FrameRef{Frame: 2}}})...)
	got = append(got, c.Finish()...)
	var keys []string
	for _, e := range messages(got) {
		corr := e.Msg.Request.CorrelationID
		if e.Side == kafka.ToClient {
			corr = e.Msg.Response.CorrelationID
		}
		keys = append(keys, fmt.Sprintf("%v:%d/%d", e.Side.Carries(), e.Msg.Request.APIKey, corr))
	}
	// The produce response (corr 3) answers a request whose start the
	// capture missed: it is found by the response after it, unmatched, so
	// without an API key.
	want := "request:72/4 request:11/5 request:68/6 response:0/3 response:72/4 response:11/5 response:68/6"
	if strings.Join(keys, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(keys, " "), want)
	}
}

// TestConnGap loses a stretch of the client side inside a frame and
// resynchronises on the next request.
func TestConnGap(t *testing.T) {
	w := conversation()
	c := NewConn(Options{})
	cs := w.side[kafka.ToBroker]
	cut1 := w.items[2].end + 10  // inside the Metadata request... after it: inside GetTelemetrySubscriptions
	cut2 := w.items[4].end + 100 // inside the Produce request
	var got []Event
	got = append(got, c.Feed(kafka.ToBroker, cs[:cut1], []kafka.Span{{End: cut1, At: kafka.FrameRef{Frame: 1}}})...)
	c.Lost(kafka.ToBroker)
	got = append(got, c.Feed(kafka.ToBroker, cs[cut2:], []kafka.Span{{End: len(cs) - cut2, At: kafka.FrameRef{Frame: 2}}})...)
	got = append(got, c.Finish()...)
	var keys []int16
	resyncs := 0
	for _, e := range got {
		switch e.Kind {
		case EventRequest:
			keys = append(keys, e.Msg.Request.APIKey)
		case EventResync:
			resyncs++
		}
	}
	if fmt.Sprint(keys) != "[18 3 72 11 68]" || resyncs != 1 {
		t.Errorf("keys %v resyncs %d", keys, resyncs)
	}
}

func TestConnTLS(t *testing.T) {
	c := NewConn(Options{})
	c.Start(kafka.ToBroker, false)
	evs := c.Feed(kafka.ToBroker, []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}, []kafka.Span{{End: 11, At: kafka.FrameRef{Frame: 4}}})
	if len(evs) != 1 || evs[0].Kind != EventNotKafka || evs[0].Reason != "TLS" || evs[0].At.Frame != 4 {
		t.Fatalf("events %+v", evs)
	}
	if evs := c.Feed(kafka.ToBroker, []byte{0, 0, 0, 10, 0, 3, 0, 1}, []kafka.Span{{End: 8}}); len(evs) != 0 {
		t.Fatalf("a TLS connection still decoded: %+v", evs)
	}
}

func TestConnMidStreamTLS(t *testing.T) {
	c := NewConn(Options{})
	c.Start(kafka.ToBroker, true)
	var b []byte
	for i := 0; i < 3; i++ {
		b = append(b, 0x17, 0x03, 0x03, 0x00, 0x20)
		b = append(b, bytes.Repeat([]byte{0xab}, 0x20)...)
	}
	evs := c.Feed(kafka.ToBroker, b[7:], []kafka.Span{{End: len(b) - 7, At: kafka.FrameRef{Frame: 9}}})
	if len(evs) != 1 || evs[0].Kind != EventNotKafka || evs[0].Reason != "TLS" {
		t.Fatalf("events %+v", evs)
	}
}

// TestConnNotKafka: a client that sends no Kafka frame is named not Kafka
// when its stream ends, or after notKafkaAfter bytes; unless it began
// mid-stream, where those bytes may all be the tail of one large message
// (only TLS records count then, TestConnMidStreamTLS).
func TestConnNotKafka(t *testing.T) {
	http := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	long := bytes.Repeat([]byte("x"), notKafkaAfter+1000)
	for _, c := range []struct {
		name     string
		midStart bool
		data     []byte
		want     int
	}{
		{"whole stream, ends", false, http, 1},
		{"whole stream, long", false, long, 1},
		{"mid-stream, ends", true, http, 0},
		{"mid-stream, long", true, long, 0},
	} {
		conn := NewConn(Options{})
		conn.Start(kafka.ToBroker, c.midStart)
		evs := append([]Event(nil), conn.Feed(kafka.ToBroker, c.data, []kafka.Span{{End: len(c.data), At: kafka.FrameRef{Frame: 1}}})...)
		evs = append(evs, conn.Finish()...)
		var notKafka int
		for _, e := range evs {
			if e.Kind == EventNotKafka {
				notKafka++
			}
			if e.Kind == EventRequest {
				t.Errorf("%s: decoded as a request: %+v", c.name, e)
			}
		}
		if notKafka != c.want {
			t.Errorf("%s: %d not-Kafka events, want %d: %+v", c.name, notKafka, c.want, evs)
		}
	}
}

// TestConnSASLv0 checks that tokens after SaslHandshake v0 are counted,
// not parsed, and that requests after them decode again.
func TestConnSASLv0(t *testing.T) {
	w := &wire{}
	w.request(17, 0, 1, "java", nil, &kmsg.SASLHandshakeRequest{Mechanism: "PLAIN"})
	w.response(17, 0, 1, &kmsg.SASLHandshakeResponse{SupportedMechanisms: []string{"PLAIN"}})
	token := []byte("\x00alice\x00password-that-must-not-show")
	w.side[kafka.ToBroker] = binaryAppendFrame(w.side[kafka.ToBroker], token)
	w.items = append(w.items, item{side: kafka.ToBroker, end: len(w.side[kafka.ToBroker])})
	w.side[kafka.ToClient] = binaryAppendFrame(w.side[kafka.ToClient], nil)
	w.items = append(w.items, item{side: kafka.ToClient, end: len(w.side[kafka.ToClient])})
	w.request(3, 1, 2, "java", nil, &kmsg.MetadataRequest{})
	w.response(3, 1, 2, &kmsg.MetadataResponse{})
	c := NewConn(Options{})
	evs := feed(c, w, [2][]int{})
	var kinds []string
	for _, e := range evs {
		switch e.Kind {
		case EventSASLToken:
			kinds = append(kinds, "token")
		case EventRequest, EventResponse:
			kinds = append(kinds, fmt.Sprintf("%v:%d", e.Side.Carries(), e.Msg.Request.APIKey))
		default:
			kinds = append(kinds, fmt.Sprint(e.Kind, e.Err))
		}
	}
	if got := strings.Join(kinds, " "); got != "request:17 response:17 token token request:3 response:3" {
		t.Errorf("got %s", got)
	}
	if n := c.Outcome().Counters; n.SASLTokens != 2 || n.Malformed != 0 {
		t.Errorf("counters %+v", n)
	}
}

func binaryAppendFrame(dst, b []byte) []byte {
	dst = append(dst, byte(len(b)>>24), byte(len(b)>>16), byte(len(b)>>8), byte(len(b)))
	return append(dst, b...)
}

// TestConnApiVersionsUnsupported: a broker answers an ApiVersions version it
// does not know with a v0 body carrying UNSUPPORTED_VERSION.
func TestConnApiVersionsUnsupported(t *testing.T) {
	w := &wire{}
	w.request(18, 5, 0, "new", nil, &kmsg.ApiVersionsRequest{ClientSoftwareName: "x", ClientSoftwareVersion: "1"})
	w.response(18, 0, 0, &kmsg.ApiVersionsResponse{ErrorCode: 35, ApiKeys: []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 3}}})
	w.items[1].ver = 5
	evs := messages(feed(NewConn(Options{}), w, [2][]int{}))
	if len(evs) != 2 {
		t.Fatalf("events %+v", evs)
	}
	m := evs[1].Msg
	if m.BodyErr != nil || m.ErrorCode != 35 || len(m.Body.APIVersions) != 1 {
		t.Errorf("response %+v", m)
	}
}

// TestConnRandomChunks feeds the conversation in random chunks, both sides
// interleaved, and requires exactly the messages written.
func TestConnRandomChunks(t *testing.T) {
	w := conversation()
	r := rand.New(rand.NewPCG(1, 2))
	for run := 0; run < 200; run++ {
		var cuts [2][]int
		for s := range cuts {
			for k := r.IntN(20); k < len(w.side[s]); k += 1 + r.IntN(300) {
				cuts[s] = append(cuts[s], k)
			}
		}
		c := NewConn(Options{})
		got := messages(feed(c, w, cuts))
		if len(got) != len(w.items) {
			t.Fatalf("run %d: %d messages, want %d", run, len(got), len(w.items))
		}
		if n := c.Outcome().Counters; n.Resyncs != 0 || n.Malformed != 0 || n.Unmatched != 0 {
			t.Fatalf("run %d: counters %+v", run, n)
		}
	}
}

// TestScanBudget: many connections that join inside large messages share
// a scan budget; together they keep no more than it (and a header's worth
// each), every byte counted, and give it all back when they finish.
func TestScanBudget(t *testing.T) {
	budget := &ScanBudget{Max: 16 << 10}
	noise := make([]byte, 8<<10)
	for i := range noise {
		noise[i] = byte(i*7 + i>>8) // sizes far over any frame: no candidate waits
	}
	// A plausible response start whose evidence (the response after it)
	// lies 50,000 bytes on: the side keeps everything from it meanwhile.
	copy(noise[100:], []byte{0, 0, 0xc3, 0x50, 0, 0, 0, 7})
	var conns []*Conn
	for range 40 {
		c := NewConn(Options{ScanBudget: budget})
		c.Start(kafka.ToClient, true)
		conns = append(conns, c)
	}
	for round := range 4 {
		kept := 0
		for i, c := range conns {
			c.Feed(kafka.ToClient, noise, []kafka.Span{{End: len(noise), At: kafka.FrameRef{Frame: int64(round*100 + i)}}})
			if ls := c.side[kafka.ToClient].lostState; ls != nil {
				kept += len(ls.scan)
			}
		}
		if budget.used != int64(kept) {
			t.Fatalf("round %d: the budget counts %d, the scans hold %d", round, budget.used, kept)
		}
		if limit := budget.Max + 40*minScanKeep; budget.used > limit {
			t.Fatalf("round %d: %d bytes kept, over %d", round, budget.used, limit)
		}
	}
	if budget.used < budget.Max/2 {
		t.Fatalf("only %d bytes kept: the test does not press on the budget", budget.used)
	}
	for _, c := range conns {
		c.Finish()
	}
	if budget.used != 0 {
		t.Errorf("%d bytes still counted after every connection finished", budget.used)
	}
}

// TestBytesAtMost compares the eight-bytes-at-once test of the resync scan
// with one byte at a time: the lowest byte it flags must be the lowest
// byte at most the bound (the scan would otherwise skip a frame start, or
// stop where none can be), for every bound the scan uses.
func TestBytesAtMost(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []uint64{0, ^uint64(0), 0x8080808080808080, 0x7f7f7f7f7f7f7f7f, 0x0100000000000000, 0x00ffffffffffffff}
	for range 200000 {
		x := rng.Uint64()
		// Put a few bytes near the bounds.
		for range rng.IntN(3) {
			x = x&^(0xff<<(8*rng.IntN(8))) | uint64(rng.IntN(130))<<(8*rng.IntN(8))
		}
		words = append(words, x)
	}
	for n := range byte(128) {
		for _, x := range words {
			want := 8 // the lowest byte at most n, 8 for none
			for i := 7; i >= 0; i-- {
				if byte(x>>(8*i)) <= n {
					want = i
				}
			}
			got := 8
			if m := bytesAtMost(x, n); m != 0 {
				got = bits.TrailingZeros64(m) / 8
			}
			if got != want {
				t.Fatalf("bytesAtMost(%#016x, %d) flags byte %d first, want %d", x, n, got, want)
			}
		}
	}
}

// TestScanLimit: a spent budget still lets a lost side keep minScanKeep
// bytes, but never more than MaxScan.
func TestScanLimit(t *testing.T) {
	for _, c := range []struct {
		maxScan, budget int
		want            int
	}{
		{1 << 20, 1 << 30, 1 << 20},
		{1 << 20, 1000, 1000},
		{1 << 20, 1, minScanKeep},
		{16, 1, 16},
	} {
		conn := NewConn(Options{MaxScan: c.maxScan, ScanBudget: &ScanBudget{Max: int64(c.budget)}})
		if got := conn.scanLimit(&conn.side[kafka.ToBroker]); got != c.want {
			t.Errorf("MaxScan %d, budget %d: limit %d, want %d", c.maxScan, c.budget, got, c.want)
		}
	}
}

// Add must add every counter: a field added to Counters and forgotten in
// Add would read 0 in the run's summary.
func TestCountersAddEveryField(t *testing.T) {
	var one, sum Counters
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
	}
	sum.Add(one)
	sum.Add(one)
	got := reflect.ValueOf(sum)
	for i := range got.NumField() {
		if got.Field(i).Int() != int64(2*(i+1)) {
			t.Errorf("Add leaves out %s", got.Type().Field(i).Name)
		}
	}
}

// Connections sharing a Scratch decode ApiVersions and Metadata answers
// they share byte for byte once: each gets the same results as a Conn of
// its own, and a body that differs is decoded afresh.
func TestScratchMemoSameAsAlone(t *testing.T) {
	mk := func(avKeys []int16, topicErr int16) *wire {
		w := &wire{}
		var keys []kmsg.ApiVersionsResponseApiKey
		for _, k := range avKeys {
			keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MaxVersion: 1})
		}
		w.request(18, 3, 0, "c", nil, &kmsg.ApiVersionsRequest{ClientSoftwareName: "c", ClientSoftwareVersion: "1"})
		w.response(18, 3, 0, &kmsg.ApiVersionsResponse{ApiKeys: keys})
		w.request(3, 12, 1, "c", nil, &kmsg.MetadataRequest{})
		w.response(3, 12, 1, &kmsg.MetadataResponse{Topics: []kmsg.MetadataResponseTopic{{Topic: kmsg.StringPtr("t"), ErrorCode: topicErr}}})
		return w
	}
	wires := []*wire{mk([]int16{71, 72}, 0), mk([]int16{71, 72}, 0), mk([]int16{3}, 42), mk([]int16{71, 72}, 0)}
	shared := Options{Scratch: new(Scratch)}
	for i, w := range wires {
		summary := func(evs []Event) string {
			var b strings.Builder
			for _, e := range evs {
				if e.Kind == EventResponse {
					fmt.Fprintf(&b, "%d: %v %v codes %v; ", e.Msg.Request.APIKey, e.Msg.Body.APIVersions, e.Msg.HasErrorCode, e.Msg.Codes())
				}
			}
			return b.String()
		}
		alone := summary(feed(NewConn(Options{}), w, [2][]int{}))
		together := summary(feed(NewConn(shared), w, [2][]int{}))
		if alone != together || alone == "" {
			t.Errorf("connection %d: with a shared Scratch %q, alone %q", i, together, alone)
		}
	}
	if !shared.Scratch.versions.set || !shared.Scratch.metadata[0].set {
		t.Error("the Scratch kept no memo")
	}
}

// TestConnGroupRequestBodies: the requests of LeaveGroup (its group) and
// of the share and streams group heartbeats (group, member ID, epoch,
// static instance ID) are decoded; their answers keep their error codes.
func TestConnGroupRequestBodies(t *testing.T) {
	w := &wire{}
	inst := "static-1"
	w.request(13, 4, 1, "kgo", nil, &kmsg.LeaveGroupRequest{Group: "classic", Members: []kmsg.LeaveGroupRequestMember{{MemberID: "m-1"}}})
	w.response(13, 4, 1, &kmsg.LeaveGroupResponse{Members: []kmsg.LeaveGroupResponseMember{{MemberID: "m-1"}}})
	w.request(76, 1, 2, "kgo", nil, &kmsg.ShareGroupHeartbeatRequest{GroupID: "share", MemberID: "", MemberEpoch: 0, SubscribedTopicNames: []string{"t"}})
	w.response(76, 1, 2, &kmsg.ShareGroupHeartbeatResponse{ErrorCode: 42})
	w.request(88, 1, 3, "kgo", nil, &kmsg.StreamsGroupHeartbeatRequest{Group: "streams", MemberID: "s-1", MemberEpoch: -2, InstanceID: &inst})
	w.response(88, 1, 3, &kmsg.StreamsGroupHeartbeatResponse{ErrorCode: 0})
	c := NewConn(Options{})
	got := map[int16][2]Event{}
	for _, e := range messages(feed(c, w, [2][]int{})) {
		pair := got[e.Msg.Request.APIKey]
		pair[e.Side] = e
		got[e.Msg.Request.APIKey] = pair
	}
	req := func(key int16) Body {
		e := got[key][kafka.ToBroker]
		if !e.Msg.HasBody || e.Msg.BodyErr != nil {
			t.Errorf("key %d: no body (%v)", key, e.Msg.BodyErr)
		}
		return e.Msg.Body
	}
	if b := req(13); b.GroupID != "classic" {
		t.Errorf("LeaveGroup body %+v", b)
	}
	if b := req(76); b.GroupID != "share" || b.MemberID != "" || b.MemberEpoch != 0 {
		t.Errorf("ShareGroupHeartbeat body %+v", b)
	}
	if b := req(88); b.GroupID != "streams" || b.MemberID != "s-1" || b.MemberEpoch != -2 || b.GroupInstanceID == nil || *b.GroupInstanceID != inst {
		t.Errorf("StreamsGroupHeartbeat body %+v", b)
	}
	if r := got[76][kafka.ToClient].Msg; !r.HasErrorCode || r.ErrorCode != 42 {
		t.Errorf("ShareGroupHeartbeat answer: code %d (%v)", r.ErrorCode, r.HasErrorCode)
	}
	if n := c.Outcome().Counters; n.Requests != 3 || n.Responses != 3 || n.Malformed != 0 {
		t.Errorf("counters %+v", n)
	}
}
