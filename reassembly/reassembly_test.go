package reassembly

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/samples/netsim"
)

var (
	cli = netip.MustParseAddrPort("10.0.0.1:50000")
	srv = netip.MustParseAddrPort("10.0.0.2:9092")
)

// call is one Handler call, in the order they came.
type call struct {
	kind   string // open, data, gap, closed
	conn   int
	dir    kafka.Direction
	n      int   // data: bytes; gap: bytes lost
	frame  int64 // gap, closed: the frame given
	during int64 // frame of the packet being added when the call came (0: Finish)
}

// halfSeen is what one direction of a connection handed over.
type halfSeen struct {
	data   []byte
	frames []int64 // frame at which each byte of data became available
	gaps   []int   // data offsets where a gap came before, with their sizes in lost
	lost   []int
}

// recorder is a Handler that keeps everything.
type recorder struct {
	t      *testing.T
	now    int64
	calls  []call
	conns  []*Conn // in the order opened
	halves map[*Conn]*[2]halfSeen
	closed map[*Conn]int
}

func (r *recorder) Open(c *Conn) {
	if r.halves[c] != nil {
		r.t.Errorf("connection %d opened twice", c.ID)
	}
	r.halves[c] = &[2]halfSeen{}
	r.conns = append(r.conns, c)
	r.calls = append(r.calls, call{kind: "open", conn: c.ID, during: r.now})
}

func (r *recorder) Data(c *Conn, d kafka.Direction, data []byte, spans []kafka.Span) {
	h := &r.halves[c][d]
	if len(spans) == 0 || spans[len(spans)-1].End != len(data) {
		r.t.Errorf("connection %d %v: spans %v do not end at %d", c.ID, d, spans, len(data))
	}
	start := 0
	for _, sp := range spans {
		if sp.End <= start || sp.End > len(data) {
			r.t.Errorf("connection %d %v: span %+v after %d", c.ID, d, sp, start)
			continue
		}
		for range sp.End - start {
			h.frames = append(h.frames, sp.At.Frame)
		}
		start = sp.End
	}
	h.data = append(h.data, data...)
	r.calls = append(r.calls, call{kind: "data", conn: c.ID, dir: d, n: len(data), during: r.now})
}

func (r *recorder) Gap(c *Conn, d kafka.Direction, lost int, at kafka.FrameRef) {
	h := &r.halves[c][d]
	h.gaps = append(h.gaps, len(h.data))
	h.lost = append(h.lost, lost)
	r.calls = append(r.calls, call{kind: "gap", conn: c.ID, dir: d, n: lost, frame: at.Frame, during: r.now})
}

func (r *recorder) Closed(c *Conn, at kafka.FrameRef) {
	r.closed[c]++
	r.calls = append(r.calls, call{kind: "closed", conn: c.ID, frame: at.Frame, during: r.now})
}

// find returns the calls of one kind.
func (r *recorder) find(kind string) []call {
	var out []call
	for _, c := range r.calls {
		if c.kind == kind {
			out = append(out, c)
		}
	}
	return out
}

// assemble writes the capture, reads it back through capture.Open and
// assembles every segment.
func assemble(t *testing.T, c *netsim.Capture, opt Options) (*recorder, *Assembler) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.pcapng")
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	rd, err := capture.Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if opt.Ports.set == nil && !opt.Ports.Auto {
		opt.Ports = DefaultPorts()
	}
	rec := &recorder{t: t, halves: map[*Conn]*[2]halfSeen{}, closed: map[*Conn]int{}}
	a := New(opt, rec)
	var p capture.Packet
	for {
		if err := rd.Next(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rec.now = p.Frame
		a.Add(&p)
	}
	rec.now = 0
	a.Finish()
	for _, c := range rec.conns {
		if rec.closed[c] != 1 {
			t.Errorf("connection %d closed %d times", c.ID, rec.closed[c])
		}
	}
	return rec, a
}

// payload returns n deterministic bytes that differ with salt.
func payload(n int, salt byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i/251) ^ salt
	}
	return b
}

