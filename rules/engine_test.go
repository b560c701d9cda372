package rules

import (
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

var (
	idA  = kafka.UUID{0xa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	idB  = kafka.UUID{0xb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	idX  = kafka.UUID{0xc, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	zero = kafka.UUID{}
	one  = kafka.UUID{15: 1}
)

// script drives an Engine like the pipeline does, one frame per message.
type script struct {
	t     testing.TB
	e     *Engine
	frame int64
	conns map[int]*sconn
}

type sconn struct {
	s        *script
	id       int
	key      kafka.Endpoints
	corr     int32
	clientID string
	pending  map[int32]decode.Event
}

func newScript(t testing.TB, opt Options) *script {
	return &script{t: t, e: New(opt), conns: map[int]*sconn{}}
}

func (s *script) next() kafka.FrameRef { s.frame++; return kafka.FrameRef{Frame: s.frame} }

// open starts connection id from client address ip:port to the broker.
func (s *script) open(id int, client, broker string, midStream bool) *sconn {
	c := &sconn{s: s, id: id, key: kafka.Endpoints{Client: netip.MustParseAddrPort(client), Broker: netip.MustParseAddrPort(broker)},
		clientID: "app", pending: map[int32]decode.Event{}}
	s.conns[id] = c
	s.e.Open(kafka.Conn{ID: id, Endpoints: c.key, MidStream: [2]bool{midStream, midStream}, First: s.next()})
	return c
}

// hdr describes a request header's instance ID: none, or a tag with a value.
type hdr struct {
	tag      bool
	id       kafka.UUID
	nullCID  bool
	clientID string
}

func none() hdr               { return hdr{} }
func with(id kafka.UUID) hdr  { return hdr{tag: true, id: id} }
func (h hdr) nullClient() hdr { h.nullCID = true; return h }

// req sends a request and returns its correlation ID.
func (c *sconn) req(key, ver int16, h hdr, body *decode.Body) int32 {
	api, ok := decode.LookupAPI(key)
	if !ok {
		c.s.t.Fatalf("no api %d", key)
	}
	c.corr++
	cid := c.clientID
	if h.clientID != "" {
		cid = h.clientID
	}
	rh := decode.RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: c.corr, HeaderVersion: api.RequestHeaderVersion(ver),
		ClientID: cid, ClientIDNull: h.nullCID, InstanceID: h.id, HasInstanceID: h.tag, Known: true}
	ev := decode.Event{Kind: decode.EventRequest, Side: kafka.ToBroker, At: c.s.next(), Msg: decode.Message{Request: rh}}
	if body != nil {
		ev.Msg.Body, ev.Msg.HasBody = *body, true
	}
	c.pending[c.corr] = ev
	c.s.e.Event(c.id, &ev)
	return c.corr
}

// resp answers request corr with an error code (-1: no error code) and body.
func (c *sconn) resp(corr int32, code int, body *decode.Body) {
	rq := c.pending[corr]
	delete(c.pending, corr)
	ev := decode.Event{Kind: decode.EventResponse, Side: kafka.ToClient, At: c.s.next(), Msg: decode.Message{
		Request: rq.Msg.Request, RequestAt: rq.At, Matched: true, Response: decode.ResponseHeader{CorrelationID: corr}}}
	if code >= 0 {
		ev.Msg.ErrorCode, ev.Msg.HasErrorCode = int16(code), true
	}
	if body != nil {
		ev.Msg.Body, ev.Msg.HasBody = *body, true
	}
	c.s.e.Event(c.id, &ev)
}

// gtsNew asks for a new telemetry ID (v0, R = ZERO, no H) and gets b.
func (c *sconn) gtsNew(b kafka.UUID) {
	corr := c.req(gts, 0, none(), tele(zero))
	c.resp(corr, 0, tele(b))
}

// ok sends a request answered with no error.
func (c *sconn) ok(key, ver int16, h hdr, body *decode.Body) int32 {
	corr := c.req(key, ver, h, body)
	c.resp(corr, 0, nil)
	return corr
}

func (c *sconn) close(byBroker bool) {
	c.s.e.Close(c.id, closedBy(byBroker, c.s.next()), decode.Outcome{})
}

// closedBy is a close by FIN, by the broker or the client, at a frame.
func closedBy(byBroker bool, at kafka.FrameRef) kafka.Close {
	by := kafka.ToBroker
	if byBroker {
		by = kafka.ToClient
	}
	return kafka.Close{Seen: true, By: by, At: at}
}

func (s *script) done() Result {
	ids := make([]int, 0, len(s.conns))
	for id := range s.conns {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		s.e.Close(id, kafka.Close{}, decode.Outcome{})
	}
	return s.e.Result()
}

// rulesOf lists "rule@frame" for the findings of severity warning or error
// (and info ones when all is set).
func rulesOf(res Result, all bool) string {
	var out []string
	for _, f := range res.Findings {
		if f.Severity == Info && !all {
			continue
		}
		out = append(out, fmt.Sprintf("%s@%d", f.Rule, f.At.Frame))
	}
	return strings.Join(out, " ")
}

func tele(id kafka.UUID) *decode.Body { return &decode.Body{InstanceID: id, HasInstanceID: true} }

func push(id kafka.UUID, terminating bool) *decode.Body {
	return &decode.Body{InstanceID: id, HasInstanceID: true, Terminating: terminating}
}

const (
	apiVersions = 18
	metadata    = 3
	gts         = 71
	pushT       = 72
	offsetDel   = 47
	joinGroup   = 11
	cgh         = 68
)

// Each case is a scenario and the findings it must produce, frames
// counted from 1 in the order the script sends messages (open is frame 1).
var cases = []struct {
	name string
	opt  Options
	run  func(s *script)
	want string
	all  bool // compare info findings too
}{
	{"seed changed", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, with(idA), nil) // 2,3
		c.ok(metadata, 12, with(idA), nil)   // 4,5: N carries an ID: seed
		c.ok(metadata, 12, with(idB), nil)   // 6,7
	}, "header-id-changed@6", false},
	{"seed changed twin", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, with(idA), nil)
		c.ok(metadata, 12, with(idA), nil)
		c.ok(metadata, 12, with(idA), nil)
	}, "", false},
	{"seed dropped", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, with(idA), nil)
		c.ok(metadata, 12, none(), nil) // 4: no ID, non-null ClientId: seed, dropped
		c.ok(metadata, 12, with(zero), nil)
	}, "header-id-dropped@4 header-id-dropped@6", false},
	{"seed late", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, none(), nil)  // 2
		c.ok(metadata, 12, with(idA), nil) // 4: F
		c.ok(metadata, 12, with(idA), nil) // 6: N carries it: seed
	}, "header-id-late@4 header-id-late@6", false},
	{"seed late twin: no IDs at all", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, none(), nil)
		c.ok(metadata, 12, none(), nil)
	}, "", false},
	{"seed late never on mid-stream", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", true)
		c.ok(metadata, 12, none(), nil)
		c.ok(metadata, 12, with(idA), nil)
		c.ok(metadata, 12, with(idA), nil)
	}, "", false},
	{"accepted missing first (old client)", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, none(), nil)
		c.ok(gts, 1, none(), &decode.Body{})
	}, "header-id-missing-first@4", false},
	{"accepted missing first twin", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, none(), nil)
		c.ok(gts, 1, with(idA), &decode.Body{}) // F
		c.ok(metadata, 12, none().nullClient(), nil)
	}, "", false},
	{"accepted reserved ZERO (old client)", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(offsetDel, 1, with(zero), nil)
	}, "header-id-reserved@2", false},
	{"ONE is reserved in any profile", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(metadata, 12, with(one), nil)
		c.ok(metadata, 12, with(one), nil)
	}, "header-id-reserved@2 header-id-reserved@4", false},
	{"accepted: client ID repeated, ID repeated, changed", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, none(), nil)
		c.ok(offsetDel, 1, with(idA), nil)           // 4: F
		c.ok(metadata, 12, none().nullClient(), nil) // 6: N: accepted
		c.ok(offsetDel, 1, none(), nil)              // 8: ClientId repeated
		c.ok(offsetDel, 1, with(idA).nullClient(), nil)
		c.ok(offsetDel, 1, with(idB).nullClient(), nil)
		c.ok(offsetDel, 1, none().nullClient(), nil)
	}, "header-client-id-repeated@8 header-id-changed@12", false},
	{"accepted: ID repeated is info", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(offsetDel, 1, with(idA), nil)
		c.ok(metadata, 12, none().nullClient(), nil)
		c.ok(offsetDel, 1, with(idA).nullClient(), nil)
	}, "header-id-repeated@6", true},
	{"undetermined: only reserved", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, none(), nil)
		c.ok(metadata, 12, with(idA), nil) // F, no N
	}, "", false},
	{"telemetry body mismatch", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, with(idA), nil)
		c.req(gts, 0, with(idA), tele(zero)) // 4
		c.resp(4/2, 42, nil)
	}, "telemetry-body-mismatch@4", false},
	{"telemetry body matches header", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, with(idA), nil)
		corr := c.req(gts, 0, with(idA), tele(idA))
		c.resp(corr, 0, tele(zero))
		c.ok(pushT, 0, with(idA), push(idA, false))
	}, "", false},
	{"telemetry initial and reuse", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		corr := c.req(gts, 0, none(), tele(zero)) // 2
		c.resp(corr, 0, tele(idX))                // 3: assigned X
		c.ok(pushT, 0, none(), push(idX, false))  // 4
		c.ok(pushT, 0, none(), push(idB, false))  // 6: not reused
		corr = c.req(gts, 0, none(), tele(zero))  // 8: ZERO again
		c.resp(corr, 0, tele(idX))
	}, "telemetry-id-not-reused@6 telemetry-id-not-reused@8", false},
	{"push reserved, after terminating, unknown", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		corr := c.req(gts, 0, none(), tele(idX))
		c.resp(corr, 0, tele(zero))               // X accepted
		c.ok(pushT, 0, none(), push(zero, false)) // 4: reserved (and not reused)
		c.ok(pushT, 0, none(), push(idX, true))   // 6: terminating
		c.ok(pushT, 0, none(), push(idX, false))  // 8: after terminating
		d := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		d.ok(pushT, 0, none(), push(idB, false)) // 11: unknown
	}, "telemetry-push-reserved-id@4 telemetry-push-after-terminating@8 telemetry-push-unknown-id@11", false},
	{"telemetry v1 without any ID (seed forced)", Options{Profile: ForceSeed}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(gts, 1, none(), &decode.Body{})
		c.ok(pushT, 1, none(), &decode.Body{})
	}, "telemetry-id-missing@2 telemetry-id-missing@4", false},
	{"telemetry v1 identified by the connection's ID", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(offsetDel, 1, with(idA), nil)
		c.ok(metadata, 12, none().nullClient(), nil)
		c.ok(gts, 1, none().nullClient(), &decode.Body{})
		c.ok(pushT, 1, none().nullClient(), &decode.Body{})
	}, "", false},
	{"broker fails to assign, conflicts, rejects valid", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		corr := c.req(gts, 0, none(), tele(zero))
		c.resp(corr, 0, tele(zero)) // 3: not assigned
		corr = c.req(gts, 0, none(), tele(idX))
		c.resp(corr, 0, tele(idB)) // 5: conflict
		corr = c.req(apiVersions, 3, none(), nil)
		c.resp(corr, 42, nil) // 7: rejected valid
	}, "broker-id-not-assigned@3 broker-id-conflict@5 broker-rejected-valid@7", false},
	// broker-id-reissued and the terminating push it lifts (docs/design/rules.md §4),
	// each firing case beside a twin that differs in one detail.
	{"re-issued: assigned again on another connection after the terminating push", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)                           // 2,3
		a.ok(pushT, 0, none(), push(idX, true)) // 4: terminating
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.gtsNew(idX)                            // 7,8: X again
		b.ok(pushT, 0, none(), push(idX, false)) // 9
	}, "broker-id-reissued@8", false},
	{"re-issued to clients running at once: one's terminating push ends only its own use", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX) // 2,3
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.gtsNew(idX)                            // 5,6
		a.ok(pushT, 0, none(), push(idX, true))  // 7
		b.ok(pushT, 0, none(), push(idX, false)) // 9
	}, "broker-id-reissued@6", false},
	{"re-issue twin: the client that terminated pushes again", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX) // 2,3
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.gtsNew(idX)                            // 5,6
		a.ok(pushT, 0, none(), push(idX, true))  // 7
		a.ok(pushT, 0, none(), push(idX, false)) // 9
	}, "broker-id-reissued@6 telemetry-push-after-terminating@9", false},
	{"re-issue twin: no re-issue, a second connection pushes after the terminating push", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)                           // 2,3
		a.ok(pushT, 0, none(), push(idX, true)) // 4
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.ok(pushT, 0, none(), push(idX, false)) // 7
	}, "telemetry-push-after-terminating@7", false},
	{"re-issue twin: the exchange after it gives another ID", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		a.ok(pushT, 0, none(), push(idX, true))
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.gtsNew(idB) // 7,8
		c := s.open(3, "10.0.0.3:5000", "10.0.0.9:9092", false)
		c.ok(pushT, 0, none(), push(idX, false)) // 10
	}, "telemetry-push-after-terminating@10", false},
	{"re-issue twin: the exchange after it is answered with an error", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		a.ok(pushT, 0, none(), push(idX, true))
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		corr := b.req(gts, 0, none(), tele(zero)) // 7
		b.resp(corr, 89, tele(idX))               // 8: THROTTLING_QUOTA_EXCEEDED
		b.ok(pushT, 0, none(), push(idX, false))  // 9
	}, "telemetry-push-after-terminating@9", false},
	{"every client of a mock cluster gets one ID, each terminates in turn", Options{}, func(s *script) {
		for i := 1; i <= 3; i++ {
			c := s.open(i, fmt.Sprintf("10.0.0.%d:5000", i), "10.0.0.9:9092", false) // 1, 9, 17
			c.gtsNew(idX)                                                            // the answer: 3, 11, 19
			c.ok(pushT, 0, none(), push(idX, false))
			c.ok(pushT, 0, none(), push(idX, true))
			c.close(false)
		}
	}, "broker-id-reissued@11 broker-id-reissued@19", false},
	// Apache answers a GetTelemetrySubscriptions that names the ID NONE
	// (echoing it, or ZERO) and still rejects the next push
	// (ClientMetricsManager keeps the instance's terminating flag): only an
	// exchange that asks for a new ID and gets this one again lifts it.
	{"named again after terminating: same connection (R = X) and another (R = X, echoed)", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		a.ok(pushT, 0, none(), push(idX, true))
		corr := a.req(gts, 0, none(), tele(idX)) // accepted: B = ZERO
		a.resp(corr, 0, tele(zero))
		a.ok(pushT, 0, none(), push(idX, true))
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		corr = b.req(gts, 0, none(), tele(idX)) // R ≠ ZERO: not asking for a new ID
		b.resp(corr, 0, tele(idX))
		b.ok(pushT, 0, none(), push(idX, false))
	}, "telemetry-push-after-terminating@8 telemetry-push-after-terminating@13", false},
	{"named again after terminating: v1, by the header ID", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		a.ok(pushT, 0, none(), push(idX, true))
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.ok(gts, 1, with(idX), &decode.Body{}) // F
		b.ok(metadata, 12, none().nullClient(), nil)
		b.ok(pushT, 1, none().nullClient(), &decode.Body{})
	}, "telemetry-push-after-terminating@11", false},
	{"named twin: the v1 exchange is rejected", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		a.ok(pushT, 0, none(), push(idX, true))
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		corr := b.req(gts, 1, with(idX), &decode.Body{}) // 7
		b.resp(corr, 117, nil)                           // UNKNOWN_SUBSCRIPTION_ID
		b.ok(metadata, 12, none().nullClient(), nil)
		b.ok(pushT, 1, none().nullClient(), &decode.Body{}) // 11
	}, "telemetry-push-after-terminating@11", false},
	{"re-issue twin: the same B on the same connection only", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		a.gtsNew(idX) // 4: ZERO after X is the client's error; the answer is no re-issue
	}, "telemetry-id-not-reused@4", false},
	{"re-issue twin: R ≠ ZERO (the client sends X, the broker echoes it)", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		corr := b.req(gts, 0, none(), tele(idX))
		b.resp(corr, 0, tele(idX))
	}, "", false},
	{"re-issue twin: answered with an error code", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		corr := b.req(gts, 0, none(), tele(zero))
		b.resp(corr, 89, tele(idX)) // THROTTLING_QUOTA_EXCEEDED
	}, "", false},
	{"re-issue twin: the request carries H", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.gtsNew(idX)
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.ok(apiVersions, 3, with(idA), nil)
		b.ok(metadata, 12, with(idA), nil)
		corr := b.req(gts, 0, with(idA), tele(zero)) // 9: H, R = ZERO
		b.resp(corr, 0, tele(idX))                   // a broker that ignores H
	}, "telemetry-body-mismatch@9", false},
	{"re-issued: B used on another connection as a header ID", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.ok(apiVersions, 3, with(idX), nil) // 2
		a.ok(metadata, 12, with(idX), nil)
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.gtsNew(idX) // 7,8
	}, "broker-id-reissued@8", false},
	{"re-issue twin: B is the header ID of the same client on another connection", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.ok(offsetDel, 1, with(idX), nil)
		a.ok(metadata, 12, none().nullClient(), nil)
		b := s.open(2, "10.0.0.1:5001", "10.0.0.9:9092", false)
		b.ok(offsetDel, 1, with(idX), nil)
		b.ok(metadata, 12, none().nullClient(), nil)
		b.gtsNew(idX) // the broker gives the client its own ID
	}, "", false},
	{"re-issued: B used on another connection as a telemetry ID", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.ok(pushT, 0, none(), push(idX, false)) // 2: unknown
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.gtsNew(idX) // 5,6
	}, "telemetry-push-unknown-id@2 broker-id-reissued@6", false},
	{"join: MEMBER_ID_REQUIRED, wrong and right rejoin, old version", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		corr := c.req(joinGroup, 9, none(), &decode.Body{GroupID: "g"})
		c.resp(corr, 79, &decode.Body{MemberID: "m-1"})
		c.ok(joinGroup, 9, none(), &decode.Body{GroupID: "g", MemberID: "m-2"}) // 4: wrong
		corr = c.req(joinGroup, 9, none(), &decode.Body{GroupID: "h"})
		c.resp(corr, 79, &decode.Body{MemberID: "m-3"})
		c.ok(joinGroup, 9, none(), &decode.Body{GroupID: "h", MemberID: "m-3"}) // right
		corr = c.req(joinGroup, 3, none(), &decode.Body{GroupID: "k"})
		c.resp(corr, 79, &decode.Body{MemberID: "m-4"}) // 11: old version
	}, "join-member-id-not-used@4 join-member-id-required-old-version@11", false},
	{"heartbeat: empty and changed", Options{}, func(s *script) {
		c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		corr := c.req(cgh, 1, none(), &decode.Body{GroupID: "g"}) // 2: empty
		c.resp(corr, 42, nil)
		c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "a"})
		c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "b"}) // 6: changed
		c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "b", MemberEpoch: -1})
		c.ok(cgh, 1, none(), &decode.Body{GroupID: "g", MemberID: "c"}) // after leaving: fine
		c.ok(cgh, 0, none(), &decode.Body{GroupID: "v0"})               // v0 may be empty
	}, "heartbeat-member-id-empty@2 heartbeat-member-id-changed@6", false},
	{"instance shared across addresses and split", Options{}, func(s *script) {
		a := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
		a.ok(metadata, 12, with(idA), nil) // 2
		b := s.open(2, "10.0.0.2:5000", "10.0.0.9:9092", false)
		b.ok(metadata, 12, with(idA), nil) // 5: shared
		c := s.open(3, "10.0.0.1:5001", "10.0.0.9:9092", false)
		c.ok(metadata, 12, with(idB), nil) // 8: split (info)
	}, "instance-id-shared@5 instance-id-split@8", true},
}

