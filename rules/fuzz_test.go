package rules

import (
	"net/netip"
	"testing"

	"github.com/kidscope/kidscope/decode"
)

// FuzzEngine feeds random event sequences to the engine: connections
// opening and closing, requests of the APIs the rules read with random
// header IDs and bodies, answers with random codes, gaps. No panic, and the
// state it keeps stays bounded by what is open.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte("\x00\x10\x21\x32\x43\x54\x65\x76\x87\x98\xa9\xba\xcb\xdc\xed\xfe"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		ids := []decode.UUID{{}, {15: 1}, idA, idB, idX}
		keys := []int16{18, 3, 71, 72, 47, 11, 68, 0}
		e := New(Options{Profile: ProfileChoice(len(ops) % 3)})
		open := map[int]bool{}
		corr := map[int]int32{}
		frame := int64(0)
		next := func() decode.Where { frame++; return decode.Where{Frame: frame} }
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			conn := int(op>>4)%4 + 1
			if !open[conn] {
				open[conn] = true
				e.Open(ConnInfo{ID: conn, Key: ConnKey{netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(conn % 2)}), uint16(5000+conn)),
					netip.MustParseAddrPort("10.0.0.9:9092")}, MidStream: arg&1 == 1, First: next()})
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
				e.Event(conn, &decode.Event{Kind: decode.EventResponse, Side: decode.BrokerSide, At: next(), Msg: decode.Message{
					Request: h, Matched: true, Response: decode.ResponseHeader{CorrelationID: c},
					Answer: fuzzAnswer(codes[int(arg)%len(codes)], arg), Body: decode.Body{InstanceID: ids[int(arg>>4)%len(ids)], MemberID: "m"}, HasBody: true}})
			case 3:
				if arg&1 == 0 {
					e.Gap(conn, decode.Side(arg>>1&1), next())
					e.Event(conn, &decode.Event{Kind: decode.EventResync, Side: decode.Side(arg >> 1 & 1), At: next()})
				} else {
					e.Close(conn, CloseInfo{ByBroker: arg&2 != 0, At: next()})
					delete(open, conn)
				}
			}
			if len(e.conns) > 4 {
				t.Fatalf("%d connections tracked, at most 4 open", len(e.conns))
			}
			for _, cs := range e.conns {
				if len(cs.undecided) > maxUndecided {
					t.Fatalf("%d requests undecided", len(cs.undecided))
				}
				if len(cs.teleAsked) > maxAsked || len(cs.joins) > maxAsked || len(cs.members) > maxAsked {
					t.Fatalf("telemetry or group state grows: %d %d %d", len(cs.teleAsked), len(cs.joins), len(cs.members))
				}
			}
		}
		for conn := range open {
			e.Close(conn, CloseInfo{})
		}
		res := e.Result()
		for _, f := range res.Findings {
			if f.Rule == "" || f.Message == "" {
				t.Fatalf("finding without rule or message: %+v", f)
			}
			if _, ok := Lookup(f.Rule); !ok {
				t.Fatalf("finding of an unknown rule %q", f.Rule)
			}
		}
		if len(e.conns) != 0 || len(e.groups.connRequired) != 0 {
			t.Fatalf("state left after every connection closed: %d connections, %d with required member IDs", len(e.conns), len(e.groups.connRequired))
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
