package netsim_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/samples/netsim"
)

var (
	cli4 = netip.MustParseAddrPort("10.0.0.1:50000")
	srv4 = netip.MustParseAddrPort("10.0.0.2:9092")
	cli6 = netip.MustParseAddrPort("[fd00::1]:50000")
	srv6 = netip.MustParseAddrPort("[fd00::2]:9092")
)

var allLinks = []netsim.Link{netsim.Ethernet, netsim.EthernetVLAN, netsim.EthernetQinQ,
	netsim.LinuxSLL, netsim.LinuxSLL2, netsim.Null, netsim.RawIP}

// message is one Send of a conversation, and what it returned.
type message struct {
	fromClient bool
	data       []byte
	done       int
}

// conversation writes a handshake, two request/response pairs of several
// segments and an orderly close.
func conversation(c *netsim.Capture, cli, srv netip.AddrPort) []message {
	cn := c.Open(cli, srv, netsim.ConnOptions{})
	msgs := []message{
		{fromClient: true, data: payload(5000, 1)},
		{fromClient: false, data: payload(3000, 2)},
		{fromClient: true, data: payload(10, 3)},
		{fromClient: true, data: payload(2900, 4)},
		{fromClient: false, data: payload(20, 5)},
	}
	for i := range msgs {
		msgs[i].done = cn.Send(msgs[i].fromClient, msgs[i].data)
	}
	cn.Close(true)
	return msgs
}

func expectStreams(t *testing.T, pkts []pkt, cli, srv netip.AddrPort, msgs []message) {
	t.Helper()
	var up, down []byte
	for _, m := range msgs {
		if m.fromClient {
			up = append(up, m.data...)
		} else {
			down = append(down, m.data...)
		}
	}
	ss := reassemble(t, pkts)
	for _, d := range []struct {
		flow string
		want []byte
	}{{cli.String() + ">" + srv.String(), up}, {srv.String() + ">" + cli.String(), down}} {
		s := ss[d.flow]
		if s == nil {
			if len(d.want) > 0 {
				t.Errorf("no data %s", d.flow)
			}
			continue
		}
		if h := s.holes(); len(h) > 0 {
			t.Errorf("%s: holes %v", d.flow, h)
		}
		if !bytes.Equal(s.data, d.want) {
			t.Errorf("%s: reassembled %d bytes differ from the %d sent", d.flow, len(s.data), len(d.want))
		}
	}
}

func TestConversation(t *testing.T) {
	for _, link := range allLinks {
		for _, v6 := range []bool{false, true} {
			cli, srv := cli4, srv4
			if v6 {
				cli, srv = cli6, srv6
			}
			t.Run(link.String()+map[bool]string{false: "/IPv4", true: "/IPv6"}[v6], func(t *testing.T) {
				c := netsim.New(netsim.Options{Link: link, Format: netsim.PcapNG, Seed: 7})
				msgs := conversation(c, cli, srv)
				pkts := readCapture(t, write(t, c))
				if len(pkts) != c.Frames() {
					t.Fatalf("read %d frames, Frames() = %d", len(pkts), c.Frames())
				}
				checkChecksums(t, pkts)
				expectStreams(t, pkts, cli, srv, msgs)
				checkHandshake(t, pkts, v6, true)
				checkSegments(t, pkts, msgs, 1448-map[bool]int{false: 0, true: 20}[v6])
				checkSequence(t, pkts)
				for i, p := range pkts {
					if want := netsim.DefaultStart.Add(time.Duration(i) * netsim.DefaultStep); !p.ci.Timestamp.Equal(want) {
						t.Errorf("frame %d at %v, want %v", p.n, p.ci.Timestamp, want)
					}
					if p.lt != link.LinkType() {
						t.Errorf("frame %d link type %v, want %v", p.n, p.lt, link.LinkType())
					}
				}
				last := pkts[len(pkts)-3:]
				if !last[0].tcp.FIN || !last[0].tcp.ACK || last[0].src() != cli ||
					!last[1].tcp.FIN || !last[1].tcp.ACK || last[1].src() != srv ||
					last[2].tcp.FIN || !last[2].tcp.ACK || last[2].src() != cli {
					t.Errorf("close is not FIN/ACK, FIN/ACK, ACK")
				}
			})
		}
	}
}

