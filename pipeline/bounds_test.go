package pipeline

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/internal/synth"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/samples/netsim"
)

// writePartialJoins writes the hostile capture: conns connections,
// each sending a JoinGroup request whose frame declares about size bytes,
// of which only sent arrive, and left open.
func writePartialJoins(path string, conns, size, sent int) error {
	b := synth.New(netsim.Options{})
	broker := netip.MustParseAddrPort("10.1.0.2:9092")
	for i := range conns {
		cli := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), 40000)
		c := b.Open(cli, broker, netsim.ConnOptions{}, "client")
		join := &kmsg.JoinGroupRequest{Group: "g", ProtocolType: "consumer", MemberID: "m",
			Protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, size)}}}
		f := c.NewRequest("join", join, 9, false)
		c.N.Send(true, f.Bytes[:sent])
	}
	return b.WriteFile(path)
}

// The reproduction, scaled down: 250 connections, each with a
// JoinGroup of 256 KiB of which 192 KiB arrive, under a body budget of
// 1 MiB. What fits is four bodies (each has buffered its whole size by
// doubling), shared among the workers; the other 246 are counted.
func TestBodyBudgetPartialJoinGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "joins.pcap")
	if err := writePartialJoins(path, 250, 256<<10, 192<<10); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		_, sum := runPipeline(t, Options{Files: []string{path}, Workers: workers, BodyBytes: 1 << 20})
		if sum.BodiesSkippedBudget != 246 {
			t.Errorf("%d workers: %d bodies skipped for the budget, want 246", workers, sum.BodiesSkippedBudget)
		}
		if sum.Connections != 250 || sum.Truncated != 250 || sum.Malformed != 0 {
			t.Errorf("%d workers: %d connections, %d truncated, %d malformed; want 250, 250, 0", workers, sum.Connections, sum.Truncated, sum.Malformed)
		}
	}
}

// TestWritePartialJoins writes the full-size capture for a
// measurement of the built binary (KIDSCOPE_PARTIAL_JOINS=path, with
// KIDSCOPE_PARTIAL_CONNS connections, 250 by default): a JoinGroup of
// just under 4 MiB, the decoder's MaxBodySize, 3 MiB of it sent.
func TestWritePartialJoins(t *testing.T) {
	path := os.Getenv("KIDSCOPE_PARTIAL_JOINS")
	if path == "" {
		t.Skip("KIDSCOPE_PARTIAL_JOINS is not set")
	}
	conns := 250
	if n, err := strconv.Atoi(os.Getenv("KIDSCOPE_PARTIAL_CONNS")); err == nil {
		conns = n
	}
	if err := writePartialJoins(path, conns, 4<<20-4<<10, 3<<20); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), Options{Files: []string{path}, Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%d connections, %d bodies skipped for the budget\n", sum.Connections, sum.BodiesSkippedBudget)
}
