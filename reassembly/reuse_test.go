package reassembly

import (
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/kafka"
)

// abandoner is a transcript that abandons a connection once it hands over
// bytes starting "GET", as a decoder that finds them not Kafka would.
type abandoner struct{ transcript }

func (r *abandoner) Data(c *Conn, d kafka.Direction, data []byte, spans []kafka.Span) {
	r.transcript.Data(c, d, data, spans)
	if strings.HasPrefix(string(data), "GET") {
		c.Abandoned = true
	}
}

// TestReuseCases: when a segment starts a new connection on a 4-tuple the
// capture still holds a connection on.
func TestReuseCases(t *testing.T) {
	handshake := []seg{up(99, syn, ""), down(499, 100, syn|ack, ""), up(100, ack, "")}
	newSYN, synAck := up(7_000_000, syn, ""), down(900, 7_000_001, syn|ack, "")
	for _, tc := range []struct {
		name   string
		segs   []seg
		conns  int
		reused int64
	}{
		{"a retransmitted SYN is the same connection", append(handshake, up(99, syn, ""), up(100, ack, "req")), 1, 0},
		{"a new SYN on a live connection is dropped", append(handshake, up(100, ack, "req"), newSYN, synAck, up(7_000_001, ack, "x")), 1, 0},
		{"a new SYN on an abandoned connection starts another", append(handshake, up(100, ack, "GET /"), newSYN, synAck, up(7_000_001, ack, "x")), 2, 1},
		{"a new SYN after a FIN starts another", append(handshake, up(100, ack, "req"), up(103, fin|ack, ""), newSYN, synAck, up(7_000_001, ack, "x")), 2, 1},
		{"a new SYN after FlushAfter of silence starts another", append(handshake, up(100, ack, "req"), seg{client: clientA, toBroker: true, seq: 7_000_000, flags: syn, after: 4 * time.Second}, synAck, up(7_000_001, ack, "x")), 2, 1},
		{"bytes far off on an abandoned connection start another", append(handshake, up(100, ack, "GET /"), up(90_000_000, ack, "x")), 2, 1},
		{"bytes far behind on an abandoned connection start another", append(handshake[:0:0], up(90_000_000, ack, "GET /"), up(100, ack, "x")), 2, 1},
		{"a retransmission on an abandoned connection does not", append(handshake, up(100, ack, "GET /"), up(100, ack, "GET /")), 1, 0},
		{"bytes far off on a live connection are held ahead of a hole", append(handshake, up(100, ack, "req"), up(90_000_000, ack, "x")), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r abandoner
			a := New(Options{Ports: DefaultPorts()}, &r)
			now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			var p capture.Packet
			var tcp layers.TCP
			for i, s := range tc.segs {
				now = now.Add(time.Millisecond + s.after)
				g := segment{frame: int64(i + 1), at: now, src: s.client, dst: srv, seq: s.seq, ack: s.ack, flags: s.flags, payload: []byte(s.data)}
				if !s.toBroker {
					g.src, g.dst = srv, s.client
				}
				if err := g.packet(&p, &tcp); err != nil {
					t.Fatal(err)
				}
				a.Add(&p)
			}
			a.Finish()
			opened := 0
			for _, l := range r.lines {
				if strings.HasPrefix(l, "open") {
					opened++
				}
			}
			if st := a.Stats(); opened != tc.conns || st.Reused != tc.reused {
				t.Errorf("%d connections, %d reused; want %d and %d\n%s", opened, st.Reused, tc.conns, tc.reused, strings.Join(r.lines, "\n"))
			}
		})
	}
}