func TestEngineCases(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t, tc.opt)
			tc.run(s)
			if got := rulesOf(s.done(), tc.all); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestBrokerVerdicts(t *testing.T) {
	s := newScript(t, Options{})
	// Broker .9 rejects a changed ID; .8 accepts one; .7 closes on it; .6
	// does both.
	for i, b := range []string{"10.0.0.9:9092", "10.0.0.8:9092", "10.0.0.7:9092", "10.0.0.6:9092", "10.0.0.6:9092", "10.0.0.5:9092"} {
		c := s.open(i+1, fmt.Sprintf("10.0.0.1:%d", 5000+i), b, false)
		c.ok(apiVersions, 3, with(idA), nil)
		c.ok(metadata, 12, with(idA), nil)
		corr := c.req(gts, 0, with(idB), tele(idB)) // header-id-changed, an error rule
		switch i {
		case 0, 3:
			c.resp(corr, 42, nil)
		case 1, 4:
			c.resp(corr, 0, tele(zero))
		case 2:
			c.close(true)
		case 5:
			c.resp(corr, 35, nil) // tells nothing
		}
	}
	res := s.done()
	got := map[string]string{}
	for _, b := range res.Brokers {
		got[b.Endpoint.String()] = b.Verdict.String()
	}
	want := map[string]string{"10.0.0.9:9092": "enforces", "10.0.0.8:9092": "ignores", "10.0.0.7:9092": "enforces",
		"10.0.0.6:9092": "mixed", "10.0.0.5:9092": "unknown"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("broker %s: %s, want %s", k, got[k], v)
		}
	}
	// Every connection is a new client; one per broker verdict column.
	if m := res.Matrix.Cells; m[1][0] != 1 || m[1][1] != 2 || m[1][2] != 3 || m[0] != [3]int{} {
		t.Errorf("matrix %v", m)
	}
	var answers []Answer
	for _, f := range res.Findings {
		if f.Rule == HeaderIDChanged {
			answers = append(answers, f.Answer)
		}
	}
	answered := func(code int16) Answer { return Answer{State: Answered, Codes: []int16{code}} }
	wantAnswers := []Answer{answered(42), answered(0), {State: ClosedByBroker}, answered(42), answered(0), answered(35)}
	if !reflect.DeepEqual(answers, wantAnswers) {
		t.Errorf("broker answers %+v, want %+v", answers, wantAnswers)
	}
}

