package rules

import (
	"net/netip"
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// feeder drives an engine with Metadata requests, each answered, on
// connections that first establish idA. A violating request carries idB
// (header-id-changed) and is rejected with INVALID_REQUEST, which is
// broker evidence too: every one makes a finding and an evidence frame,
// what a hostile or broken client costs.
type feeder struct {
	e         *Engine
	frame     int64
	corr      int32
	req, resp decode.Event
}

func (f *feeder) next() kafka.FrameRef { f.frame++; return kafka.FrameRef{Frame: f.frame} }

// open starts connection id (its client address from id) and establishes
// idA on it.
func (f *feeder) open(id int) {
	ep := kafka.Endpoints{Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(id >> 16), byte(id >> 8), byte(id)}), 5000),
		Broker: netip.MustParseAddrPort("10.0.0.99:9092")}
	f.e.Open(kafka.Conn{ID: id, Endpoints: ep, First: f.next()})
	f.exchange(id, false)
}

// exchange sends one request on conn and its answer. The events are
// rewritten for each, as the decoder does: the engine copies what it
// keeps.
func (f *feeder) exchange(conn int, violating bool) {
	id, code := idA, int16(0)
	if violating {
		id, code = idB, 42
	}
	f.corr++
	h := decode.RequestHeader{APIKey: metadata, APIVersion: 12, CorrelationID: f.corr, HeaderVersion: 2,
		ClientID: "app", InstanceID: id, HasInstanceID: true, Known: true}
	f.req = decode.Event{Kind: decode.EventRequest, Side: kafka.ToBroker, At: f.next(), Msg: decode.Message{Request: h}}
	f.e.Event(conn, &f.req)
	f.resp = decode.Event{Kind: decode.EventResponse, Side: kafka.ToClient, At: f.next(), Msg: decode.Message{
		Request: h, RequestAt: f.req.At, Matched: true, Response: decode.ResponseHeader{CorrelationID: f.corr},
		Answer: decode.Answer{ErrorCode: code, HasErrorCode: true}}}
	f.e.Event(conn, &f.resp)
}

func (f *feeder) close(conn int) { f.e.Close(conn, kafka.Close{}, decode.Outcome{}) }

// benchRequests feeds b.N requests on conns connections in turn.
func benchRequests(b *testing.B, conns int, violating bool) {
	f := &feeder{e: New(Options{})}
	for i := 1; i <= conns; i++ {
		f.open(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		f.exchange(i%conns+1, violating)
	}
}

func BenchmarkEngineValid(b *testing.B)              { benchRequests(b, 1, false) }
func BenchmarkEngineViolating(b *testing.B)          { benchRequests(b, 1, true) }
func BenchmarkEngineViolatingManyConns(b *testing.B) { benchRequests(b, 1000, true) }
