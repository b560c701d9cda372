package pipeline

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kidscope/kidscope/internal/synth"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/samples/netsim"
)

// TestReuseAfterNotKafka: a connection on a 4-tuple carries HTTP and is
// never closed in the capture; later a Kafka client takes the same
// 4-tuple, with a handshake or, in a capture started after it, without.
// Every one of its 200 requests and their responses must be decoded, as
// a new connection. The HTTP connection is judged not Kafka once it sent
// 64 KiB; a short one is not, and gives way only when it has been silent
// for FlushAfter.
func TestReuseAfterNotKafka(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      int // bytes of HTTP body
		midStream bool
		pause     time.Duration
	}{
		{"a SYN on the 4-tuple", 70 << 10, false, 0},
		{"no SYN, sequence numbers far from the HTTP stream's", 70 << 10, true, 0},
		{"a short HTTP request, a SYN after a pause", 0, false, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := synth.New(netsim.Options{Format: netsim.Pcap, Seed: 11})
			http := b.C.Open(synth.Client4, synth.Broker4, netsim.ConnOptions{})
			req := fmt.Appendf(nil, "POST /upload HTTP/1.1\r\nHost: broker:9092\r\nContent-Length: %d\r\n\r\n", tc.body)
			http.Send(true, append(req, bytes.Repeat([]byte("a=1&"), tc.body/4)...))
			http.Send(false, []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
			b.C.Advance(tc.pause)
			want := len(b.Msgs)
			c := b.Open(synth.Client4, synth.Broker4, netsim.ConnOptions{MidStream: tc.midStream, ClientISN: 0x9000_0000, ServerISN: 0x1000_0000}, "after-http")
			for i := range 100 {
				c.Short("r" + string(rune('a'+i%26)) + "-")
			}
			c.N.Close(true)
			path := filepath.Join(t.TempDir(), "reuse.pcap")
			if err := b.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{1, 3} {
				col, sum := runPipeline(t, Options{Files: []string{path}, Workers: workers})
				requests := 0
				for _, m := range col.msgs {
					if m.Request {
						requests++
					}
				}
				if requests != 200 || len(col.msgs) != 400 {
					t.Errorf("%d workers: %d requests and %d responses decoded, want 200 and 200", workers, requests, len(col.msgs)-requests)
				}
				if len(b.Msgs)-want != 400 {
					t.Fatalf("the capture has %d messages, want 400", len(b.Msgs)-want)
				}
				sameMessages(t, col.msgs, b.Msgs[want:])
				if sum.Reassembly.Reused != 1 || sum.Connections != 2 || sum.NotKafka != 1 {
					t.Errorf("%d workers: %d connections, %d reused, %d not Kafka; want 2, 1, 1", workers, sum.Connections, sum.Reassembly.Reused, sum.NotKafka)
				}
				if len(col.closed) == 2 && col.closed[1].MidStream[kafka.ToBroker] != tc.midStream {
					t.Errorf("the Kafka connection: mid-stream %v, want %v", col.closed[1].MidStream, tc.midStream)
				}
			}
		})
	}
}
