package reassembly

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/kafka"
)

// streamHandler keeps the bytes of the client's direction.
type streamHandler struct {
	data []byte
	gaps int
}

func (h *streamHandler) Open(*Conn) {}
func (h *streamHandler) Data(_ *Conn, d kafka.Direction, b []byte, _ []kafka.Span) {
	if d == kafka.ToBroker {
		h.data = append(h.data, b...)
	}
}
func (h *streamHandler) Gap(*Conn, kafka.Direction, int, kafka.FrameRef) { h.gaps++ }
func (h *streamHandler) Closed(*Conn, kafka.FrameRef)                    {}

// orderedSegments returns the packets of one client's stream of n
// segments of size bytes each after a handshake, the data segments in the
// order perm gives (nil: in order), and the stream's bytes.
func orderedSegments(t testing.TB, isn uint32, n, size int, perm []int) ([]capture.Packet, []byte) {
	t.Helper()
	stream := make([]byte, n*size)
	for i := range stream {
		stream[i] = byte(i*7 + i/251)
	}
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	segs := []segment{{frame: 1, at: at, src: cli, dst: srv, seq: isn - 1, flags: 2},
		{frame: 2, at: at, src: srv, dst: cli, seq: 77, ack: isn, flags: 18}}
	for k := range n {
		i := k
		if perm != nil {
			i = perm[k]
		}
		segs = append(segs, segment{frame: int64(k + 3), at: at.Add(time.Duration(k) * time.Microsecond), src: cli, dst: srv,
			seq: isn + uint32(i*size), flags: 16, payload: stream[i*size : (i+1)*size]})
	}
	pkts := make([]capture.Packet, len(segs))
	for i, s := range segs {
		if err := s.packet(&pkts[i], new(layers.TCP)); err != nil {
			t.Fatal(err)
		}
	}
	return pkts, stream
}

// TestRandomOrderWork feeds one connection's segments in random order and
// counts the steps taken over the held pages: they must grow as n log n,
// not n², and the stream must come out whole.
func TestRandomOrderWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		isn  uint32
	}{
		{"4096 segments", 4096, 1000},
		{"20000 segments", 20000, 1000},
		{"20000 segments across the wrap", 20000, math.MaxUint32 - 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
			pkts, want := orderedSegments(t, tc.isn, tc.n, 100, rng.Perm(tc.n))
			var h streamHandler
			a := New(Options{Ports: DefaultPorts(), MaxPagesPerConnection: tc.n, MaxPagesTotal: tc.n}, &h)
			for i := range pkts {
				a.Add(&pkts[i])
			}
			a.Finish()
			if !bytes.Equal(h.data, want) || h.gaps != 0 {
				t.Fatalf("%d bytes handed over with %d gaps, want the %d bytes sent and none", len(h.data), h.gaps, len(want))
			}
			bound := int64(12 * float64(tc.n) * math.Log2(float64(tc.n)))
			if a.arena.steps > bound {
				t.Errorf("%d steps over the held pages for %d segments, want at most %d (12 n log2 n)", a.arena.steps, tc.n, bound)
			}
			t.Logf("%d steps, %.1f per segment", a.arena.steps, float64(a.arena.steps)/float64(tc.n))
		})
	}
}

// TestReverseOrderAtCap: segments in reverse order with the per-connection
// cap below their number give up the first hole each time the cap is
// reached, as before, and the work stays bounded.
func TestReverseOrderAtCap(t *testing.T) {
	const n = 3000
	perm := make([]int, n)
	for i := range perm {
		perm[i] = n - 1 - i
	}
	pkts, _ := orderedSegments(t, 5000, n, 100, perm)
	var h streamHandler
	a := New(Options{Ports: DefaultPorts(), MaxPagesPerConnection: 1000}, &h)
	for i := range pkts {
		a.Add(&pkts[i])
	}
	if a.pages > 1000 {
		t.Errorf("%d pages held, over the cap of 1000", a.pages)
	}
	a.Finish()
	if inUse := len(a.arena.nodes) - 1 - len(a.arena.free); a.pages != 0 || inUse != 0 {
		t.Errorf("after Finish: %d pages, %d nodes in use", a.pages, inUse)
	}
	if bound := int64(12 * n * math.Log2(n)); a.arena.steps > bound {
		t.Errorf("%d steps, want at most %d", a.arena.steps, bound)
	}
}

// BenchmarkOrder feeds one connection's segments in order and in random
// order (with the default caps: a hole is given up each time 4096 pages
// are held).
func BenchmarkOrder(b *testing.B) {
	const n = 200_000
	rng := rand.New(rand.NewPCG(3, 4))
	for _, bc := range []struct {
		name string
		perm []int
	}{{"in-order", nil}, {"random", rng.Perm(n)}} {
		b.Run(bc.name, func(b *testing.B) {
			pkts, _ := orderedSegments(b, 1000, n, 100, bc.perm)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				var h countingHandler
				a := New(Options{Ports: DefaultPorts()}, &h)
				for i := range pkts {
					a.Add(&pkts[i])
				}
				a.Finish()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/segment")
		})
	}
}