// checkHandshake checks the SYN, SYN/ACK and ACK and their options as Linux
// writes them.
func checkHandshake(t *testing.T, pkts []pkt, v6, ts bool) {
	t.Helper()
	syn, synack, ack := pkts[0].tcp, pkts[1].tcp, pkts[2].tcp
	if !syn.SYN || syn.ACK || !synack.SYN || !synack.ACK || ack.SYN || !ack.ACK {
		t.Fatalf("handshake flags wrong")
	}
	if synack.Ack != syn.Seq+1 || ack.Seq != syn.Seq+1 || ack.Ack != synack.Seq+1 {
		t.Errorf("handshake numbers: SYN seq %d, SYN/ACK %d/%d, ACK %d/%d", syn.Seq, synack.Seq, synack.Ack, ack.Seq, ack.Ack)
	}
	mss := uint16(1460)
	if v6 {
		mss = 1440
	}
	want := []layers.TCPOptionKind{layers.TCPOptionKindMSS, layers.TCPOptionKindSACKPermitted,
		layers.TCPOptionKindTimestamps, layers.TCPOptionKindNop, layers.TCPOptionKindWindowScale}
	if !ts {
		want = []layers.TCPOptionKind{layers.TCPOptionKindMSS, layers.TCPOptionKindNop, layers.TCPOptionKindNop,
			layers.TCPOptionKindSACKPermitted, layers.TCPOptionKindNop, layers.TCPOptionKindWindowScale}
	}
	for _, s := range []*layers.TCP{syn, synack} {
		if got := optKinds(s); !slices.Equal(got, want) {
			t.Errorf("SYN options %v, want %v", got, want)
		}
		if d, _ := tcpOpt(s, layers.TCPOptionKindMSS); binary.BigEndian.Uint16(d) != mss {
			t.Errorf("MSS option %d, want %d", binary.BigEndian.Uint16(d), mss)
		}
		if d, _ := tcpOpt(s, layers.TCPOptionKindWindowScale); d[0] != 7 {
			t.Errorf("window scale %d", d[0])
		}
	}
	if syn.Window != 65535/mss*mss {
		t.Errorf("SYN window %d", syn.Window)
	}
	if ts {
		a, _ := tcpOpt(syn, layers.TCPOptionKindTimestamps)
		b, _ := tcpOpt(synack, layers.TCPOptionKindTimestamps)
		if binary.BigEndian.Uint32(a[4:]) != 0 || binary.BigEndian.Uint32(b[4:]) != binary.BigEndian.Uint32(a) {
			t.Errorf("SYN/ACK does not echo the SYN's TSval")
		}
	}
}

// checkSegments checks segment sizes, PSH and what Send returned.
func checkSegments(t *testing.T, pkts []pkt, msgs []message, mss int) {
	t.Helper()
	var pushes []int
	for _, p := range pkts {
		if n := len(p.tcp.Payload); n > mss {
			t.Errorf("frame %d: %d bytes of payload, MSS %d", p.n, n, mss)
		}
		if p.tcp.PSH {
			pushes = append(pushes, p.n)
			if len(p.tcp.Payload) == 0 {
				t.Errorf("frame %d: PSH without data", p.n)
			}
		}
		if _, ok := tcpOpt(p.tcp, layers.TCPOptionKindTimestamps); !ok {
			t.Errorf("frame %d: no timestamps option", p.n)
		}
	}
	var dones []int
	for _, m := range msgs {
		dones = append(dones, m.done)
	}
	if !slices.Equal(pushes, dones) {
		t.Errorf("PSH on frames %v, Send returned %v", pushes, dones)
	}
}

// checkSequence checks, per direction, that IPv4 IDs count up by one, that
// TSvals do not go back, that ACK numbers do not go back and never
// acknowledge bytes the peer has not sent, and that a pure ACK follows at
// least every second data segment.
func checkSequence(t *testing.T, pkts []pkt) {
	t.Helper()
	lastID := map[string]uint16{}
	lastTS := map[string]uint32{}
	lastAck := map[string]uint32{}
	sent := map[string]uint32{} // next sequence number after what each side sent
	unacked := map[string]int{}
	for _, p := range pkts {
		f, rev := p.flow(), p.dst().String()+">"+p.src().String()
		if p.ip4 != nil {
			if id, ok := lastID[f]; ok && p.ip4.Id != id+1 {
				t.Errorf("frame %d: IP ID %d after %d", p.n, p.ip4.Id, id)
			}
			lastID[f] = p.ip4.Id
			if p.ip4.Flags != layers.IPv4DontFragment || p.ip4.TTL != 64 {
				t.Errorf("frame %d: flags %v TTL %d", p.n, p.ip4.Flags, p.ip4.TTL)
			}
		}
		if d, ok := tcpOpt(p.tcp, layers.TCPOptionKindTimestamps); ok {
			v := binary.BigEndian.Uint32(d)
			if prev, ok := lastTS[f]; ok && int32(v-prev) < 0 {
				t.Errorf("frame %d: TSval %d after %d", p.n, v, prev)
			}
			lastTS[f] = v
		}
		if p.tcp.ACK {
			if prev, ok := lastAck[f]; ok && int32(p.tcp.Ack-prev) < 0 {
				t.Errorf("frame %d: ACK %d after %d", p.n, p.tcp.Ack, prev)
			}
			if next, ok := sent[rev]; ok && int32(p.tcp.Ack-next) > 0 {
				t.Errorf("frame %d: ACK %d beyond what the peer sent (%d)", p.n, p.tcp.Ack, next)
			}
			lastAck[f] = p.tcp.Ack
			unacked[rev] = 0
		}
		end := p.tcp.Seq + uint32(len(p.tcp.Payload))
		if p.tcp.SYN || p.tcp.FIN {
			end++
		}
		if next, ok := sent[f]; !ok || int32(end-next) > 0 {
			sent[f] = end
		}
		if len(p.tcp.Payload) > 0 {
			unacked[f]++
			if unacked[f] > 2 {
				t.Errorf("frame %d: third segment of %s without an ACK between", p.n, f)
			}
		}
	}
}

