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

// BenchmarkLeasedSegments reads NextShared's segments of a mapped file
// the two ways a consumer can: one at a time with Bytes, each with its
// own fault catching, and a batch at a time with OwnSegments.
func BenchmarkLeasedSegments(b *testing.B) {
	const n = 10000
	path := writeFile(b, b.TempDir(), "bench.pcap", benchCapture(b, n))
	r, err := Open([]string{path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var p Packet
	segs := make([]Segment, n)
	for i := range segs {
		if segs[i], _, err = r.NextShared(&p, nil); err != nil {
			b.Fatal(err)
		}
	}
	defer r.Lease().Release()
	// Both take the segments a chunk at a time, as a worker does, into a
	// batch of fresh copies: OwnSegments changes the ones it is given.
	batch := make([]Segment, 256)
	b.Run("Bytes", func(b *testing.B) {
		var scratch []byte
		for b.Loop() {
			for i := 0; i < n; i += len(batch) {
				m := copy(batch, segs[i:])
				for j := range m {
					if _, err := batch[j].Bytes(&scratch); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/segment")
	})
	b.Run("OwnSegments", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			for i := 0; i < n; i += len(batch) {
				m := copy(batch, segs[i:])
				OwnSegments(&buf, m, func(j int) *Segment { return &batch[j] })
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/segment")
	})
}
