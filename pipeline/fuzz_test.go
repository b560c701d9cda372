package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
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
// closed exactly once (with a small buffer cap, that inputs reach), and
// with three workers the same calls in the same order as with one (with no
// buffer cap within reach: workers share the caps, and would reach them at
// other points).
func FuzzPipeline(f *testing.F) {
	// 39092-39094 are the broker ports of the real captures the corpus
	// was first seeded from; the seed now is a capture whose ports are in
	// its sidecar.
	specs := []string{"39092-39094", "9092"}
	if real, err := os.ReadFile("../testdata/real/kgo-producer-kfake.pcap"); err == nil {
		f.Add(real[:min(len(real), 6000)])
		var meta struct {
			Ports []uint16 `json:"ports"`
		}
		b, err := os.ReadFile("../testdata/real/kgo-producer-kfake.meta.json")
		if err == nil {
			err = json.Unmarshal(b, &meta)
		}
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range meta.Ports {
			specs = append(specs, strconv.Itoa(int(p)))
		}
	}
	ports, err := reassembly.ParsePorts(specs)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		opt := Options{Files: []string{"-"}, Stdin: bytes.NewReader(b),
			Reassembly: reassembly.Options{Ports: ports, MaxPagesTotal: 256, MaxPagesPerConnection: 64},
			Decode:     decode.Options{MaxScan: 8192}}
		sink := &countingSink{t: t}
		sum, err := Run(context.Background(), opt, sink)
		if err != nil {
			return
		}
		if int64(sink.closed) != sum.Connections {
			t.Fatalf("%d connections, %d closed", sum.Connections, sink.closed)
		}
		opt.Reassembly.MaxPagesTotal = 1 << 20
		var traces [2]tracer
		for i, workers := range []int{1, 3} {
			opt.Stdin, opt.Workers = bytes.NewReader(b), workers
			if _, err := Run(context.Background(), opt, &traces[i]); err != nil {
				t.Fatalf("%d workers: %v", workers, err)
			}
		}
		if a, b := strings.Join(traces[0].lines, "\n"), strings.Join(traces[1].lines, "\n"); a != b {
			t.Fatalf("three workers differ from one:\n%s\n--- one:\n%s", b, a)
		}
	})
}
