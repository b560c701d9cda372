package reassembly

import (
	"io"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/samples/netsim"
)

// countingHandler counts what it is handed.
type countingHandler struct{ conns, bytes, gaps int }

func (h *countingHandler) Open(*Conn) { h.conns++ }
func (h *countingHandler) Data(_ *Conn, _ kafka.Direction, d []byte, _ []kafka.Span) {
	h.bytes += len(d)
}
func (h *countingHandler) Gap(*Conn, kafka.Direction, int, kafka.FrameRef) { h.gaps++ }
func (h *countingHandler) Closed(*Conn, kafka.FrameRef)                    {}

// benchPackets makes a capture of conns connections interleaved, each a
// handshake, a few requests and responses (some reordered) and a close,
// and returns its packets, kept in memory.
func benchPackets(b *testing.B, conns int) []capture.Packet {
	b.Helper()
	c := netsim.New(netsim.Options{Format: netsim.PcapNG, Seed: 7})
	var cns []*netsim.Conn
	for i := range conns {
		cl := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), uint16(30000+i%20000))
		cns = append(cns, c.Open(cl, srv, netsim.ConnOptions{}))
	}
	for round := range 4 {
		for i, cn := range cns {
			if (i+round)%50 == 0 {
				cn.Send(true, payload(3000, byte(i)), netsim.Reorder(0, 1))
			} else {
				cn.Send(true, payload(200, byte(i)))
			}
			cn.Send(false, payload(1000, byte(i)))
		}
	}
	for _, cn := range cns {
		cn.Close(true)
	}
	path := filepath.Join(b.TempDir(), "bench.pcapng")
	if err := c.WriteFile(path); err != nil {
		b.Fatal(err)
	}
	rd, err := capture.Open([]string{path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	var out []capture.Packet
	var p capture.Packet
	for {
		if err := rd.Next(&p); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		q := p
		q.TCP = new(layers.TCP)
		seg := append([]byte(nil), p.Segment...)
		if err := q.TCP.DecodeFromBytes(seg, gopacket.NilDecodeFeedback); err != nil {
			b.Fatal(err)
		}
		q.Segment = seg
		out = append(out, q)
	}
	return out
}

func benchmarkAssembler(b *testing.B, conns int) {
	pkts := benchPackets(b, conns)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var h countingHandler
		a := New(Options{Ports: DefaultPorts()}, &h)
		for i := range pkts {
			a.Add(&pkts[i])
		}
		a.Finish()
		if h.conns != conns {
			b.Fatalf("%d connections, want %d", h.conns, conns)
		}
	}
	b.ReportMetric(float64(len(pkts)*b.N)/b.Elapsed().Seconds(), "packets/s")
}

func BenchmarkAssembler200(b *testing.B)   { benchmarkAssembler(b, 200) }
func BenchmarkAssembler20000(b *testing.B) { benchmarkAssembler(b, 20000) }

// BenchmarkGate is the cost per packet of admitting connections in
// capture order: over the capture of BenchmarkAssembler20000, and over
// one connection's segments in order.
func BenchmarkGate(b *testing.B) {
	for _, bc := range []struct {
		name string
		pkts func() []capture.Packet
	}{
		{"20000-connections", func() []capture.Packet { return benchPackets(b, 20000) }},
		{"one-connection", func() []capture.Packet { p, _ := orderedSegments(b, 1000, 200_000, 100, nil); return p }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pkts := bc.pkts()
			b.ResetTimer()
			for range b.N {
				g := NewGate(Options{Ports: DefaultPorts()})
				for i := range pkts {
					g.AdmitTCP(&pkts[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(len(pkts)*b.N), "ns/packet")
		})
	}
}
