package decode

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinGroupFrame is a JoinGroup v9 request whose frame size field is size:
// its one protocol's metadata fills the rest.
func joinGroupFrame(corr int32, clientID string, size int) []byte {
	build := func(meta int) []byte {
		r := &kmsg.JoinGroupRequest{Group: "g", ProtocolType: "consumer", MemberID: "m",
			Protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, meta)}}}
		r.SetVersion(9)
		h := RequestHeader{APIKey: KeyJoinGroup, APIVersion: 9, CorrelationID: corr, HeaderVersion: 2, ClientID: clientID}
		return AppendRequest(nil, h, r.AppendTo(nil))
	}
	meta := size
	for range 4 { // the metadata's length varint may grow by a byte or two
		b := build(meta)
		got := len(b) - 4
		if got == size {
			return b
		}
		meta += size - got
	}
	panic(fmt.Sprintf("no JoinGroup frame of size %d", size))
}

// held is what the Conns' frame buffers hold beyond frameFree, by their
// capacities: what the budget must count.
func held(conns []*Conn) (charged, counted int64) {
	for _, c := range conns {
		for s := range c.side {
			f := &c.side[s]
			charged += int64(max(0, cap(f.buf)-frameFree))
			counted += f.bufCounted
		}
	}
	return charged, counted
}

func feedChunks(c *Conn, s kafka.Direction, b []byte, chunk int, frame *int64) []Event {
	var evs []Event
	for off := 0; off < len(b); off += chunk {
		end := min(off+chunk, len(b))
		*frame++
		evs = append(evs, c.Feed(s, b[off:end], []kafka.Span{{End: end - off, At: kafka.FrameRef{Frame: *frame}}})...)
	}
	return evs
}

// The reproduction: many connections, each with a JoinGroup
// request declaring 4 MiB of which 3 MiB are sent, the connection left
// open. The budget holds what was sent of the bodies that fit, the others
// are passed over from their headers and counted, and closing the
// connections gives every byte back.
func TestBodyBudgetPartialJoinGroups(t *testing.T) {
	const conns, size, sent = 250, 4 << 20, 3 << 20
	budget := &BodyBudget{Max: 32 << 20}
	opt := Options{BodyBudget: budget, Scratch: new(Scratch)}
	var cs []*Conn
	var frame int64
	var total Counters
	partial := joinGroupFrame(0, "client", size)[:4+sent]
	for i := range conns {
		c := NewConn(opt)
		cs = append(cs, c)
		b := partial
		if evs := feedChunks(c, kafka.ToBroker, b, 64<<10, &frame); len(evs) != 0 {
			t.Fatalf("connection %d: %d events from a frame not yet whole", i, len(evs))
		}
		if budget.Used() > budget.Max {
			t.Fatalf("connection %d: budget at %d, over %d", i, budget.Used(), budget.Max)
		}
		if charged, counted := held(cs); charged != budget.Used() || counted != charged {
			t.Fatalf("connection %d: buffers hold %d over frameFree, framers count %d, budget %d", i, charged, counted, budget.Used())
		}
	}
	// Sent 3 MiB, a body's buffer has doubled to the frame's 4 MiB: 8 fit.
	fit := int(budget.Max / (size - frameFree))
	skipped := 0
	for _, c := range cs {
		skipped += int(c.cnt.BodiesSkippedBudget)
	}
	if skipped != conns-fit {
		t.Errorf("%d bodies skipped for the budget, want %d", skipped, conns-fit)
	}
	var heldAll int
	for _, c := range cs {
		heldAll += cap(c.side[kafka.ToBroker].buf)
	}
	if limit := int(budget.Max) + conns*frameFree; heldAll > limit {
		t.Errorf("frame buffers hold %d bytes, over the budget and frameFree each (%d)", heldAll, limit)
	}
	for _, c := range cs {
		evs := c.Finish()
		if len(evs) != 1 || evs[0].Kind != EventTruncated {
			t.Errorf("Finish: %v, want one truncated frame", evs)
		}
		total.Add(c.Outcome().Counters)
	}
	if budget.Used() != 0 {
		t.Errorf("%d bytes of the budget still used after every connection finished", budget.Used())
	}
	if total.BodiesSkippedBudget != int64(conns-fit) {
		t.Errorf("outcomes count %d skipped, want %d", total.BodiesSkippedBudget, conns-fit)
	}
}

