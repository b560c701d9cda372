package realcapture

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
)

// TestReadRequestsReusedTuple: two connections on one 4-tuple, the second
// with an ISN below the first's bytes, are two streams, not one with a gap.
func TestReadRequestsReusedTuple(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reuse.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	req := func(corr int32) []byte {
		b := kmsg.NewPtrMetadataRequest()
		b.Version = 4
		return decode.AppendRequest(nil, decode.RequestHeader{APIKey: 3, APIVersion: 4, CorrelationID: corr, HeaderVersion: 1, ClientID: "c"}, b.AppendTo(nil))
	}
	when := time.Unix(1735732800, 0)
	write := func(seq uint32, syn bool, payload []byte) {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{0, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IPv4(127, 0, 0, 1), DstIP: net.IPv4(127, 0, 0, 1)}
		tcp := &layers.TCP{SrcPort: 40000, DstPort: 9092, Seq: seq, SYN: syn, ACK: !syn, PSH: len(payload) > 0, Window: 1024}
		_ = tcp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
			t.Fatal(err)
		}
		when = when.Add(time.Millisecond)
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: when, CaptureLength: len(buf.Bytes()), Length: len(buf.Bytes())}, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	first, second := req(1), req(2)
	write(100000, true, nil)
	write(100001, false, first)
	write(100001+uint32(len(first)), false, first) // the next request
	write(5000, true, nil)                         // the 4-tuple again, a lower ISN
	write(5001, false, second)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := ReadRequests(path, []uint16{9092})
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests[3] != 3 || st.Connections != 2 || st.ReusedTuples != 1 {
		t.Errorf("%d Metadata requests on %d connections (%d reused), want 3 on 2 (1)", st.Requests[3], st.Connections, st.ReusedTuples)
	}
}