// oracle computes, from the capture alone, the frame at which each byte of
// each direction becomes available in order: when every byte before it has
// been captured. It assumes nothing is lost.
func oracle(t *testing.T, c *netsim.Capture) map[string][]int64 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "o.pcapng")
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	rd, err := capture.Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	type dirState struct {
		base  uint32
		have  map[uint32]bool // offsets captured
		next  uint32          // offsets before this are available
		frame []int64
	}
	st := map[string]*dirState{}
	var p capture.Packet
	for {
		if err := rd.Next(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%v:%d>%v:%d", p.Network.Src(), p.TCP.SrcPort, p.Network.Dst(), p.TCP.DstPort)
		s := st[key]
		if s == nil {
			s = &dirState{base: p.TCP.Seq, have: map[uint32]bool{}}
			if p.TCP.SYN {
				s.base++
			}
			st[key] = s
		}
		for i := range uint32(len(p.TCP.Payload)) {
			s.have[p.TCP.Seq+i-s.base] = true
		}
		for s.have[s.next] {
			s.frame = append(s.frame, p.Frame)
			s.next++
		}
	}
	out := map[string][]int64{}
	for k, s := range st {
		out[k] = s.frame
	}
	return out
}

func dirKey(from, to netip.AddrPort) string {
	return fmt.Sprintf("%v:%d>%v:%d", from.Addr(), from.Port(), to.Addr(), to.Port())
}

// TestSpansFollowCaptureOrder checks the stream bytes and the frame of
// every byte under reordering, retransmission, overlap and segments lost on
// the wire and retransmitted, against an oracle computed from the capture.
func TestSpansFollowCaptureOrder(t *testing.T) {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG, Seed: 3})
	cn := c.Open(cli, srv, netsim.ConnOptions{})
	var up, down []byte
	var doneUp, doneDown []int
	send := func(fromClient bool, data []byte, opts ...netsim.SegOpt) {
		done := cn.Send(fromClient, data, opts...)
		if fromClient {
			up = append(up, data...)
			doneUp = append(doneUp, done)
		} else {
			down = append(down, data...)
			doneDown = append(doneDown, done)
		}
	}
	send(true, payload(6000, 1), netsim.Reorder(0, 3))
	send(false, payload(100, 2))
	send(true, payload(9000, 3), netsim.Retransmit(2), netsim.Overlap(4, 700), netsim.Reorder(1, 5))
	send(false, payload(20000, 4), netsim.Lose(3), netsim.Retransmit(3), netsim.Reorder(7, 8), netsim.Retransmit(13))
	send(true, payload(300, 5), netsim.SplitAt(1, 2, 3), netsim.Reorder(0, 3), netsim.Retransmit(1))
	send(false, payload(5000, 6), netsim.Overlap(2, 1448), netsim.Overlap(3, 100))
	cn.Close(false)

	rec, a := assemble(t, c, Options{})
	want := oracle(t, c)
	if len(rec.conns) != 1 {
		t.Fatalf("%d connections", len(rec.conns))
	}
	hs := rec.halves[rec.conns[0]]
	for _, d := range []struct {
		dir  kafka.Direction
		key  string
		data []byte
	}{{kafka.ToBroker, dirKey(cli, srv), up}, {kafka.ToClient, dirKey(srv, cli), down}} {
		h := hs[d.dir]
		if !bytes.Equal(h.data, d.data) {
			t.Errorf("%v: %d bytes handed over differ from the %d sent", d.dir, len(h.data), len(d.data))
			continue
		}
		if len(h.gaps) > 0 {
			t.Errorf("%v: gaps at %v", d.dir, h.gaps)
		}
		for i, f := range want[d.key] {
			if h.frames[i] != f {
				t.Errorf("%v: byte %d available at frame %d, want %d", d.dir, i, h.frames[i], f)
				break
			}
		}
	}
	// Each message's last byte: netsim's Send result.
	ends := func(sizes ...int) []int {
		var out []int
		e := 0
		for _, s := range sizes {
			e += s
			out = append(out, e-1)
		}
		return out
	}
	for i, off := range ends(6000, 9000, 300) {
		if got := hs[kafka.ToBroker].frames[off]; got != int64(doneUp[i]) {
			t.Errorf("request %d complete at frame %d, netsim says %d", i, got, doneUp[i])
		}
	}
	for i, off := range ends(100, 20000, 5000) {
		if got := hs[kafka.ToClient].frames[off]; got != int64(doneDown[i]) {
			t.Errorf("response %d complete at frame %d, netsim says %d", i, got, doneDown[i])
		}
	}
	if st := a.Stats(); st.Gaps != 0 || st.Connections != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestGaps checks lost and snap-cut segments: a gap of the right size