// A body the budget takes at its header but cannot finish (others took the
// rest meanwhile) is given up midway: its request still makes its event,
// with a BodyErr and no Body, and the frames after it decode.
func TestBodyBudgetMidway(t *testing.T) {
	const size = 256 << 10
	budget := &BodyBudget{Max: 300 << 10}
	a, b := NewConn(Options{BodyBudget: budget}), NewConn(Options{BodyBudget: budget})
	fa, fb := joinGroupFrame(0, "a", size), joinGroupFrame(0, "b", size)
	var after wire
	after.request(18, 3, 1, "b", nil, &kmsg.ApiVersionsRequest{ClientSoftwareName: "b", ClientSoftwareVersion: "1"})
	fb = append(fb, after.side[kafka.ToBroker]...)
	var frame int64
	var evA, evB []Event
	// Both headers fit; then the two bodies grow in turns.
	for off := 0; off < max(len(fa), len(fb)); off += 8 << 10 {
		if off < len(fa) {
			evA = append(evA, feedChunks(a, kafka.ToBroker, fa[off:min(off+8<<10, len(fa))], 8<<10, &frame)...)
		}
		if off < len(fb) {
			evB = append(evB, feedChunks(b, kafka.ToBroker, fb[off:min(off+8<<10, len(fb))], 8<<10, &frame)...)
		}
		if budget.Used() > budget.Max {
			t.Fatalf("budget at %d, over %d", budget.Used(), budget.Max)
		}
	}
	reqs := func(evs []Event) (bodies, errs int, err error) {
		for _, e := range evs {
			if e.Kind != EventRequest {
				continue
			}
			if e.Msg.HasBody {
				bodies++
			}
			if e.Msg.BodyErr != nil {
				errs++
				err = e.Msg.BodyErr
			}
		}
		return
	}
	aBodies, aErrs, aErr := reqs(evA)
	bBodies, bErrs, bErr := reqs(evB)
	// Which one runs out depends on the turns; exactly one does, midway:
	// both headers found the budget free.
	if aErrs+bErrs != 1 || aBodies+bBodies != 2 || len(evA) != 1 || len(evB) != 2 {
		t.Errorf("events %d and %d, bodies %d and %d, body errors %d and %d; want one JoinGroup and the ApiVersions decoded",
			len(evA), len(evB), aBodies, bBodies, aErrs, bErrs)
	}
	if err := max(fmt.Sprint(aErr), fmt.Sprint(bErr)); !strings.Contains(err, "budget") {
		t.Errorf("body error %q does not name the budget", err)
	}
	if a.cnt.BodiesSkippedBudget+b.cnt.BodiesSkippedBudget != 1 || a.cnt.Malformed+b.cnt.Malformed != 0 {
		t.Errorf("counters %+v and %+v", a.cnt, b.cnt)
	}
	if budget.Used() != 0 {
		t.Errorf("%d bytes used with no frame in progress", budget.Used())
	}
}

// Every way a frame in progress ends gives its charge back: completion,
// lost bytes, a mid-stream start, Finish, and the connection found not to
// be Kafka.
func TestBodyBudgetReleased(t *testing.T) {
	partial := joinGroupFrame(0, "c", 64<<10)[:40<<10]
	for _, end := range []string{"lost", "finish", "tls-after"} {
		budget := &BodyBudget{Max: 1 << 20}
		var cs []*Conn
		var frame int64
		for range 100 {
			c := NewConn(Options{BodyBudget: budget, Scratch: new(Scratch)})
			cs = append(cs, c)
			feedChunks(c, kafka.ToBroker, partial, 4<<10, &frame)
			if budget.Used() == 0 {
				t.Fatalf("%s: a partial body charged nothing", end)
			}
			switch end {
			case "lost":
				c.Lost(kafka.ToBroker)
			case "finish":
				c.Finish()
			case "tls-after":
				c.Lost(kafka.ToBroker)
				// A TLS record pair: the connection is not Kafka.
				tls := append([]byte{0x16, 3, 3, 0, 4, 1, 2, 3, 4}, 0x17, 3, 3, 0, 1, 9)
				feedChunks(c, kafka.ToBroker, tls, 64, &frame)
				if !c.dead {
					t.Fatalf("TLS records after a gap: the connection is not named not Kafka")
				}
				c.Finish()
			}
			if budget.Used() != 0 {
				t.Fatalf("%s: %d bytes still used", end, budget.Used())
			}
		}
		if _, counted := held(cs); counted != 0 {
			t.Errorf("%s: framers still count %d", end, counted)
		}
	}
}

