package tlsdec

import (
	"crypto/tls"
	"testing"

	"github.com/kidscope/kidscope/kafka"
)

// FuzzRecords feeds two arbitrary streams to a Conn in chunks of a fuzzed
// size, alternating directions, with gaps every few chunks, with and
// without the key log of the seeds: it must not panic, and what a side
// holds stays bounded.
func FuzzRecords(f *testing.F) {
	s := newSynth(f, 0x1303)
	s.appData(kafka.ToBroker, "produce", 300)
	s.appData(kafka.ToClient, "fetch", 200)
	s.keyUpdate(kafka.ToBroker)
	s.appData(kafka.ToBroker, "more", 10)
	keylog := []byte(s.keylog)
	f.Add(s.stream[0], s.stream[1], uint8(0), true)
	f.Add(s.stream[0], s.stream[1], uint8(7), true)
	f.Add(s.stream[0], s.stream[1], uint8(200), false)
	certs(f)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		tr := recordSizes(f, &tls.Config{MaxVersion: v}, &tls.Config{Certificates: []tls.Certificate{ecCert}}, []int{10, 100})
		keylog = append(keylog, tr.keylog...)
		var st [2][]byte
		for _, w := range tr.writes {
			st[w.side] = append(st[w.side], w.b...)
		}
		f.Add(st[0], st[1], uint8(13), true)
		f.Add(st[0], st[1], uint8(66), false)
	}
	keys := keysOf(f, keylog)
	f.Fuzz(func(t *testing.T, cli, srv []byte, cut uint8, withKey bool) {
		if len(cli)+len(srv) > 1<<16 {
			return
		}
		k := keys
		if !withKey {
			k = nil
		}
		c := NewConn(k, Options{MaxPending: 1 << 16, SeqWindow: 4})
		size := 1 + int(cut)*37
		gapEvery := int(cut % 11)
		streams := [2][]byte{cli, srv}
		fed := [2]int{}
		for i := 0; len(streams[0])+len(streams[1]) > 0; i++ {
			d := kafka.Direction(i % 2)
			if len(streams[d]) == 0 {
				d ^= 1
			}
			n := min(size, len(streams[d]))
			if gapEvery > 3 && i%gapEvery == gapEvery-1 {
				c.Gap(d)
			}
			in := []kafka.Span{{End: n / 2, At: kafka.FrameRef{Frame: int64(i)}}, {End: n, At: kafka.FrameRef{Frame: int64(i) + 1}}}
			if n/2 == 0 {
				in = in[1:]
			}
			out, spans, _ := c.Feed(d, streams[d][:n], in)
			fed[d] += n
			streams[d] = streams[d][n:]
			checkSpans(t, out, spans)
			if len(out) > fed[d] {
				t.Fatalf("%d bytes out of %d in", len(out), fed[d])
			}
			for j := range c.side {
				g := &c.side[j]
				if c.mode != isPlain && len(g.buf) > MaxRecord+5 {
					t.Fatalf("side %d holds %d bytes", j, len(g.buf))
				}
				if len(g.hs.buf) > 4+maxHandshakeMsg {
					t.Fatalf("handshake buffer %d", len(g.hs.buf))
				}
			}
			if c.pendingBytes > c.opt.MaxPending || c.pendingBytes != c.Pending(0)+c.Pending(1) {
				t.Fatalf("pending %d (%d+%d)", c.pendingBytes, c.Pending(0), c.Pending(1))
			}
		}
		c.Flush(kafka.ToBroker)
		c.Flush(kafka.ToClient)
		_ = c.State().Summary()
	})
}
