package pipeline

import (
	"encoding/binary"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/samples/netsim"
)

// openSink lists the client endpoints of the connections opened.
type openSink struct{ clients []netip.AddrPort }

func (s *openSink) Open(c *Conn)               { s.clients = append(s.clients, c.Client) }
func (s *openSink) Event(*Conn, *decode.Event) {}
func (s *openSink) Closed(*Conn)               {}

// TestConnectionCapSameForEveryWorkerCount runs a capture over the
// connection cap, in waves that close some connections and open others,
// with 1, 2 and 3 workers: the same connections must be analysed and the
// same ones dropped, counted once each, whatever the workers.
func TestConnectionCapSameForEveryWorkerCount(t *testing.T) {
	const max = 1000
	c := netsim.New(netsim.Options{Format: netsim.Pcap, Seed: 5})
	partial := make([]byte, 4+20) // a frame of 1000 bytes of which 20 come
	binary.BigEndian.PutUint32(partial, 1000)
	var open []*netsim.Conn
	port := 0
	wave := func(n int) {
		for range n {
			port++
			cl := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 9, byte(port >> 8), byte(port)}), uint16(20000+port%30000))
			cn := c.Open(cl, netip.MustParseAddrPort("10.0.0.2:9092"), netsim.ConnOptions{})
			cn.Send(true, partial)
			cn.Send(true, []byte("more of it")) // segments of dropped connections count once
			open = append(open, cn)
			c.Advance(time.Millisecond)
		}
	}
	wave(1500) // 1000 admitted, 500 dropped
	for _, cn := range open[:300] {
		cn.Close(true) // 300 slots free
	}
	wave(400) // 300 admitted, 100 dropped
	path := filepath.Join(t.TempDir(), "cap.pcap")
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	opt := Options{Files: []string{path}, Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts(), MaxConnections: max}}
	sameRun(t, opt, 2, 3)
	var first []netip.AddrPort
	for _, workers := range []int{1, 2, 3} {
		opt.Workers = workers
		s := &openSink{}
		res, err := Run(t.Context(), opt, s)
		if err != nil {
			t.Fatal(err)
		}
		if sum := res.Summary; sum.Connections != 1300 || sum.Reassembly.ConnectionsDropped != 600 {
			t.Errorf("%d workers: %d connections analysed, %d dropped; want 1300 and 600", workers, sum.Connections, sum.Reassembly.ConnectionsDropped)
		}
		slices.SortFunc(s.clients, netip.AddrPort.Compare)
		if first == nil {
			first = s.clients
		} else if !slices.Equal(first, s.clients) {
			t.Errorf("%d workers: other connections analysed than with one", workers)
		}
	}
}