func TestSplitAtEveryOffset(t *testing.T) {
	c := netsim.New(netsim.Options{})
	header := payload(16, 9)
	for k := 1; k < len(header); k++ {
		cli := netip.AddrPortFrom(cli4.Addr(), uint16(40000+k))
		cn := c.Open(cli, srv4, netsim.ConnOptions{})
		first := c.Frames() + 1
		done := cn.Send(true, header, netsim.SplitAt(0, k, len(header)))
		// Segment 1, segment 2, the ACK for both.
		if done != first+1 || c.Frames() != first+2 {
			t.Errorf("split at %d: Send returned %d, Frames %d; want %d, %d", k, done, c.Frames(), first+1, first+2)
		}
	}
	pkts := readCapture(t, write(t, c))
	checkChecksums(t, pkts)
	var sizes []int
	for _, p := range pkts {
		if n := len(p.tcp.Payload); n > 0 {
			sizes = append(sizes, n)
		}
	}
	for k := 1; k < len(header); k++ {
		if got := sizes[2*(k-1) : 2*k]; got[0] != k || got[1] != len(header)-k {
			t.Errorf("split at %d: segments %v", k, got)
		}
	}
	ss := reassemble(t, pkts)
	for k := 1; k < len(header); k++ {
		f := netip.AddrPortFrom(cli4.Addr(), uint16(40000+k)).String() + ">" + srv4.String()
		if s := ss[f]; s == nil || !bytes.Equal(s.data, header) || len(s.holes()) > 0 {
			t.Errorf("split at %d: stream differs", k)
		}
	}
}

func TestSplitAtAndMSS(t *testing.T) {
	c := netsim.New(netsim.Options{})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{MSS: 1000})
	data := payload(3500, 1)
	cn.Send(true, data, netsim.SplitAt(100, 2500))
	pkts := readCapture(t, write(t, c))
	var sizes []int
	for _, p := range pkts {
		if n := len(p.tcp.Payload); n > 0 {
			sizes = append(sizes, n)
		}
	}
	if want := []int{100, 1000, 1000, 400, 1000}; !slices.Equal(sizes, want) {
		t.Errorf("segments %v, want %v", sizes, want)
	}
	if d, _ := tcpOpt(pkts[0].tcp, layers.TCPOptionKindMSS); binary.BigEndian.Uint16(d) != 1012 {
		t.Errorf("SYN MSS option %d, want 1012", binary.BigEndian.Uint16(d))
	}
	expectStreams(t, pkts, cli4, srv4, []message{{fromClient: true, data: data}})
}

// sendOne writes a 40-byte message from the client as four 10-byte
// segments with opts and returns the capture read back, the data frames'
// offsets in capture order and what Send returned.
func sendOne(t *testing.T, opts ...netsim.SegOpt) (pkts []pkt, offsets []int, frameOf map[int][]int, done int) {
	t.Helper()
	c := netsim.New(netsim.Options{Seed: 3})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{})
	data := payload(40, 1)
	done = cn.Send(true, data, append([]netsim.SegOpt{netsim.SplitAt(10, 20, 30)}, opts...)...)
	cn.Send(false, payload(5, 2))
	pkts = readCapture(t, write(t, c))
	checkChecksums(t, pkts)
	isn := pkts[0].tcp.Seq + 1
	frameOf = map[int][]int{}
	for _, p := range pkts {
		if len(p.tcp.Payload) > 0 && p.src() == cli4 {
			off := int(p.tcp.Seq - isn)
			offsets = append(offsets, off)
			frameOf[off] = append(frameOf[off], p.n)
		}
	}
	return pkts, offsets, frameOf, done
}

// serverAcks lists the server's pure ACKs as "ack[sle-sre ...]" relative to
// the client's first byte.
func serverAcks(pkts []pkt) []string {
	isn := pkts[0].tcp.Seq + 1
	var out []string
	for _, p := range pkts {
		if p.src() != srv4 || len(p.tcp.Payload) > 0 || p.tcp.SYN {
			continue
		}
		s := strings.Builder{}
		s.WriteString(strconv.Itoa(int(p.tcp.Ack - isn)))
		if d, ok := tcpOpt(p.tcp, layers.TCPOptionKindSACK); ok {
			for i := 0; i+8 <= len(d); i += 8 {
				s.WriteString(" " + strconv.Itoa(int(binary.BigEndian.Uint32(d[i:])-isn)) + "-" + strconv.Itoa(int(binary.BigEndian.Uint32(d[i+4:])-isn)))
			}
		}
		out = append(out, s.String())
	}
	return out
}

func TestPlainSend(t *testing.T) {
	pkts, offsets, frameOf, done := sendOne(t)
	if want := []int{0, 10, 20, 30}; !slices.Equal(offsets, want) {
		t.Errorf("offsets %v, want %v", offsets, want)
	}
	if done != frameOf[30][0] {
		t.Errorf("Send returned %d, last segment is frame %d", done, frameOf[30][0])
	}
	if got, want := serverAcks(pkts), []string{"20", "40"}; !slices.Equal(got, want) {
		t.Errorf("server ACKs %q, want %q", got, want)
	}
}