// TestPrecedence: one finding per request, the first of docs/design/rules.md §1's
// order, naming the others.
func TestPrecedence(t *testing.T) {
	s := newScript(t, Options{})
	c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	c.ok(apiVersions, 3, with(idA), nil)
	c.ok(metadata, 12, with(idA), nil)
	c.ok(pushT, 0, with(idB), push(zero, false)) // changed, reserved push, body mismatch, unknown
	res := s.done()
	if len(res.Findings) != 1 {
		t.Fatalf("findings %v", rulesOf(res, true))
	}
	f := res.Findings[0]
	if f.Rule != HeaderIDChanged || strings.Join(f.Also, ",") != "telemetry-push-reserved-id,telemetry-body-mismatch" {
		t.Errorf("%s also %v", f.Rule, f.Also)
	}
	wantRelated := []Related{{kafka.FrameRef{Frame: 2}, RoleEstablished}, {kafka.FrameRef{Frame: 7}, RoleAnswer}}
	if f.Expected != (Value{Kind: ValueID, ID: idA}) || f.Seen != (Value{Kind: ValueIDNamed, ID: idB}) || !reflect.DeepEqual(f.Related, wantRelated) {
		t.Errorf("evidence %+v", f)
	}
}

// TestGapMarksLaterFindings: a finding after lost bytes says so.
func TestGapMarksLaterFindings(t *testing.T) {
	s := newScript(t, Options{})
	c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	c.ok(apiVersions, 3, with(idA), nil)
	c.ok(metadata, 12, with(idA), nil)
	s.e.Gap(1, kafka.ToBroker, kafka.FrameRef{Frame: 6})
	s.e.Event(1, &decode.Event{Kind: decode.EventResync, Side: kafka.ToBroker, At: s.next(), Skipped: 100})
	c.ok(metadata, 12, with(idB), nil)
	res := s.done()
	if got := rulesOf(res, true); got != "stream-gap@6 header-id-changed@7" {
		t.Fatalf("findings %s", got)
	}
	if f := res.Findings[1]; !f.AfterGap {
		t.Errorf("finding after a gap: %+v", f)
	}
}