// A response the rules read that the budget cannot take keeps its
// top-level error code, read from its first bytes.
func TestBodyBudgetResponse(t *testing.T) {
	w := &wire{}
	w.request(11, 9, 5, "kgo", nil, &kmsg.JoinGroupRequest{Group: "g", ProtocolType: "consumer"})
	members := make([]kmsg.JoinGroupResponseMember, 100)
	for i := range members {
		members[i] = kmsg.JoinGroupResponseMember{MemberID: fmt.Sprint("m-", i), ProtocolMetadata: make([]byte, 4<<10)}
	}
	w.response(11, 9, 5, &kmsg.JoinGroupResponse{ErrorCode: 79, Generation: 3, MemberID: "m-1", Members: members})
	for _, tc := range []struct {
		max     int64
		skipped int64
	}{{1 << 20, 0}, {64 << 10, 1}} {
		budget := &BodyBudget{Max: tc.max}
		c := NewConn(Options{BodyBudget: budget})
		evs := feed(c, w, [2][]int{{}, {100, 300, 9000, 20000}})
		var resp *Message
		for i := range evs {
			if evs[i].Kind == EventResponse {
				resp = &evs[i].Msg
			}
		}
		if resp == nil {
			t.Fatalf("budget %d: no response event in %v", tc.max, evs)
		}
		if !resp.HasErrorCode || resp.ErrorCode != 79 {
			t.Errorf("budget %d: error code %d (%v), want 79", tc.max, resp.ErrorCode, resp.HasErrorCode)
		}
		if c.cnt.BodiesSkippedBudget != tc.skipped || resp.HasBody == (tc.skipped > 0) {
			t.Errorf("budget %d: %d skipped, body %v", tc.max, c.cnt.BodiesSkippedBudget, resp.HasBody)
		}
		if budget.Used() != 0 {
			t.Errorf("budget %d: %d still used", tc.max, budget.Used())
		}
	}
}