func TestReorder(t *testing.T) {
	pkts, offsets, frameOf, done := sendOne(t, netsim.Reorder(1, 3))
	if want := []int{0, 30, 20, 10}; !slices.Equal(offsets, want) {
		t.Errorf("offsets %v, want %v", offsets, want)
	}
	if done != frameOf[10][0] {
		t.Errorf("Send returned %d, the hole fills in frame %d", done, frameOf[10][0])
	}
	// Duplicate ACKs with SACK for 30 and 20, an immediate ACK when 10 fills
	// the hole.
	if got, want := serverAcks(pkts), []string{"10 30-40", "10 20-40", "40"}; !slices.Equal(got, want) {
		t.Errorf("server ACKs %q, want %q", got, want)
	}
	expectStreams(t, pkts, cli4, srv4, []message{{fromClient: true, data: payload(40, 1)}, {data: payload(5, 2)}})
}

func TestRetransmit(t *testing.T) {
	pkts, offsets, frameOf, done := sendOne(t, netsim.Retransmit(1))
	if want := []int{0, 10, 20, 30, 10}; !slices.Equal(offsets, want) {
		t.Errorf("offsets %v, want %v", offsets, want)
	}
	if done != frameOf[30][0] {
		t.Errorf("Send returned %d, want %d (the message was complete before the retransmission)", done, frameOf[30][0])
	}
	if got, want := serverAcks(pkts), []string{"20", "40", "40 10-20"}; !slices.Equal(got, want) {
		t.Errorf("server ACKs %q, want %q (D-SACK for the duplicate)", got, want)
	}
	expectStreams(t, pkts, cli4, srv4, []message{{fromClient: true, data: payload(40, 1)}, {data: payload(5, 2)}})
}

func TestLoseAndRetransmit(t *testing.T) {
	pkts, offsets, frameOf, done := sendOne(t, netsim.Lose(1), netsim.Retransmit(1))
	if want := []int{0, 20, 30, 10}; !slices.Equal(offsets, want) {
		t.Errorf("offsets %v, want %v", offsets, want)
	}
	if done != frameOf[10][0] {
		t.Errorf("Send returned %d, the retransmission is frame %d", done, frameOf[10][0])
	}
	if got, want := serverAcks(pkts), []string{"10 20-30", "10 20-40", "40"}; !slices.Equal(got, want) {
		t.Errorf("server ACKs %q, want %q", got, want)
	}
	expectStreams(t, pkts, cli4, srv4, []message{{fromClient: true, data: payload(40, 1)}, {data: payload(5, 2)}})
}

func TestOverlap(t *testing.T) {
	pkts, offsets, _, done := sendOne(t, netsim.Overlap(2, 5))
	if want := []int{0, 10, 15, 30}; !slices.Equal(offsets, want) {
		t.Errorf("offsets %v, want %v", offsets, want)
	}
	var third []byte
	for _, p := range pkts {
		if p.src() == cli4 && len(p.tcp.Payload) == 15 {
			third = p.tcp.Payload
		}
	}
	if !bytes.Equal(third, payload(40, 1)[15:30]) {
		t.Errorf("overlapping segment carries %x", third)
	}
	if done == 0 {
		t.Errorf("Send returned 0")
	}
	// reassemble fails on overlapping bytes that differ.
	expectStreams(t, pkts, cli4, srv4, []message{{fromClient: true, data: payload(40, 1)}, {data: payload(5, 2)}})
}

func TestLose(t *testing.T) {
	pkts, offsets, _, done := sendOne(t, netsim.Lose(1))
	if want := []int{0, 20, 30}; !slices.Equal(offsets, want) {
		t.Errorf("offsets %v, want %v", offsets, want)
	}
	if done != 0 {
		t.Errorf("Send returned %d for a message with a hole", done)
	}
	s := reassemble(t, pkts)[cli4.String()+">"+srv4.String()]
	if h := s.holes(); !slices.Equal(h, []string{"10-20"}) {
		t.Errorf("holes %v, want [10-20]", h)
	}
	data := payload(40, 1)
	if !bytes.Equal(s.data[:10], data[:10]) || !bytes.Equal(s.data[20:], data[20:]) {
		t.Errorf("bytes around the hole differ")
	}
	// The receiver got the segment the capture dropped: its ACKs cover it.
	if got, want := serverAcks(pkts), []string{"20", "40"}; !slices.Equal(got, want) {
		t.Errorf("server ACKs %q, want %q", got, want)
	}
}

func TestSnapCut(t *testing.T) {
	pkts, _, _, done := sendOne(t, netsim.SnapCut(1, 3))
	if done != 0 {
		t.Errorf("Send returned %d for a message with cut bytes", done)
	}
	var cut []pkt
	for _, p := range pkts {
		if p.cut() {
			cut = append(cut, p)
		}
	}
	if len(cut) != 1 {
		t.Fatalf("%d cut frames, want 1", len(cut))
	}
	p := cut[0]
	if p.ci.Length-p.ci.CaptureLength != 7 || len(p.tcp.Payload) != 3 || p.ip4.Length != 20+32+10 {
		t.Errorf("cut frame: caplen %d len %d payload %d IP length %d", p.ci.CaptureLength, p.ci.Length, len(p.tcp.Payload), p.ip4.Length)
	}
	s := reassemble(t, pkts)[cli4.String()+">"+srv4.String()]
	if h := s.holes(); !slices.Equal(h, []string{"13-20"}) {
		t.Errorf("holes %v, want [13-20]", h)
	}
}