// TestConnectionsTable checks the per-connection summary.
func TestConnectionsTable(t *testing.T) {
	s := newScript(t, Options{})
	c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	c.ok(offsetDel, 1, with(idA), nil)
	c.ok(metadata, 12, none().nullClient(), nil)
	d := s.open(2, "[2001:db8::1]:5000", "[2001:db8::9]:9092", true)
	d.ok(metadata, 12, none(), nil)
	res := s.done()
	if len(res.Connections) != 2 {
		t.Fatalf("connections %+v", res.Connections)
	}
	a, b := res.Connections[0], res.Connections[1]
	if a.Profile != ProfileAccepted || !a.NewClient || a.InstanceID != idA || a.Requests != 2 || a.Responses != 2 || a.ClientID != "app" {
		t.Errorf("connection 1 %+v", a)
	}
	if b.Profile != ProfileNone || b.NewClient || !b.MidStream || b.Key.Client.String() != "[2001:db8::1]:5000" {
		t.Errorf("connection 2 %+v", b)
	}
	if len(res.Instances) != 1 || res.Instances[0].ID != idA || len(res.Instances[0].Connections) != 1 {
		t.Errorf("instances %+v", res.Instances)
	}
}

// TestCapsBoundTheReport: beyond the caps the engine keeps the most recent
// connections and instances and the first findings, and counts the rest.
func TestCapsBoundTheReport(t *testing.T) {
	s := newScript(t, Options{MaxConnections: 4, MaxInstances: 4, MaxFindings: 3})
	for i := 1; i <= 10; i++ {
		c := s.open(i, fmt.Sprintf("10.0.0.%d:5000", i), "10.0.0.99:9092", false)
		id := kafka.UUID{byte(i), 1}
		c.ok(apiVersions, 3, with(id), nil)
		c.ok(metadata, 12, with(id), nil)
		c.ok(metadata, 12, with(idB), nil) // header-id-changed
		c.close(false)
	}
	res := s.done()
	if len(res.Connections) > 4 || res.Connections[len(res.Connections)-1].ID != 10 {
		t.Errorf("connections kept: %d, last %d", len(res.Connections), res.Connections[len(res.Connections)-1].ID)
	}
	if int64(len(res.Connections))+res.Dropped.Connections != 10 {
		t.Errorf("kept %d + dropped %d connections, want 10", len(res.Connections), res.Dropped.Connections)
	}
	total := res.FindingsBySeverity[Error] + res.FindingsBySeverity[Warning] + res.FindingsBySeverity[Info]
	if len(res.Findings) != 3 || res.Dropped.Findings != total-3 || res.FindingsBySeverity[Error] != 10 {
		t.Errorf("findings kept %d, dropped %d, errors counted %d", len(res.Findings), res.Dropped.Findings, res.FindingsBySeverity[Error])
	}
	if len(res.Instances) > 4 || res.Dropped.Instances == 0 {
		t.Errorf("instances kept %d, dropped %d", len(res.Instances), res.Dropped.Instances)
	}
}

