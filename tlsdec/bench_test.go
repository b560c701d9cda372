package tlsdec

import (
	"testing"

	"github.com/kidscope/kidscope/kafka"
)

// BenchmarkDecrypt13AES128 decrypts 1 MiB of TLS 1.3 AES-128-GCM
// application data (64 full records), fed in 64 KiB chunks as reassembly
// hands them over.
func BenchmarkDecrypt13AES128(b *testing.B) {
	benchSuite(b, 0x1301, 64<<10)
}

// The same fed one 1,448-byte segment at a time.
func BenchmarkDecrypt13AES128Segments(b *testing.B) {
	benchSuite(b, 0x1301, 1448)
}

func BenchmarkDecrypt13ChaCha20(b *testing.B) {
	benchSuite(b, 0x1303, 64<<10)
}

func benchSuite(b *testing.B, id uint16, chunk int) {
	s := newSynth(b, id)
	hs := len(s.stream[kafka.ToBroker])
	for range 64 {
		s.appData(kafka.ToBroker, "x", 1<<14)
	}
	keys := keysOf(b, []byte(s.keylog))
	first := s.ends[kafka.ToBroker][0]
	data := s.stream[kafka.ToBroker][hs:]
	b.SetBytes(int64(len(s.app[kafka.ToBroker])))
	b.ReportAllocs()
	for b.Loop() {
		c := NewConn(keys, Options{})
		c.Feed(kafka.ToBroker, s.stream[0][:first], nil)
		c.Feed(kafka.ToClient, s.stream[1], nil)
		c.Feed(kafka.ToBroker, s.stream[0][first:hs], nil)
		n := 0
		for d := data; len(d) > 0; {
			k := min(chunk, len(d))
			out, _, _ := c.Feed(kafka.ToBroker, d[:k], []kafka.Span{{End: k}})
			n += len(out)
			d = d[k:]
		}
		if n != 1<<20 {
			b.Fatalf("%d bytes", n)
		}
	}
}