func TestSnaplen(t *testing.T) {
	c := netsim.New(netsim.Options{Snaplen: 100})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{})
	if done := cn.Send(true, payload(3000, 1)); done != 0 {
		t.Errorf("Send returned %d, want 0 (bytes beyond the snap length)", done)
	}
	if done := cn.Send(false, payload(10, 1)); done == 0 {
		t.Errorf("Send of a short message returned 0")
	}
	pkts := readCapture(t, write(t, c))
	for _, p := range pkts {
		if p.ci.CaptureLength > 100 || (p.ci.Length > 100) != p.cut() {
			t.Errorf("frame %d: caplen %d len %d", p.n, p.ci.CaptureLength, p.ci.Length)
		}
	}
}

func TestMidStreamAndWrap(t *testing.T) {
	c := netsim.New(netsim.Options{})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{MidStream: true, ClientISN: 0xffffff00, ServerISN: 0xfffffff0})
	msgs := []message{{fromClient: true, data: payload(3000, 1)}, {fromClient: false, data: payload(100, 2)}}
	for i := range msgs {
		msgs[i].done = cn.Send(msgs[i].fromClient, msgs[i].data)
	}
	cn.Reset(true)
	pkts := readCapture(t, write(t, c))
	if p := pkts[0]; p.tcp.SYN || len(p.tcp.Payload) == 0 || p.tcp.Seq != 0xffffff00 {
		t.Errorf("first frame: SYN %v, %d bytes, seq %#x", p.tcp.SYN, len(p.tcp.Payload), p.tcp.Seq)
	}
	if p := pkts[len(pkts)-1]; !p.tcp.RST || !p.tcp.ACK || p.src() != cli4 || p.tcp.Seq != uint32(0xffffff00+3000-1<<32) {
		t.Errorf("last frame is not the client's RST/ACK at the next sequence number")
	}
	checkChecksums(t, pkts)
	checkSequence(t, pkts)
	expectStreams(t, pkts, cli4, srv4, msgs)
}

// TestLinkHeaders checks the bytes before the IP header of the first frame
// (the client's SYN) and of the second (the server's SYN/ACK).
func TestLinkHeaders(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:9092")
	lo2 := netip.MustParseAddrPort("127.0.0.1:50000")
	tests := []struct {
		link      netsim.Link
		cli, srv  netip.AddrPort
		syn, sack string // hex of the link header
	}{
		{netsim.Ethernet, cli4, srv4, "02420a000002 02420a000001 0800", "02420a000001 02420a000002 0800"},
		{netsim.Ethernet, cli6, srv6, "024200000002 024200000001 86dd", "024200000001 024200000002 86dd"},
		{netsim.EthernetVLAN, cli4, srv4, "02420a000002 02420a000001 8100 0064 0800", "02420a000001 02420a000002 8100 0064 0800"},
		{netsim.EthernetQinQ, cli4, srv4, "02420a000002 02420a000001 88a8 0064 8100 00c8 0800", "02420a000001 02420a000002 88a8 0064 8100 00c8 0800"},
		{netsim.LinuxSLL, cli4, srv4, "0000 0001 0006 02420a0000010000 0800", "0004 0001 0006 02420a0000020000 0800"},
		{netsim.LinuxSLL, cli6, srv6, "0000 0001 0006 0242000000010000 86dd", "0004 0001 0006 0242000000020000 86dd"},
		{netsim.LinuxSLL2, cli4, srv4, "0800 0000 00000002 0001 00 06 02420a0000010000", "0800 0000 00000002 0001 04 06 02420a0000020000"},
		{netsim.LinuxSLL2, lo2, lo, "0800 0000 00000001 0304 00 06 0000000000000000", "0800 0000 00000001 0304 04 06 0000000000000000"},
		{netsim.Null, cli4, srv4, "02000000", "02000000"},
		{netsim.Null, cli6, srv6, "1e000000", "1e000000"},
		{netsim.RawIP, cli4, srv4, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.link.String()+"/"+tt.cli.Addr().String(), func(t *testing.T) {
			c := netsim.New(netsim.Options{Link: tt.link, Format: netsim.Pcap})
			cn := c.Open(tt.cli, tt.srv, netsim.ConnOptions{})
			cn.Send(true, payload(10, 0))
			file := write(t, c)
			if lt := binary.LittleEndian.Uint32(file[20:]); lt != uint32(tt.link.LinkType()) {
				t.Errorf("file link type %d, want %d", lt, tt.link.LinkType())
			}
			pkts := readCapture(t, file)
			for i, want := range []string{tt.syn, tt.sack} {
				p := pkts[i]
				ipStart := len(p.data) - len(p.tcp.Contents) - len(p.tcp.Payload)
				if p.ip4 != nil {
					ipStart -= len(p.ip4.Contents)
				} else {
					ipStart -= 40
				}
				got := hex.EncodeToString(p.data[:ipStart])
				if w := strings.ReplaceAll(want, " ", ""); got != w {
					t.Errorf("frame %d link header\n got %s\nwant %s", p.n, got, w)
				}
				if v := p.data[ipStart] >> 4; v != 4 && v != 6 {
					t.Errorf("frame %d: IP version %d after the link header", p.n, v)
				}
			}
			checkChecksums(t, pkts)
		})
	}
}

