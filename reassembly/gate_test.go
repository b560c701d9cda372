package reassembly

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture"
)

// TestGate follows the gate's count of connections under a cap of two:
// which segments pass, and how many connections it drops.
func TestGate(t *testing.T) {
	c := func(port uint16) netip.AddrPort { return netip.AddrPortFrom(cli.Addr(), port) }
	type step struct {
		client netip.AddrPort
		flags  byte
		data   string
		after  time.Duration
		toCli  bool
		pass   bool
	}
	for _, tc := range []struct {
		name    string
		steps   []step
		dropped int64
	}{
		{"a third connection is dropped, once, all its segments with it", []step{
			{client: c(1), flags: syn, pass: true}, {client: c(2), data: "x", pass: true},
			{client: c(3), flags: syn}, {client: c(3), data: "x"}, {client: c(3), toCli: true, flags: ack, data: "y"},
			{client: c(1), data: "x", pass: true},
		}, 1},
		{"a bare ACK opens nothing and passes", []step{
			{client: c(1), flags: syn, pass: true}, {client: c(2), data: "x", pass: true},
			{client: c(3), flags: ack, pass: true}, {client: c(4), data: "x"},
		}, 1},
		{"an RST makes room", []step{
			{client: c(1), flags: syn, pass: true}, {client: c(2), data: "x", pass: true},
			{client: c(1), flags: rst | ack, pass: true}, {client: c(3), data: "x", pass: true}, {client: c(4), data: "x"},
		}, 1},
		{"a FIN each way makes room, one FIN does not", []step{
			{client: c(1), flags: syn, pass: true}, {client: c(2), data: "x", pass: true},
			{client: c(1), flags: fin | ack, pass: true}, {client: c(3), data: "x"},
			{client: c(1), toCli: true, flags: fin | ack, pass: true}, {client: c(4), data: "x", pass: true},
		}, 1},
		{"silence for IdleAfter and FlushAfter makes room", []step{
			{client: c(1), flags: syn, pass: true}, {client: c(2), data: "x", pass: true},
			{client: c(2), data: "x", after: 9 * time.Minute, pass: true},
			{client: c(3), data: "x", after: 4*time.Minute + 2*time.Second, pass: true}, {client: c(4), data: "x"},
		}, 1},
		{"a dropped connection counts again after it ended", []step{
			{client: c(1), flags: syn, pass: true}, {client: c(2), data: "x", pass: true},
			{client: c(3), data: "x"}, {client: c(3), flags: rst}, {client: c(3), flags: syn},
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGate(Options{Ports: DefaultPorts(), MaxConnections: 2})
			now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			var p capture.Packet
			var tcp layers.TCP
			for i, s := range tc.steps {
				now = now.Add(time.Millisecond + s.after)
				fl := s.flags
				if fl == 0 {
					fl = ack
				}
				sg := segment{frame: int64(i + 1), at: now, src: s.client, dst: srv, seq: 1, flags: fl, payload: []byte(s.data)}
				if s.toCli {
					sg.src, sg.dst = srv, s.client
				}
				if err := sg.packet(&p, &tcp); err != nil {
					t.Fatal(err)
				}
				if got := g.AdmitTCP(&p); got != s.pass {
					t.Errorf("step %d (%v flags %x %q): passes %v, want %v", i+1, s.client, fl, s.data, got, s.pass)
				}
			}
			if st := g.Stats(); st.ConnectionsDropped != tc.dropped {
				t.Errorf("%d connections dropped, want %d", st.ConnectionsDropped, tc.dropped)
			}
		})
	}
}