// TestBrokerIDReissuedEvidence: the warning is at the answer, names the ID
// and the broker's answer, and relates the frame where the ID was first
// seen on another connection (not an earlier one on its own) and the
// request.
func TestBrokerIDReissuedEvidence(t *testing.T) {
	s := newScript(t, Options{})
	b := s.open(1, "10.0.0.2:5000", "10.0.0.9:9092", false)
	b.ok(pushT, 0, none(), push(idX, false)) // 2: X on b itself first
	a := s.open(2, "10.0.0.1:5000", "10.0.0.9:9092", false)
	a.ok(pushT, 0, none(), push(idX, false)) // 5: X on another connection
	c := s.open(3, "10.0.0.3:5000", "10.0.0.9:9092", false)
	c.ok(pushT, 0, none(), push(idX, false)) // 8
	b.gtsNew(idX)                            // 10, 11
	res := s.done()
	var got []Finding
	for _, f := range res.Findings {
		if f.Rule == BrokerIDReissued {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("findings %s", rulesOf(res, true))
	}
	f := got[0]
	if f.At.Frame != 11 || f.Severity != Warning || f.ConnID != 1 || !reflect.DeepEqual(f.Answer, Answer{State: Answered, Codes: []int16{0}}) {
		t.Errorf("finding %+v", f)
	}
	wantRelated := []Related{{kafka.FrameRef{Frame: 5}, RoleFirstSeen}, {kafka.FrameRef{Frame: 10}, RoleRequest}}
	if !reflect.DeepEqual(f.Related, wantRelated) {
		t.Errorf("related %v, want frames 5 (first seen elsewhere) and 10 (the request)", f.Related)
	}
	if f.Seen != (Value{Kind: ValueSeenElsewhereID, ID: idX}) || f.Expected != (Value{Kind: ValueNewID}) || f.APIKey != gts || f.APIVersion != 0 {
		t.Errorf("evidence %+v / %+v, API %d v%d", f.Expected, f.Seen, f.APIKey, f.APIVersion)
	}
}