func TestIPv6HopByHop(t *testing.T) {
	c := netsim.New(netsim.Options{IPv6HopByHop: true, Link: netsim.RawIP})
	msgs := conversation(c, cli6, srv6)
	pkts := readCapture(t, write(t, c))
	for _, p := range pkts {
		if p.ip6.NextHeader != layers.IPProtocolIPv6HopByHop || p.ip6.HopByHop == nil ||
			p.ip6.HopByHop.NextHeader != layers.IPProtocolTCP {
			t.Fatalf("frame %d: no Hop-by-Hop header before TCP", p.n)
		}
		if want := 8 + len(p.tcp.Contents) + len(p.tcp.Payload); int(p.ip6.Length) != want {
			t.Errorf("frame %d: IPv6 payload length %d, want %d", p.n, p.ip6.Length, want)
		}
		if !bytes.Equal(p.data[40:48], []byte{6, 0, 1, 4, 0, 0, 0, 0}) {
			t.Errorf("frame %d: Hop-by-Hop header % x", p.n, p.data[40:48])
		}
	}
	checkChecksums(t, pkts)
	expectStreams(t, pkts, cli6, srv6, msgs)
}

func TestPadding(t *testing.T) {
	for _, pad := range []bool{false, true} {
		c := netsim.New(netsim.Options{Pad: pad, NoTimestamps: true})
		msgs := conversation(c, cli4, srv4)
		pkts := readCapture(t, write(t, c))
		checkHandshake(t, pkts, false, false)
		checkChecksums(t, pkts)
		expectStreams(t, pkts, cli4, srv4, msgs)
		short := 0
		for _, p := range pkts {
			if len(p.tcp.Options) != 0 && !p.tcp.SYN {
				t.Errorf("frame %d: options %v without timestamps", p.n, optKinds(p.tcp))
			}
			end := 14 + int(p.ip4.Length)
			switch {
			case end >= 60:
				if len(p.data) != end {
					t.Errorf("frame %d: %d bytes, IP ends at %d", p.n, len(p.data), end)
				}
			case pad:
				short++
				if len(p.data) != 60 || !bytes.Equal(p.data[end:], make([]byte, 60-end)) {
					t.Errorf("frame %d: padded to %d bytes: % x", p.n, len(p.data), p.data[end:])
				}
			default:
				short++
				if len(p.data) != end {
					t.Errorf("frame %d: %d bytes without padding, IP ends at %d", p.n, len(p.data), end)
				}
			}
		}
		if short == 0 {
			t.Errorf("pad %v: no short frames", pad)
		}
		if n := len(pkts[3].tcp.Payload); n != 1460 {
			t.Errorf("full segment %d bytes without timestamps, want 1460", n)
		}
	}
}

func TestFormats(t *testing.T) {
	formats := []struct {
		f     netsim.Format
		magic string
	}{
		{netsim.Pcap, "d4c3b2a1"},
		{netsim.PcapNano, "4d3cb2a1"},
		{netsim.PcapBigEndian, "a1b2c3d4"},
		{netsim.PcapNG, "0a0d0d0a"},
	}
	start := time.Date(2024, 6, 1, 8, 30, 0, 123456789, time.UTC)
	for _, ft := range formats {
		for _, gz := range []bool{false, true} {
			c := netsim.New(netsim.Options{Format: ft.f, Gzip: gz, Start: start, Step: 1500 * time.Nanosecond, Link: netsim.LinuxSLL2})
			cn := c.Open(cli4, srv4, netsim.ConnOptions{})
			cn.Send(true, payload(4000, 1))
			c.Advance(3 * time.Second)
			cn.Send(false, payload(100, 1))
			file := write(t, c)
			raw := file
			if gz {
				if file[0] != 0x1f || file[1] != 0x8b {
					t.Fatalf("format %d: not gzip", ft.f)
				}
				zr, err := gzip.NewReader(bytes.NewReader(file))
				if err != nil {
					t.Fatal(err)
				}
				if raw, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if got := hex.EncodeToString(raw[:4]); got != ft.magic {
				t.Errorf("format %d: magic %s, want %s", ft.f, got, ft.magic)
			}
			pkts := readCapture(t, file)
			if len(pkts) != c.Frames() {
				t.Fatalf("format %d gzip %v: read %d frames, want %d", ft.f, gz, len(pkts), c.Frames())
			}
			res := time.Microsecond
			if ft.f == netsim.PcapNano || ft.f == netsim.PcapNG {
				res = time.Nanosecond
			}
			at := start
			for i, p := range pkts {
				if i > 0 && p.src() == srv4 && pkts[i-1].src() == cli4 && len(p.tcp.Payload) == 100 {
					at = at.Add(3 * time.Second)
				}
				if want := at.Truncate(res); !p.ci.Timestamp.Equal(want) {
					t.Errorf("format %d: frame %d at %v, want %v", ft.f, p.n, p.ci.Timestamp, want)
				}
				at = at.Add(1500 * time.Nanosecond)
			}
			checkChecksums(t, pkts)
		}
	}
}

func TestPcapNGTwoInterfaces(t *testing.T) {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG, Link: netsim.Ethernet, MoreLinks: []netsim.Link{netsim.LinuxSLL2}})
	a := c.Open(cli4, srv4, netsim.ConnOptions{})
	cliB := netip.MustParseAddrPort("10.0.0.3:50001")
	b := c.Open(cliB, srv4, netsim.ConnOptions{Interface: 1})
	ma := []message{{fromClient: true, data: payload(3000, 1)}, {data: payload(200, 2)}}
	mb := []message{{fromClient: true, data: payload(2000, 3)}, {data: payload(5000, 4)}}
	for i := range ma {
		ma[i].done = a.Send(ma[i].fromClient, ma[i].data)
		mb[i].done = b.Send(mb[i].fromClient, mb[i].data)
	}
	a.Close(false)
	b.Close(true)
	file := write(t, c)
	pkts := readCapture(t, file)
	ifaces := map[int]int{}
	for _, p := range pkts {
		want := 0
		if p.src() == cliB || p.dst() == cliB {
			want = 1
		}
		if p.ci.InterfaceIndex != want {
			t.Errorf("frame %d on interface %d, want %d", p.n, p.ci.InterfaceIndex, want)
		}
		if p.lt != []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL2}[want] {
			t.Errorf("frame %d link type %v", p.n, p.lt)
		}
		ifaces[want]++
	}
	if ifaces[0] == 0 || ifaces[1] == 0 {
		t.Errorf("frames per interface %v", ifaces)
	}
	checkChecksums(t, pkts)
	var pa, pb []pkt
	for _, p := range pkts {
		if p.ci.InterfaceIndex == 0 {
			pa = append(pa, p)
		} else {
			pb = append(pb, p)
		}
	}
	expectStreams(t, pa, cli4, srv4, ma)
	expectStreams(t, pb, cliB, srv4, mb)
	checkSequence(t, pa)
	checkSequence(t, pb)
}