// before the data that follows, counted in Stats, the data after it handed
// over with its own frames, and before any segment of the peer that
// acknowledges it.
func TestGaps(t *testing.T) {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG, Seed: 4})
	cn := c.Open(cli, srv, netsim.ConnOptions{})
	req1 := payload(5000, 1) // segments of 1448: the third is lost
	cn.Send(true, req1, netsim.Lose(2))
	req2 := payload(700, 2)
	done2 := cn.Send(true, req2)
	respFrame := c.Frames() + 1
	cn.Send(false, payload(200, 3))
	resp2 := payload(4000, 4) // the second segment is cut to 100 bytes
	cn.Send(false, resp2, netsim.SnapCut(1, 100))
	req3 := payload(3000, 5) // the last segment is lost, nothing follows at once
	cn.Send(true, req3, netsim.Lose(2))
	cn.Send(false, payload(50, 6))
	req4 := payload(100, 7)
	done4 := cn.Send(true, req4)
	cn.Close(true)

	rec, a := assemble(t, c, Options{})
	hs := rec.halves[rec.conns[0]]
	up := hs[kafka.ToBroker]
	lost3 := 3000 - 2*1448
	if want := []int{2 * 1448, 5000 + 700 - 1448 + 3000 - (3000 - 2*1448)}; fmt.Sprint(up.gaps) != fmt.Sprint(want) {
		t.Errorf("gaps to the broker at %v, want %v", up.gaps, want)
	}
	if want := []int{1448, lost3}; fmt.Sprint(up.lost) != fmt.Sprint(want) {
		t.Errorf("gap sizes to the broker %v, want %v", up.lost, want)
	}
	var wantUp []byte
	wantUp = append(wantUp, req1[:2*1448]...)
	wantUp = append(wantUp, req1[3*1448:]...)
	wantUp = append(wantUp, req2...)
	wantUp = append(wantUp, req3[:2*1448]...)
	wantUp = append(wantUp, req4...)
	if !bytes.Equal(up.data, wantUp) {
		t.Errorf("to the broker: %d bytes handed over, want %d", len(up.data), len(wantUp))
	}
	// req2 and req4 complete where netsim says, not when the gap is given up.
	if len(up.frames) == len(wantUp) {
		// The bytes held past the first gap come with the frame that
		// carried them, captured before the one during which the gap is
		// given up (the assembler keeps each held segment's context, which
		// later packets must not reuse).
		if gaps := rec.find("gap"); len(gaps) > 0 {
			for i := 2 * 1448; i < 5000-1448; i++ {
				if f := up.frames[i]; f >= gaps[0].during || f <= 2 {
					t.Fatalf("byte %d of the first request, held past the gap, has frame %d; the gap was given up during frame %d", i+1448, f, gaps[0].during)
				}
			}
		}
		if f := up.frames[5000-1448+700-1]; f != int64(done2) {
			t.Errorf("second request complete at frame %d, want %d", f, done2)
		}
		if f := up.frames[len(wantUp)-1]; f != int64(done4) {
			t.Errorf("last request complete at frame %d, want %d", f, done4)
		}
	}
	down := hs[kafka.ToClient]
	if want := []int{1448 - 100}; len(down.lost) != 1 || down.lost[0] != want[0] || down.gaps[0] != 200+1448+100 {
		t.Errorf("gaps to the client %v at %v, want %v at %d", down.lost, down.gaps, want, 200+1448+100)
	}
	st := a.Stats()
	if st.Gaps != 3 || st.GapBytes != int64(1448+lost3+1448-100) {
		t.Errorf("stats: %d gaps of %d bytes, want 3 of %d", st.Gaps, st.GapBytes, 1448+lost3+1448-100)
	}
	// The request after the first gap is handed over before the response
	// that acknowledges it is.
	var reqAt, respAt = -1, -1
	for i, cl := range rec.calls {
		if cl.kind == "data" && cl.dir == kafka.ToBroker && reqAt < 0 && i > 0 && rec.calls[i-1].kind == "gap" {
			reqAt = i
		}
		if cl.kind == "data" && cl.dir == kafka.ToClient && cl.during == int64(respFrame) {
			respAt = i
		}
	}
	if reqAt < 0 || respAt < 0 || reqAt > respAt {
		t.Errorf("data after the gap handed over at call %d, the response at call %d: %+v", reqAt, respAt, rec.calls)
	}
	for _, g := range rec.find("gap") {
		if g.during == 0 {
			t.Errorf("gap %+v given up only at the end of the capture", g)
		}
	}
}

