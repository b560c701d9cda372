package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
)

// TestOtherPortsOfRealCaptures reads each real client's capture with the
// default broker port, which none of its brokers listens on: nothing is
// decoded, and the ports that look like Kafka must be brokers' ports (the
// kernel picked them; the .meta.json names them), the busiest of them
// first. With workers the summary must be the same.
func TestOtherPortsOfRealCaptures(t *testing.T) {
	files, err := filepath.Glob("../testdata/real/*.pcap")
	if err != nil || len(files) == 0 {
		t.Fatalf("no real captures: %v", err)
	}
	for _, f := range files {
		var meta struct {
			Ports []uint16 `json:"ports"`
		}
		b, err := os.ReadFile(strings.TrimSuffix(f, ".pcap") + ".meta.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		broker := map[uint16]bool{}
		for _, p := range meta.Ports {
			broker[p] = true
		}
		opt := Options{Files: []string{f}, Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}}
		res, err := Run(context.Background(), opt, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum := res.Summary
		if sum.Requests != 0 || sum.Reassembly.Ignored != sum.Capture.TCP {
			t.Fatalf("%s: on port 9092: %d requests, %d of %d TCP packets ignored", f, sum.Requests, sum.Reassembly.Ignored, sum.Capture.TCP)
		}
		if len(sum.KafkaPorts) == 0 || len(sum.OtherPorts) == 0 {
			t.Errorf("%s: no port looks like Kafka: %+v", f, sum.OtherPorts)
			continue
		}
		for _, p := range sum.KafkaPorts {
			if !broker[p.Port] {
				t.Errorf("%s: port %d looks like Kafka but is no broker's (%v)", f, p.Port, meta.Ports)
			}
		}
		if top := sum.OtherPorts[0]; !broker[top.Port] || !top.Kafka {
			t.Errorf("%s: the busiest port is %+v, not a broker's (%v)", f, top, meta.Ports)
		}
		var total int64
		for _, p := range sum.OtherPorts {
			total += p.Packets
		}
		if total > sum.Reassembly.Ignored {
			t.Errorf("%s: the ports count %d packets of %d", f, total, sum.Reassembly.Ignored)
		}
		for _, n := range []int{2, 5} {
			opt.Workers = n
			par, err := Run(context.Background(), opt, nil)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := fmt.Sprintf("%+v %+v", par.Summary.OtherPorts, par.Summary.KafkaPorts), fmt.Sprintf("%+v %+v", sum.OtherPorts, sum.KafkaPorts); g != w {
				t.Errorf("%s: %d workers: ports %s, one worker %s", f, n, g, w)
			}
		}
	}
}

// TestPortTally: each packet counts once, for its server's port; answers
// are not probed; a request's receiver is taken for a server.
func TestPortTally(t *testing.T) {
	req := []byte{0, 0, 0, 14, 0, 18, 0, 3, 0, 0, 0, 1, 0, 3, 'k', 'g', 'o', 0}
	tl := newPortTally(&Options{Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}})
	type pkt struct {
		src, dst uint16
		flags    byte
		payload  []byte
	}
	for _, p := range []pkt{
		{50000, 29092, tcpSYN, nil},
		{29092, 50000, tcpSYN | tcpACK, nil},
		{50000, 29092, tcpACK, req},
		{29092, 50000, tcpACK, []byte{0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
		// A connection whose handshake was not captured, to a port
		// above the client's: a request tells the server.
		{40000, 45000, tcpACK, req},
		{45000, 40000, tcpACK, []byte{1, 2, 3}},
		// On the broker port: not counted.
		{50001, 9092, tcpACK, req},
		// Another protocol.
		{51000, 443, tcpACK, []byte{0x16, 3, 1, 0, 0x40, 1, 0, 0, 0x3c, 3, 3, 0, 0}},
	} {
		if other, probe := tl.see(p.src, p.dst, p.flags, len(p.payload)); other {
			if probe {
				tl.probe(p.dst, p.payload)
			}
			tl.count(p.src, p.dst)
		}
	}
	var s result.Summary
	tl.fill(&s)
	got := fmt.Sprintf("%+v / %+v", s.OtherPorts, s.KafkaPorts)
	want := "[{Port:29092 Packets:4 Kafka:true} {Port:45000 Packets:2 Kafka:true} {Port:443 Packets:1 Kafka:false}] / [{Port:29092 Packets:4 Kafka:true} {Port:45000 Packets:2 Kafka:true}]"
	if got != want {
		t.Errorf("tally:\ngot  %s\nwant %s", got, want)
	}
	if tl.t.probes[50000] != 0 {
		t.Error("a server's answer was probed")
	}
}
