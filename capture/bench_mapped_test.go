package capture

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// BenchmarkReaderMapped is BenchmarkReader on a file, read through a
// memory mapping: the hot path of a classic pcap.
func BenchmarkReaderMapped(b *testing.B) {
	const n = 10000
	pcap := benchCapture(b, n)
	path := writeFile(b, b.TempDir(), "bench.pcap", pcap)
	b.SetBytes(int64(len(pcap)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open([]string{path}, nil)
		if err != nil {
			b.Fatal(err)
		}
		benchRead(b, r, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/packet")
}

// BenchmarkReaderPcapng is BenchmarkReader on the same packets in pcapng.
func BenchmarkReaderPcapng(b *testing.B) {
	const n = 10000
	_, rs := benchRecords(b, n)
	ng := ngBytes(b, []layers.LinkType{layers.LinkTypeEthernet}, rs)
	b.SetBytes(int64(len(ng)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open([]string{"-"}, bytes.NewReader(ng))
		if err != nil {
			b.Fatal(err)
		}
		benchRead(b, r, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/packet")
}

func benchRead(b *testing.B, r *Reader, n int) {
	var p Packet
	count := 0
	for r.Next(&p) == nil {
		count++
	}
	r.Close()
	if count != n {
		b.Fatalf("%d packets, want %d", count, n)
	}
}