// TestClose checks how connections end: FIN by the client or the broker,
// RST by either, each reported with its direction and frame, and Closed
// called once, when the connection ends rather than at the end of the
// capture.
func TestClose(t *testing.T) {
	for _, tc := range []struct {
		name       string
		reset      bool
		fromClient bool
	}{
		{"FIN by client", false, true},
		{"FIN by broker", false, false},
		{"RST by client", true, true},
		{"RST by broker", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := netsim.New(netsim.Options{Format: netsim.PcapNG})
			cn := c.Open(cli, srv, netsim.ConnOptions{})
			cn.Send(true, payload(100, 1))
			cn.Send(false, payload(3000, 2))
			closeFrame := int64(c.Frames() + 1)
			if tc.reset {
				cn.Reset(tc.fromClient)
			} else {
				cn.Close(tc.fromClient)
			}
			// Closed comes with the segment that ends the connection: the
			// RST, or the second FIN.
			last := closeFrame
			if !tc.reset {
				last++
			}
			// Another connection goes on after this one ended.
			other := c.Open(netip.MustParseAddrPort("10.0.0.3:40000"), srv, netsim.ConnOptions{})
			other.Send(true, payload(10, 3))

			rec, _ := assemble(t, c, Options{})
			if len(rec.conns) != 2 {
				t.Fatalf("%d connections", len(rec.conns))
			}
			conn := rec.conns[0]
			by := kafka.ToBroker
			if !tc.fromClient {
				by = kafka.ToClient
			}
			want := kafka.Close{Seen: true, Reset: tc.reset, By: by}
			got := conn.Close
			if got.Seen != want.Seen || got.Reset != want.Reset || got.By != want.By || got.At.Frame != closeFrame {
				t.Errorf("close %+v, want %+v at frame %d", got, want, closeFrame)
			}
			for _, cl := range rec.find("closed") {
				if cl.conn != conn.ID {
					continue
				}
				if cl.frame != last || cl.during != last {
					t.Errorf("Closed(at frame %d) during frame %d; want at and during frame %d", cl.frame, cl.during, last)
				}
			}
			if c2 := rec.conns[1].Close; c2.Seen {
				t.Errorf("second connection closed: %+v", c2)
			}
		})
	}
}

// TestMidStream checks the mid-stream flags: a connection whose handshake
// was captured has none, one seen mid-stream has both, its first byte is
// handed over as it is, with no gap; and each opens with its first data.
func TestMidStream(t *testing.T) {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG})
	a := c.Open(cli, srv, netsim.ConnOptions{})
	b := c.Open(netip.MustParseAddrPort("10.0.0.3:40000"), srv, netsim.ConnOptions{MidStream: true})
	// The mid-stream connection's broker speaks first: the broker side is
	// still found by its port.
	bFirst := int64(c.Frames() + 1)
	b.Send(false, payload(2000, 1))
	b.Send(true, payload(30, 2))
	a.Send(true, payload(40, 3))
	rec, _ := assemble(t, c, Options{})
	if len(rec.conns) != 2 {
		t.Fatalf("%d connections", len(rec.conns))
	}
	mid, full := rec.conns[0], rec.conns[1]
	if mid.MidStream != [2]bool{true, true} || full.MidStream != [2]bool{false, false} {
		t.Errorf("mid-stream flags %v and %v", mid.MidStream, full.MidStream)
	}
	if mid.ID != 1 || full.ID != 2 {
		t.Errorf("IDs %d and %d: want them in the order of first data", mid.ID, full.ID)
	}
	if mid.Client != b.Client() || mid.Broker != b.Server() || full.Client != cli || full.Broker != srv {
		t.Errorf("endpoints %v>%v and %v>%v", mid.Client, mid.Broker, full.Client, full.Broker)
	}
	if mid.First.Frame != bFirst || full.First.Frame != 1 {
		t.Errorf("first frames %d and %d, want %d and 1", mid.First.Frame, full.First.Frame, bFirst)
	}
	hs := rec.halves[mid]
	if !bytes.Equal(hs[kafka.ToClient].data, payload(2000, 1)) || !bytes.Equal(hs[kafka.ToBroker].data, payload(30, 2)) {
		t.Error("mid-stream data not handed over whole")
	}
	if g := rec.find("gap"); len(g) > 0 {
		t.Errorf("gaps %+v", g)
	}
}

