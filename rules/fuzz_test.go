package rules

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// FuzzEngine feeds random event sequences to the engine: connections
// opening and closing, requests of the APIs the rules read with random
// header IDs and bodies, answers with random codes, gaps. No panic, and the
// state it keeps stays bounded by what is open.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte("\x00\x10\x21\x32\x43\x54\x65\x76\x87\x98\xa9\xba\xcb\xdc\xed\xfe"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		ids := []kafka.UUID{{}, {15: 1}, idA, idB, idX}
		keys := []int16{18, 3, 71, 72, 47, 11, 68, 0}
		e := New(Options{Profile: ProfileChoice(len(ops) % 3)})
		open := map[int]bool{}
		corr := map[int]int32{}
		frame := int64(0)
		next := func() kafka.FrameRef { frame++; return kafka.FrameRef{Frame: frame} }
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			conn := int(op>>4)%4 + 1
			if !open[conn] {
				open[conn] = true
				e.Open(kafka.Conn{ID: conn, Endpoints: kafka.Endpoints{Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(conn % 2)}), uint16(5000+conn)),
					Broker: netip.MustParseAddrPort("10.0.0.9:9092")}, MidStream: [2]bool{arg&1 == 1, arg&1 == 1}, First: next()})
			}
			switch op & 3 {
			case 0, 1: // a request
				key := keys[int(arg)%len(keys)]
				api, _ := decode.LookupAPI(key)
				ver := api.MaxVersion - int16(arg>>5)%2
				if key == 72 || key == 71 {
					ver = int16(arg>>5) % 2
				}
				corr[conn]++
				h := decode.RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: corr[conn], HeaderVersion: api.RequestHeaderVersion(ver),
					ClientID: "c", ClientIDNull: arg&4 != 0, InstanceID: ids[int(op>>2)%len(ids)], HasInstanceID: arg&8 != 0, Known: true}
				body := decode.Body{InstanceID: ids[int(arg>>3)%len(ids)], HasInstanceID: true, Terminating: arg&16 != 0,
					GroupID: "g", MemberID: string(rune('a' + arg%3)), MemberEpoch: int32(arg%3) - 1}
				e.Event(conn, &decode.Event{Kind: decode.EventRequest, At: next(), Msg: decode.Message{Request: h, Body: body, HasBody: true}})
			case 2: // the answer to a recent request
				c := corr[conn] - int32(arg%3)
				api, _ := decode.LookupAPI(keys[int(arg>>2)%len(keys)])
				h := decode.RequestHeader{APIKey: api.Key, APIVersion: api.MaxVersion, CorrelationID: c, Known: true}
				codes := []int16{0, 42, 79, 35}
				e.Event(conn, &decode.Event{Kind: decode.EventResponse, Side: kafka.ToClient, At: next(), Msg: decode.Message{
					Request: h, Matched: true, Response: decode.ResponseHeader{CorrelationID: c},
					Answer: fuzzAnswer(codes[int(arg)%len(codes)], arg), Body: decode.Body{InstanceID: ids[int(arg>>4)%len(ids)], MemberID: "m"}, HasBody: true}})
			case 3:
				if arg&1 == 0 {
					e.Gap(conn, kafka.Direction(arg>>1&1), next())
					e.Event(conn, &decode.Event{Kind: decode.EventResync, Side: kafka.Direction(arg >> 1 & 1), At: next()})
				} else {
					e.Close(conn, closedBy(arg&2 != 0, next()), decode.Outcome{})
					delete(open, conn)
				}
			}
			if len(e.conns) > 4 {
				t.Fatalf("%d connections tracked, at most 4 open", len(e.conns))
			}
			for _, c := range e.conns {
				if len(c.undecided) > maxUndecided {
					t.Fatalf("%d requests undecided", len(c.undecided))
				}
				for _, k := range c.checks {
					switch k := k.(type) {
					case *teleConn:
						if len(k.asked) > maxAsked {
							t.Fatalf("telemetry requests awaiting an answer grow: %d", len(k.asked))
						}
					case *groupConn:
						if len(k.joins) > maxAsked || len(k.members) > maxAsked {
							t.Fatalf("group state grows: %d joins, %d members", len(k.joins), len(k.members))
						}
					}
				}
			}
		}
		for conn := range open {
			e.Close(conn, kafka.Close{}, decode.Outcome{})
		}
		res := e.Result()
		for _, f := range res.Findings {
			if f.Rule == "" || f.HasAPI == (f.Stream.Kind != AboutRequest) {
				t.Fatalf("finding without a rule, or neither about a request nor about the stream: %+v", f)
			}
			if _, ok := Lookup(f.Rule); !ok {
				t.Fatalf("finding of an unknown rule %q", f.Rule)
			}
		}
		if n := connRequired(e); len(e.conns) != 0 || n != 0 {
			t.Fatalf("state left after every connection closed: %d connections, %d required member IDs of a connection", len(e.conns), n)
		}
	})
}

// fuzzAnswer makes a top-level code or, on odd args, the same code nested.
func fuzzAnswer(code int16, arg byte) decode.Answer {
	if arg>>6&1 == 1 {
		return decode.Answer{NestedRead: true, Nested: []int16{code}}
	}
	return decode.Answer{ErrorCode: code, HasErrorCode: true, NestedRead: true}
}

// connRequired counts the member IDs the group checker keeps for a
// connection (not for a client instance, which outlives its connections).
func connRequired(e *Engine) int {
	var g *groupChecker
	for _, k := range e.checkers {
		if gk, ok := k.(*groupChecker); ok {
			g = gk
		}
	}
	n := 0
	for _, m := range []map[string]assigned{g.required.cur, g.required.prev} {
		for k := range m {
			if strings.HasPrefix(k, "c:") {
				n++
			}
		}
	}
	return n
}