// rich makes a capture that uses most features.
func rich(seed uint64, format netsim.Format, gz bool) *netsim.Capture {
	c := netsim.New(netsim.Options{Format: format, Gzip: gz, Seed: seed, Link: netsim.EthernetVLAN,
		MoreLinks: map[bool][]netsim.Link{true: {netsim.LinuxSLL2}}[format == netsim.PcapNG]})
	a := c.Open(cli4, srv4, netsim.ConnOptions{})
	b := c.Open(cli6, srv6, netsim.ConnOptions{MidStream: true})
	a.Send(true, payload(6000, 1), netsim.Reorder(1, 2), netsim.Retransmit(3), netsim.SnapCut(0, 10))
	b.Send(true, payload(100, 2))
	a.Send(false, payload(200, 3), netsim.SplitAt(7), netsim.Overlap(1, 3), netsim.Lose(0))
	c.Advance(time.Second)
	b.Send(false, payload(9000, 4))
	a.Close(true)
	b.Reset(false)
	return c
}

func TestDeterminism(t *testing.T) {
	for _, f := range []netsim.Format{netsim.Pcap, netsim.PcapNG} {
		for _, gz := range []bool{false, true} {
			x, y := write(t, rich(1, f, gz)), write(t, rich(1, f, gz))
			if !bytes.Equal(x, y) {
				t.Errorf("format %d gzip %v: two runs differ", f, gz)
			}
			c := rich(1, f, gz)
			if !bytes.Equal(write(t, c), write(t, c)) {
				t.Errorf("format %d gzip %v: writing twice differs", f, gz)
			}
			if bytes.Equal(x, write(t, rich(2, f, gz))) {
				t.Errorf("format %d gzip %v: seeds 1 and 2 give the same bytes", f, gz)
			}
		}
	}
	// The seed changes the ISNs.
	isn := func(seed uint64) uint32 {
		c := netsim.New(netsim.Options{Seed: seed})
		c.Open(cli4, srv4, netsim.ConnOptions{})
		return readCapture(t, write(t, c))[0].tcp.Seq
	}
	if a, b, again := isn(1), isn(2), isn(1); a == b || a != again {
		t.Errorf("ISNs: seed 1 %#x, seed 2 %#x, seed 1 again %#x", a, b, again)
	}
}

func TestFrames(t *testing.T) {
	c := netsim.New(netsim.Options{})
	if c.Frames() != 0 {
		t.Fatal("new capture has frames")
	}
	cn := c.Open(cli4, srv4, netsim.ConnOptions{})
	if c.Frames() != 3 {
		t.Errorf("handshake: %d frames", c.Frames())
	}
	if done := cn.Send(true, []byte("x")); done != 4 || c.Frames() != 4 {
		t.Errorf("one-segment Send returned %d, Frames %d", done, c.Frames())
	}
	if done := cn.Send(true, nil); done != 0 || c.Frames() != 4 {
		t.Errorf("empty Send returned %d, Frames %d", done, c.Frames())
	}
	// Second segment in a row: the server acknowledges both at once.
	if done := cn.Send(true, []byte("y")); done != 5 || c.Frames() != 6 {
		t.Errorf("second Send returned %d, Frames %d", done, c.Frames())
	}
	cn.Close(true)
	if c.Frames() != 9 {
		t.Errorf("after Close: %d frames", c.Frames())
	}
}