// TestReuse checks that a 4-tuple reused by a new connection, after a FIN
// close and after an RST, makes a new connection with its own data.
func TestReuse(t *testing.T) {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG, Seed: 9})
	var sent [][2][]byte
	for i, end := range []string{"fin-client", "fin-broker", "rst-client", "rst-broker", "none"} {
		cn := c.Open(cli, srv, netsim.ConnOptions{})
		up, down := payload(50+i, byte(i)), payload(3000+i, byte(i+10))
		cn.Send(true, up)
		cn.Send(false, down)
		sent = append(sent, [2][]byte{up, down})
		switch end {
		case "fin-client":
			cn.Close(true)
		case "fin-broker":
			cn.Close(false)
		case "rst-client":
			cn.Reset(true)
		case "rst-broker":
			cn.Reset(false)
		}
	}
	rec, a := assemble(t, c, Options{})
	if len(rec.conns) != len(sent) {
		t.Fatalf("%d connections, want %d", len(rec.conns), len(sent))
	}
	for i, conn := range rec.conns {
		hs := rec.halves[conn]
		if conn.ID != i+1 || conn.MidStream != [2]bool{} {
			t.Errorf("connection %d: ID %d, mid-stream %v", i+1, conn.ID, conn.MidStream)
		}
		if !bytes.Equal(hs[kafka.ToBroker].data, sent[i][0]) || !bytes.Equal(hs[kafka.ToClient].data, sent[i][1]) {
			t.Errorf("connection %d: data differs: %d and %d bytes", i+1, len(hs[kafka.ToBroker].data), len(hs[kafka.ToClient].data))
		}
		if conn.Close.Seen != (i < 4) || conn.Close.Reset != (i == 2 || i == 3) {
			t.Errorf("connection %d: close %+v", i+1, conn.Close)
		}
	}
	if st := a.Stats(); st.Connections != 5 || st.Gaps != 0 || st.Rejected != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestMaxConnections checks the cap on tracked connections: one over it is
// ignored and counted, and room made by a close is used again.
func TestMaxConnections(t *testing.T) {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG})
	var cns []*netsim.Conn
	for i := range 3 {
		cns = append(cns, c.Open(netip.AddrPortFrom(cli.Addr(), uint16(40000+i)), srv, netsim.ConnOptions{}))
	}
	for i, cn := range cns {
		cn.Send(true, payload(100, byte(i)))
		cn.Send(false, payload(100, byte(i)))
	}
	cns[0].Close(true)
	late := c.Open(netip.AddrPortFrom(cli.Addr(), uint16(40010)), srv, netsim.ConnOptions{})
	late.Send(true, payload(10, 9))
	cns[2].Send(true, payload(10, 9)) // still ignored
	rec, a := assemble(t, c, Options{MaxConnections: 2})
	if len(rec.conns) != 3 {
		t.Fatalf("%d connections handed over, want 3", len(rec.conns))
	}
	for i, want := range []uint16{40000, 40001, 40010} {
		if rec.conns[i].Client.Port() != want {
			t.Errorf("connection %d from port %d, want %d", i+1, rec.conns[i].Client.Port(), want)
		}
	}
	if st := a.Stats(); st.ConnectionsDropped != 1 || st.Connections != 3 {
		t.Errorf("stats %+v: want 1 connection dropped, 3 tracked", st)
	}
}

