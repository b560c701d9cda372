package rules

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// benchRequests feeds the engine b.N Metadata requests, each answered, on
// conns connections in turn. Violating ones change the header ID the
// connection established (header-id-changed) and are rejected with
// INVALID_REQUEST, which is broker evidence too: every request makes a
// finding and an evidence frame, what a hostile or broken client costs.
func benchRequests(b *testing.B, conns int, violating bool) {
	e := New(Options{})
	var frame int64
	next := func() kafka.FrameRef { frame++; return kafka.FrameRef{Frame: frame} }
	hdr := func(id kafka.UUID, corr int32) decode.RequestHeader {
		return decode.RequestHeader{APIKey: metadata, APIVersion: 12, CorrelationID: corr, HeaderVersion: 2,
			ClientID: "app", InstanceID: id, HasInstanceID: true, Known: true}
	}
	// One pair of events, rewritten for each exchange as the decoder
	// does: the engine copies what it keeps.
	req, resp := new(decode.Event), new(decode.Event)
	exchange := func(conn int, id kafka.UUID, corr int32, code int16) {
		*req = decode.Event{Kind: decode.EventRequest, Side: kafka.ToBroker, At: next(), Msg: decode.Message{Request: hdr(id, corr)}}
		e.Event(conn, req)
		*resp = decode.Event{Kind: decode.EventResponse, Side: kafka.ToClient, At: next(), Msg: decode.Message{
			Request: req.Msg.Request, RequestAt: req.At, Matched: true, Response: decode.ResponseHeader{CorrelationID: corr},
			Answer: decode.Answer{ErrorCode: code, HasErrorCode: true}}}
		e.Event(conn, resp)
	}
	for i := 1; i <= conns; i++ {
		ep := kafka.Endpoints{Client: netip.MustParseAddrPort(fmt.Sprintf("10.0.%d.%d:5000", i/250, i%250+1)),
			Broker: netip.MustParseAddrPort("10.0.0.99:9092")}
		e.Open(kafka.Conn{ID: i, Endpoints: ep, First: next()})
		exchange(i, idA, 0, 0)
	}
	id, code := idA, int16(0)
	if violating {
		id, code = idB, 42
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		exchange(i%conns+1, id, int32(i/conns+1), code)
	}
}

func BenchmarkEngineValid(b *testing.B)              { benchRequests(b, 1, false) }
func BenchmarkEngineViolating(b *testing.B)          { benchRequests(b, 1, true) }
func BenchmarkEngineViolatingManyConns(b *testing.B) { benchRequests(b, 1000, true) }
