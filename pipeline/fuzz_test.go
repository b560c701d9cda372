package pipeline

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/reassembly"
)

// countingSink checks that every event names a frame of the input.
type countingSink struct {
	t      *testing.T
	events int
	closed int
}

func (s *countingSink) Event(c *Conn, e *decode.Event) {
	s.events++
	if e.At.Frame < 0 || e.At.File != 0 {
		s.t.Fatalf("event at file %d frame %d", e.At.File, e.At.Frame)
	}
}

func (s *countingSink) Closed(*Conn) { s.closed++ }

// FuzzPipeline runs the whole path, capture parsing to Kafka decoding, on
// arbitrary bytes given as a capture file: no panic, every connection
// closed exactly once.
func FuzzPipeline(f *testing.F) {
	if real, err := os.ReadFile("../testdata/real/producer.pcap"); err == nil {
		f.Add(real[:min(len(real), 6000)])
	}
	f.Add([]byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ports, _ := reassembly.ParsePorts([]string{"39092-39094", "9092"})
		sink := &countingSink{t: t}
		sum, err := Run(context.Background(), Options{Files: []string{"-"}, Stdin: bytes.NewReader(b),
			Reassembly: reassembly.Options{Ports: ports, MaxPagesTotal: 256, MaxPagesPerConnection: 64},
			Decode:     decode.Options{MaxScan: 8192}}, sink)
		if err != nil {
			return
		}
		if int64(sink.closed) != sum.Connections {
			t.Fatalf("%d connections, %d closed", sum.Connections, sink.closed)
		}
	})
}