func TestPanics(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	c := netsim.New(netsim.Options{})
	mustPanic("segment out of range", func() {
		c.Open(cli4, srv4, netsim.ConnOptions{}).Send(true, payload(10, 0), netsim.Reorder(0, 1))
	})
	mustPanic("overlap before the start", func() {
		c.Open(cli4, srv4, netsim.ConnOptions{}).Send(true, payload(10, 0), netsim.SplitAt(5), netsim.Overlap(1, 6))
	})
	mustPanic("missing interface", func() { c.Open(cli4, srv4, netsim.ConnOptions{Interface: 1}) })
	mustPanic("mixed families", func() { c.Open(cli4, srv6, netsim.ConnOptions{}) })
	mustPanic("MoreLinks in pcap", func() { netsim.New(netsim.Options{MoreLinks: []netsim.Link{netsim.Null}}) })
	mustPanic("Send after Close", func() {
		cn := c.Open(cli4, srv4, netsim.ConnOptions{})
		cn.Close(true)
		cn.Send(true, []byte("x"))
	})
}

func TestWriteFile(t *testing.T) {
	c := rich(5, netsim.PcapNG, true)
	path := filepath.Join(t.TempDir(), "x.pcapng.gz")
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, write(t, c)) {
		t.Errorf("WriteFile and WriteTo differ")
	}
}

// TestTshark has Wireshark read every kind of file, with checksum
// validation on.
func TestTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed")
	}
	dir := t.TempDir()
	type file struct {
		name   string
		c      *netsim.Capture
		frames int
	}
	var files []file
	add := func(name string, c *netsim.Capture) {
		files = append(files, file{name, c, c.Frames()})
	}
	for _, link := range allLinks {
		for _, f := range []netsim.Format{netsim.Pcap, netsim.PcapNano, netsim.PcapBigEndian, netsim.PcapNG} {
			c := netsim.New(netsim.Options{Link: link, Format: f, IPv6HopByHop: link == netsim.Null})
			conversation(c, cli4, srv4)
			conversation(c, cli6, srv6)
			add(link.String()+"-"+string(rune('0'+f)), c)
		}
	}
	add("rich-ng", rich(9, netsim.PcapNG, false))
	add("rich-pcap-gz", rich(9, netsim.Pcap, true))
	add("padded", netsim.New(netsim.Options{Pad: true, NoTimestamps: true}))
	conversation(files[len(files)-1].c, cli4, srv4)
	files[len(files)-1].frames = files[len(files)-1].c.Frames()
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := f.c.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(tshark, "-r", path, "-n",
			"-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
			"-T", "fields", "-e", "tcp.len", "-e", "tcp.checksum.status", "-e", "ip.checksum.status")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: tshark: %v: %s", f.name, err, stderr.String())
			continue
		}
		for _, l := range strings.Split(stderr.String(), "\n") {
			if l != "" && !strings.Contains(l, "Running as user") {
				t.Errorf("%s: tshark: %s", f.name, l)
			}
		}
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != f.frames {
			t.Errorf("%s: tshark read %d frames, want %d", f.name, len(lines), f.frames)
		}
		for i, l := range lines {
			fields := strings.Split(l, "\t")
			if len(fields) != 3 || fields[0] == "" {
				t.Errorf("%s: frame %d: %q", f.name, i+1, l)
				continue
			}
			// 1 is "good"; only the rich files have cut frames, which
			// cannot be verified (2).
			tcpOK := fields[1] == "1" || fields[1] == "2" && strings.HasPrefix(f.name, "rich")
			if !tcpOK || fields[2] != "" && fields[2] != "1" {
				t.Errorf("%s: frame %d: checksum status tcp %s ip %s", f.name, i+1, fields[1], fields[2])
			}
		}
	}
}

// TestSendParts writes three messages in one write: the segments straddle
// their boundaries, and each message is complete at the frame that
// carries its last byte.
func TestSendParts(t *testing.T) {
	c := netsim.New(netsim.Options{Seed: 4})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{MSS: 100})
	parts := [][]byte{payload(30, 1), payload(150, 2), payload(20, 3)}
	done := cn.SendParts(true, parts)
	// Segments: [0,100) [100,200) = frames 4, 5, then the ACK (6).
	if want := []int{4, 5, 5}; !slices.Equal(done, want) {
		t.Errorf("SendParts returned %v, want %v", done, want)
	}
	// Reordered: the second segment comes first, so nothing is complete
	// until the first arrives.
	done = cn.SendParts(true, [][]byte{payload(150, 4), payload(10, 5)}, netsim.Reorder(0, 1))
	first := 7 // after frames 4, 5 and the ACK 6
	if want := []int{first + 2, first + 2}; !slices.Equal(done, want) {
		t.Errorf("reordered SendParts returned %v, want %v", done, want)
	}
	if got := cn.SendParts(true, [][]byte{nil, payload(5, 6)}); got[0] != 0 || got[1] == 0 {
		t.Errorf("empty part: %v", got)
	}
	pkts := readCapture(t, write(t, c))
	var all []byte
	for _, p := range parts {
		all = append(all, p...)
	}
	all = append(all, payload(150, 4)...)
	all = append(all, payload(10, 5)...)
	all = append(all, payload(5, 6)...)
	expectStreams(t, pkts, cli4, srv4, []message{{fromClient: true, data: all}})
}