// TestBrokerSide checks which side is the broker: the listed port, in
// either direction of the first segment; with Ports.Auto (or both ports
// listed) the receiver of the SYN, or without one the lower port.
func TestBrokerSide(t *testing.T) {
	type conn struct {
		client, server netip.AddrPort
		mid            bool
		serverFirst    bool
	}
	low := netip.MustParseAddrPort("10.0.0.5:1500")
	high := netip.MustParseAddrPort("10.0.0.6:45000")
	for _, tc := range []struct {
		name                   string
		ports                  []string
		c                      conn
		wantClient, wantBroker netip.AddrPort
	}{
		{"port, handshake", []string{"9092"}, conn{cli, srv, false, false}, cli, srv},
		{"port, mid-stream, broker first", []string{"9092"}, conn{cli, srv, true, true}, cli, srv},
		{"auto, SYN to the higher port", []string{"auto"}, conn{low, high, false, false}, low, high},
		{"auto, mid-stream: the lower port", []string{"auto"}, conn{high, low, true, false}, high, low},
		{"auto, mid-stream from the lower port", []string{"auto"}, conn{low, high, true, true}, high, low},
		{"both ports listed: the SYN decides", []string{"1500,45000"}, conn{low, high, false, false}, low, high},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports, err := ParsePorts(tc.ports)
			if err != nil {
				t.Fatal(err)
			}
			c := netsim.New(netsim.Options{Format: netsim.PcapNG})
			cn := c.Open(tc.c.client, tc.c.server, netsim.ConnOptions{MidStream: tc.c.mid})
			cn.Send(!tc.c.serverFirst, payload(20, 1))
			cn.Send(tc.c.serverFirst, payload(30, 2))
			rec, _ := assemble(t, c, Options{Ports: ports})
			if len(rec.conns) != 1 {
				t.Fatalf("%d connections", len(rec.conns))
			}
			got := rec.conns[0]
			if got.Client != tc.wantClient || got.Broker != tc.wantBroker {
				t.Errorf("client %v broker %v, want %v and %v", got.Client, got.Broker, tc.wantClient, tc.wantBroker)
			}
			// The directions follow: what the side taken for the client
			// sent is ToBroker.
			clientSent, serverSent := payload(20, 1), payload(30, 2)
			if tc.c.serverFirst {
				clientSent, serverSent = serverSent, clientSent
			}
			toBroker := clientSent
			if got.Client != tc.c.client {
				toBroker = serverSent
			}
			if hs := rec.halves[got]; !bytes.Equal(hs[kafka.ToBroker].data, toBroker) {
				t.Errorf("to the broker: %d bytes", len(hs[kafka.ToBroker].data))
			}
		})
	}
	// Segments on no broker port are ignored and counted.
	c := netsim.New(netsim.Options{Format: netsim.PcapNG})
	c.Open(low, high, netsim.ConnOptions{}).Send(true, payload(20, 1))
	rec, a := assemble(t, c, Options{})
	if len(rec.conns) != 0 || a.Stats().Ignored != int64(c.Frames()) || a.Stats().Segments != 0 {
		t.Errorf("%d connections, stats %+v", len(rec.conns), a.Stats())
	}
}

// TestIdle checks that a connection silent for IdleAfter is closed (by
// capture time, when other traffic moves it on), and that data on its
// 4-tuple after that makes a new, mid-stream connection.
func TestIdle(t *testing.T) {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG})
	quiet := c.Open(cli, srv, netsim.ConnOptions{})
	quiet.Send(true, payload(100, 1))
	quiet.Send(false, payload(100, 2))
	busy := c.Open(netip.MustParseAddrPort("10.0.0.3:40000"), srv, netsim.ConnOptions{})
	c.Advance(90 * time.Second)
	busyFrame := int64(c.Frames() + 1)
	busy.Send(true, payload(10, 3))
	c.Advance(90 * time.Second)
	quiet.Send(true, payload(30, 4))
	rec, _ := assemble(t, c, Options{IdleAfter: time.Minute})
	if len(rec.conns) != 3 {
		t.Fatalf("%d connections, want 3", len(rec.conns))
	}
	first := rec.conns[0]
	for _, cl := range rec.find("closed") {
		if cl.conn == first.ID && cl.during != busyFrame {
			t.Errorf("idle connection closed during frame %d, want %d", cl.during, busyFrame)
		}
	}
	if first.Close.Seen {
		t.Errorf("idle connection closed by %+v", first.Close)
	}
	again := rec.conns[2]
	if again.Client != cli || again.MidStream != [2]bool{true, true} {
		t.Errorf("the 4-tuple used again: %+v", again)
	}
	if hs := rec.halves[again]; !bytes.Equal(hs[kafka.ToBroker].data, payload(30, 4)) {
		t.Errorf("data after the idle close: %d bytes", len(hs[kafka.ToBroker].data))
	}
}
