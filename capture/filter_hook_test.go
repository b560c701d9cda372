package capture

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture/filter"
)

func mustFilter(t testing.TB, expr string) *filter.Filter {
	t.Helper()
	f, err := filter.New(expr)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// readFiltered reads one in-memory capture with a filter set.
func readFiltered(t testing.TB, b []byte, f *filter.Filter) ([]string, Stats) {
	t.Helper()
	r, err := Open([]string{"-"}, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetFilter(f)
	var (
		out []string
		p   Packet
	)
	for r.Next(&p) == nil {
		out = append(out, describe(&p))
	}
	return out, r.Stats()
}

func TestSetFilter(t *testing.T) {
	other := segA
	other.dport, other.src = 22, "10.0.0.7"
	frames := [][]byte{arpFrame(t), ether(t, udp4(t)), ether(t, segA.ip4(t)), ether(t, seg6.ip6(t)), ether(t, other.ip4(t)),
		ether(t, segA.ip4(t), layers.EthernetTypeDot1Q)}
	pcap := pcapBytes(t, layers.LinkTypeEthernet, false, recs(frames...))

	got, st := readFiltered(t, pcap, mustFilter(t, filter.Default([]uint16{9092, 9093})))
	checkLines(t, got, []string{line(0, 3, segA), line(0, 4, seg6)})
	if st.Packets != 6 || st.Filtered != 4 || st.TCP != 2 || st.NotTCP != 0 {
		t.Errorf("stats %+v", st)
	}
	// Frame numbers still count every frame, filtered or not.
	got, st = readFiltered(t, pcap, mustFilter(t, "vlan and port 9092"))
	checkLines(t, got, []string{line(0, 6, segA)})
	if st.Filtered != 5 {
		t.Errorf("stats %+v", st)
	}
	// nil: no filter.
	got, st = readFiltered(t, pcap, nil)
	if len(got) != 4 || st.Filtered != 0 || st.NotTCP != 2 {
		t.Errorf("%v %+v", got, st)
	}
}

// TestSetFilterLinkTypes: a pcapng of several link types gets each its own
// program; a link type the expression cannot be compiled for (vlan on
// SLL, SLL2 and raw IP) has its frames rejected and named in the filter's
// Errors.
func TestSetFilterLinkTypes(t *testing.T) {
	links := []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkType(276), layers.LinkTypeRaw}
	var rs []rec
	for i := 0; i < 8; i++ {
		s := segA
		s.seq = uint32(i)
		ip := s.ip4(t)
		data := [][]byte{ether(t, ip), sll(ip), sll2(ip), ip}[i%4]
		rs = append(rs, rec{ts: t0.Add(time.Duration(i) * time.Millisecond), data: data, iface: i % 4})
	}
	ng := ngBytes(t, links, rs)
	f := mustFilter(t, "tcp dst port 9092")
	got, st := readFiltered(t, ng, f)
	if len(got) != 8 || st.Filtered != 0 {
		t.Errorf("%v %+v", got, st)
	}
	f = mustFilter(t, "ip or vlan")
	got, st = readFiltered(t, ng, f)
	if len(got) != 2 || st.Filtered != 6 || len(f.Errors()) != 3 {
		t.Errorf("%v %+v %v", got, st, f.Errors())
	}
}

// TestSetFilterDoesNotAllocate holds the filtered hot path to zero
// allocations per packet too.
func TestSetFilterDoesNotAllocate(t *testing.T) {
	frames := [][]byte{ether(t, segA.ip4(t)), ether(t, seg6.ip6(t), layers.EthernetTypeDot1Q), arpFrame(t)}
	var rs []rec
	for i := 0; i < 3000; i++ { // one frame in three passes
		rs = append(rs, rec{ts: t0.Add(time.Duration(i) * time.Microsecond), data: frames[i%len(frames)]})
	}
	r, err := Open([]string{"-"}, bytes.NewReader(pcapBytes(t, layers.LinkTypeEthernet, false, rs)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetFilter(mustFilter(t, "tcp port 9092"))
	checkNoAllocs(t, r)
}

func BenchmarkReaderFiltered(b *testing.B) {
	const n = 10000
	pcap := benchCapture(b, n)
	f := mustFilter(b, filter.Default([]uint16{9092}))
	b.SetBytes(int64(len(pcap)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open([]string{"-"}, bytes.NewReader(pcap))
		if err != nil {
			b.Fatal(err)
		}
		r.SetFilter(f)
		var p Packet
		count := 0
		for r.Next(&p) == nil {
			count++
		}
		if count != n {
			b.Fatalf("%d packets, want %d", count, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/packet")
}