// Headers that declare long parts (tagged fields, a Produce's
// transactional ID) are collected within the budget too: past it the
// frame is given up as malformed, and framing is found again.
func TestBodyBudgetLongHeaders(t *testing.T) {
	// A ConsumerGroupHeartbeat (header v2) whose tag 7 claims 8 MiB.
	tagged := func(corr int32) []byte {
		var b []byte
		b = binary.BigEndian.AppendUint16(b, uint16(KeyConsumerGroupHeartbeat))
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		b = append(b, 0, 1, 'c', 1, 7)
		b = binary.AppendUvarint(b, 8<<20)
		b = append(b, make([]byte, 8<<20)...)
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	}
	// A Produce v9 whose transactional ID length claims 8 MiB.
	produce := func(corr int32) []byte {
		var b []byte
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint16(b, 9)
		b = binary.BigEndian.AppendUint32(b, uint32(corr))
		b = append(b, 0, 1, 'c', 0)
		b = binary.AppendUvarint(b, 8<<20+1)
		b = append(b, make([]byte, 8<<20+16)...)
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	}
	for name, mk := range map[string]func(int32) []byte{"tagged": tagged, "produce": produce} {
		budget := &BodyBudget{Max: 256 << 10}
		c := NewConn(Options{BodyBudget: budget})
		w := &wire{}
		w.request(18, 3, 1, "c", nil, &kmsg.ApiVersionsRequest{ClientSoftwareName: "c", ClientSoftwareVersion: "1"})
		w.request(18, 3, 2, "c", nil, &kmsg.ApiVersionsRequest{ClientSoftwareName: "c", ClientSoftwareVersion: "1"})
		// A first request frames the side: it is Kafka.
		first := &wire{}
		first.request(18, 3, 0, "c", nil, &kmsg.ApiVersionsRequest{ClientSoftwareName: "c", ClientSoftwareVersion: "1"})
		data := append(first.side[kafka.ToBroker], mk(0)...)
		data = append(data, w.side[kafka.ToBroker]...)
		var frame int64
		evs := feedChunks(c, kafka.ToBroker, data, 32<<10, &frame)
		evs = append(evs, c.Finish()...)
		kinds := map[EventKind]int{}
		for _, e := range evs {
			kinds[e.Kind]++
		}
		var malformed error
		for _, e := range evs {
			if e.Kind == EventMalformed {
				malformed = e.Err
			}
		}
		if malformed == nil || !strings.Contains(malformed.Error(), "budget") {
			t.Errorf("%s: malformed %v, want the header over the budget", name, malformed)
		}
		if kinds[EventMalformed] != 1 || kinds[EventRequest] < 2 || kinds[EventNotKafka] != 0 {
			t.Errorf("%s: events %v, want the long header malformed and a request after it", name, kinds)
		}
		if budget.Used() != 0 {
			t.Errorf("%s: %d still used", name, budget.Used())
		}
	}
}

// The client IDs a connection's pending requests hold are capped: one ID
// shared by all its requests costs its length once, distinct long ones
// evict the oldest requests, counted.
func TestPendingClientIDBytes(t *testing.T) {
	long := func(i int) string { return fmt.Sprintf("%05d", i) + strings.Repeat("x", 32000) }
	for _, tc := range []struct {
		name    string
		id      func(i int) string
		evicted int64
	}{
		{"same", func(int) string { return long(0) }, 0},
		{"distinct", long, 100 - maxPendingIDBytes/32005},
	} {
		c := NewConn(Options{})
		w := &wire{}
		for i := range 100 {
			w.request(18, 3, int32(i), tc.id(i), nil, &kmsg.ApiVersionsRequest{ClientSoftwareName: "c", ClientSoftwareVersion: "1"})
		}
		feed(c, w, [2][]int{})
		ids := 0
		seen := map[*byte]bool{}
		for _, e := range c.pending.list() {
			if p := unsafeStringData(e.req.h.ClientID); !seen[p] {
				seen[p] = true
				ids += len(e.req.h.ClientID)
			}
		}
		if ids != c.pending.idBytes || ids > maxPendingIDBytes {
			t.Errorf("%s: pending requests hold %d bytes of client IDs, counted %d (cap %d)", tc.name, ids, c.pending.idBytes, maxPendingIDBytes)
		}
		if c.cnt.PendingEvicted != tc.evicted {
			t.Errorf("%s: %d evicted, want %d", tc.name, c.cnt.PendingEvicted, tc.evicted)
		}
	}
}

// The event list kept between calls is capped: a chunk of thousands of
// tiny frames does not leave a long list behind.
func TestEventListNotKept(t *testing.T) {
	sc := new(Scratch)
	c := NewConn(Options{Scratch: sc, MaxPending: 1 << 20})
	w := &wire{}
	for i := range 10000 {
		w.request(18, 0, int32(i), "", nil, nil)
	}
	evs := c.Feed(kafka.ToBroker, w.side[kafka.ToBroker], []kafka.Span{{End: len(w.side[kafka.ToBroker]), At: kafka.FrameRef{Frame: 1}}})
	if len(evs) != 10000 {
		t.Fatalf("%d events", len(evs))
	}
	if cap(sc.events) > maxKeptEvents {
		t.Errorf("the Scratch keeps a list of %d events", cap(sc.events))
	}
}

func unsafeStringData(s string) *byte { return unsafe.StringData(s) }
