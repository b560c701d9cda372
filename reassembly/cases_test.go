package reassembly

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/kafka"
)

// transcript is a Handler that writes its calls down as lines.
type transcript struct{ lines []string }

func (r *transcript) Open(c *Conn) {
	r.lines = append(r.lines, fmt.Sprintf("open %d %v mid %v", c.ID, c.Client, c.MidStream))
}

func (r *transcript) Data(c *Conn, d kafka.Direction, data []byte, spans []kafka.Span) {
	var at []string
	for _, s := range spans {
		at = append(at, fmt.Sprintf("%d:%d", s.End, s.At.Frame))
	}
	r.lines = append(r.lines, fmt.Sprintf("data %d %v %q @%s", c.ID, d, data, strings.Join(at, ",")))
}

func (r *transcript) Gap(c *Conn, d kafka.Direction, lost int, at kafka.FrameRef) {
	r.lines = append(r.lines, fmt.Sprintf("gap %d %v %d @%d", c.ID, d, lost, at.Frame))
}

func (r *transcript) Closed(c *Conn, at kafka.FrameRef) {
	r.lines = append(r.lines, fmt.Sprintf("closed %d @%d", c.ID, at.Frame))
}

const (
	fin = 1
	syn = 2
	rst = 4
	ack = 16
)

var (
	clientA = netip.MustParseAddrPort("10.0.0.1:40000")
	clientB = netip.MustParseAddrPort("10.0.0.1:40001")
)

// seg is a segment of a table case: frames are numbered in order (per
// file), at a millisecond each unless after says more.
type seg struct {
	client   netip.AddrPort
	toBroker bool
	seq, ack uint32
	flags    byte
	data     string
	after    time.Duration
	file     int
}

func up(seq uint32, flags byte, data string) seg {
	return seg{client: clientA, toBroker: true, seq: seq, flags: flags, data: data}
}

func down(seq, ackd uint32, flags byte, data string) seg {
	return seg{client: clientA, seq: seq, ack: ackd, flags: flags, data: data}
}

// runCase feeds the segments to an assembler, then Finish, and returns
// the transcript: the calls made during each frame, then "finish" and the
// calls Finish made.
func runCase(t *testing.T, opt Options, segs []seg) []string {
	t.Helper()
	var r transcript
	if !opt.Ports.Auto && opt.Ports.set == nil {
		opt.Ports = DefaultPorts()
	}
	a := New(opt, &r)
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var frames [2]int64
	var p capture.Packet
	var tcp layers.TCP
	for _, s := range segs {
		now = now.Add(time.Millisecond + s.after)
		frames[s.file]++
		g := segment{file: s.file, frame: frames[s.file], at: now, src: s.client, dst: srv, seq: s.seq, ack: s.ack, flags: s.flags, payload: []byte(s.data)}
		if !s.toBroker {
			g.src, g.dst = srv, s.client
		}
		if err := g.packet(&p, &tcp); err != nil {
			t.Fatal(err)
		}
		a.Add(&p)
	}
	r.lines = append(r.lines, "finish")
	a.Finish()
	return r.lines
}

func TestAssemblerCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		segs []seg
		want []string
	}{{
		name: "in order, both directions, after a handshake",
		segs: []seg{up(99, syn, ""), down(499, 100, syn|ack, ""), up(100, ack, "req"), down(500, 103, ack, "resp")},
		want: []string{"open 1 10.0.0.1:40000 mid [false false]", `data 1 to-broker "req" @3:3`, `data 1 to-client "resp" @4:4`, "finish", "closed 1 @4"},
	}, {
		name: "mid-stream: starts at the first data, no gap",
		segs: []seg{down(500, 100, ack, "resp"), up(100, ack, "req")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-client "resp" @4:1`, `data 1 to-broker "req" @3:2`, "finish", "closed 1 @2"},
	}, {
		name: "retransmitted and overlapping bytes: those handed over first win",
		segs: []seg{up(100, ack, "hello"), up(100, ack, "HEL"), up(103, ack, "LOxyz")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "hello" @5:1`, `data 1 to-broker "xyz" @3:3`, "finish", "closed 1 @3"},
	}, {
		name: "held bytes overlapped by later held bytes: the later win",
		segs: []seg{up(100, ack, "ab"), up(105, ack, "WXYZ"), up(105, ack, "wx"), up(102, ack, "cde")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "ab" @2:1`, `data 1 to-broker "cdewxYZ" @7:4`, "finish", "closed 1 @4"},
	}, {
		name: "out of order: held until the hole fills, complete at the filling frame",
		segs: []seg{up(100, ack, "ab"), up(104, ack, "ef"), up(102, ack, "cd")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "ab" @2:1`, `data 1 to-broker "cdef" @4:3`, "finish", "closed 1 @3"},
	}, {
		name: "a cap on held pages gives the first hole up",
		opt:  Options{MaxPagesPerConnection: 2},
		segs: []seg{up(100, ack, "ab"), up(110, ack, "x"), up(120, ack, "y")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "ab" @2:1`, "gap 1 to-broker 8 @3", `data 1 to-broker "x" @1:3`,
			"finish", "gap 1 to-broker 9 @3", `data 1 to-broker "y" @1:3`, "closed 1 @3"},
	}, {
		name: "a hole is given up after FlushAfter of capture time",
		segs: []seg{up(100, ack, "ab"), up(110, ack, "x"), {client: clientB, toBroker: true, seq: 7, flags: ack, data: "other", after: 4 * time.Second}},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "ab" @2:1`, "open 2 10.0.0.1:40001 mid [true true]", `data 2 to-broker "other" @5:3`,
			"gap 1 to-broker 8 @2", `data 1 to-broker "x" @1:2`, "finish", "closed 1 @2", "closed 2 @3"},
	}, {
		name: "a segment acknowledging bytes the capture lacks: the hole is given up first",
		segs: []seg{up(100, ack, "ab"), up(104, ack, "ef"), down(500, 106, ack, "R")},
		// The bytes given up complete at the frame that brought them.
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "ab" @2:1`, "gap 1 to-broker 2 @2", `data 1 to-broker "ef" @2:2`,
			`data 1 to-client "R" @1:3`, "finish", "closed 1 @3"},
	}, {
		name: "an RST ends both directions, the held data handed over first",
		segs: []seg{up(100, ack, "ab"), down(500, 102, ack, "xy"), down(510, 102, ack, "zz"), up(102, rst, "")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "ab" @2:1`, `data 1 to-client "xy" @2:2`,
			"gap 1 to-client 8 @3", `data 1 to-client "zz" @2:3`, "closed 1 @4", "finish"},
	}, {
		name: "FINs both ways close the connection at the second",
		segs: []seg{up(100, ack, "q"), down(500, 101, ack, "r"), up(101, fin|ack, ""), down(501, 102, fin|ack, ""), up(102, ack, "")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "q" @1:1`, `data 1 to-client "r" @1:2`, "closed 1 @4", "finish"},
	}, {
		name: "bare ACKs, FINs and RSTs open no connection",
		segs: []seg{up(100, ack, ""), down(500, 100, fin|ack, ""), up(100, rst, "")},
		want: []string{"finish"},
	}, {
		name: "a SYN after a close on the same 4-tuple starts a new connection",
		segs: []seg{up(100, ack, "one"), up(103, rst, ""), up(9999, syn, ""), down(7999, 10000, syn|ack, ""), up(10000, ack, "two")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "one" @3:1`, "closed 1 @2",
			"open 2 10.0.0.1:40000 mid [false false]", `data 2 to-broker "two" @3:5`, "finish", "closed 2 @5"},
	}, {
		name: "an idle connection is closed after IdleAfter; its 4-tuple then starts anew",
		opt:  Options{IdleAfter: time.Minute},
		segs: []seg{up(100, ack, "a"), {client: clientB, toBroker: true, seq: 7, flags: ack, data: "b", after: 2 * time.Minute}, up(101, ack, "c")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "a" @1:1`, "open 2 10.0.0.1:40001 mid [true true]", `data 2 to-broker "b" @1:2`,
			"closed 1 @1", "open 3 10.0.0.1:40000 mid [true true]", `data 3 to-broker "c" @1:3`, "finish", "closed 2 @2", "closed 3 @3"},
	}, {
		name: "a flush maps bytes to the running maximum of their frames",
		segs: []seg{up(100, ack, "ab"), up(106, ack, "gh"), up(104, ack, "ef")},
		want: []string{"open 1 10.0.0.1:40000 mid [true true]", `data 1 to-broker "ab" @2:1`, "finish", "gap 1 to-broker 2 @3", `data 1 to-broker "efgh" @2:3,4:3`, "closed 1 @3"},
	}, {
		name: "flushes visit connections in the order of their first frames, file by file",
		segs: []seg{
			{client: clientA, toBroker: true, seq: 99, flags: syn, file: 1},
			{client: clientB, toBroker: true, seq: 99, flags: syn},
			{client: clientA, seq: 499, ack: 100, flags: syn | ack, file: 1},
			{client: clientB, seq: 499, ack: 100, flags: syn | ack},
			{client: clientA, toBroker: true, seq: 105, flags: ack, data: "a", file: 1},
			{client: clientB, toBroker: true, seq: 105, flags: ack, data: "b"},
		},
		want: []string{"finish", "open 1 10.0.0.1:40001 mid [false false]", "gap 1 to-broker 5 @3", `data 1 to-broker "b" @1:3`, "closed 1 @3",
			"open 2 10.0.0.1:40000 mid [false false]", "gap 2 to-broker 5 @3", `data 2 to-broker "a" @1:3`, "closed 2 @3"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCase(t, tc.opt, tc.segs)
			if !slices.Equal(got, tc.want) {
				t.Errorf("calls:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

// TestSplitSharesMaxConnections checks that assemblers made with options
// from one Split count their connections together against MaxConnections.
func TestSplitSharesMaxConnections(t *testing.T) {
	opt := Options{Ports: DefaultPorts(), MaxConnections: 1}.Split(2)
	var r1, r2 transcript
	a1, a2 := New(opt, &r1), New(opt, &r2)
	var p capture.Packet
	var tcp layers.TCP
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(a *Assembler, frame int64, client netip.AddrPort) {
		g := segment{frame: frame, at: now, src: client, dst: srv, seq: 100, flags: ack, payload: []byte("x")}
		if err := g.packet(&p, &tcp); err != nil {
			t.Fatal(err)
		}
		a.Add(&p)
	}
	add(a1, 1, clientA)
	add(a2, 2, clientB)
	if st := a2.Stats(); st.ConnectionsDropped != 1 || len(r2.lines) != 0 {
		t.Errorf("second assembler: stats %+v, calls %v; want its connection dropped", st, r2.lines)
	}
	a1.Finish() // makes room
	add(a2, 3, netip.MustParseAddrPort("10.0.0.1:40002"))
	if st := a2.Stats(); st.Connections != 1 {
		t.Errorf("second assembler after the first finished: stats %+v, want a connection", st)
	}
}
