package netsim_test

// Helpers that read written captures back with gopacket, independently of
// the writer's code.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kidscope/kidscope/samples/netsim"
)

// pkt is one frame read back and decoded.
type pkt struct {
	n    int // 1-based frame number
	ci   gopacket.CaptureInfo
	lt   layers.LinkType
	data []byte
	ip4  *layers.IPv4
	ip6  *layers.IPv6
	tcp  *layers.TCP
}

func (p pkt) src() netip.AddrPort { return p.addrPort(true) }
func (p pkt) dst() netip.AddrPort { return p.addrPort(false) }

func (p pkt) addrPort(src bool) netip.AddrPort {
	var a netip.Addr
	switch {
	case p.ip4 != nil && src:
		a, _ = netip.AddrFromSlice(p.ip4.SrcIP)
	case p.ip4 != nil:
		a, _ = netip.AddrFromSlice(p.ip4.DstIP)
	case src:
		a, _ = netip.AddrFromSlice(p.ip6.SrcIP)
	default:
		a, _ = netip.AddrFromSlice(p.ip6.DstIP)
	}
	port := p.tcp.DstPort
	if src {
		port = p.tcp.SrcPort
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port))
}

func (p pkt) flow() string { return p.src().String() + ">" + p.dst().String() }

func (p pkt) cut() bool { return p.ci.CaptureLength < p.ci.Length }

type packetReader interface {
	ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// readCapture reads a pcap or pcapng file (gzip or not) and decodes every
// frame down to TCP, failing the test on any frame that does not decode.
func readCapture(t *testing.T, file []byte) []pkt {
	t.Helper()
	var r packetReader
	var linkOf func(int) layers.LinkType
	ng, err := pcapgo.NewNgReader(bytes.NewReader(file), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err == nil {
		r = ng
		linkOf = func(i int) layers.LinkType {
			intf, err := ng.Interface(i)
			if err != nil {
				t.Fatalf("interface %d: %v", i, err)
			}
			return intf.LinkType
		}
	} else {
		pr, err := pcapgo.NewReader(bytes.NewReader(file))
		if err != nil {
			t.Fatalf("neither pcapng nor pcap: %v", err)
		}
		r = pr
		linkOf = func(int) layers.LinkType { return pr.LinkType() }
	}
	var pkts []pkt
	for n := 1; ; n++ {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		p := pkt{n: n, ci: ci, lt: linkOf(ci.InterfaceIndex), data: bytes.Clone(data)}
		gp := gopacket.NewPacket(p.data, p.lt, gopacket.Default)
		if el := gp.ErrorLayer(); el != nil && !p.cut() {
			t.Fatalf("frame %d (%v): decode error: %v", n, p.lt, el.Error())
		}
		if l, ok := gp.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
			p.ip4 = l
		}
		if l, ok := gp.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
			p.ip6 = l
		}
		l, ok := gp.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if !ok || (p.ip4 == nil) == (p.ip6 == nil) {
			t.Fatalf("frame %d (%v): no IP/TCP: %v", n, p.lt, gp)
		}
		p.tcp = l
		pkts = append(pkts, p)
	}
	return pkts
}

func write(t *testing.T, c *netsim.Capture) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := c.WriteTo(&b)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(b.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d bytes", n, b.Len())
	}
	return b.Bytes()
}

// sum16 is the Internet one's-complement sum of the concatenation.
func sum16(parts ...[]byte) uint16 {
	var all []byte
	for _, p := range parts {
		all = append(all, p...)
	}
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	var s uint32
	for i := 0; i < len(all); i += 2 {
		s += uint32(binary.BigEndian.Uint16(all[i:]))
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// checkChecksums verifies the IPv4 header and TCP checksums of every frame
// captured whole by summing over the header with its checksum field: a
// correct checksum makes the sum 0xffff.
func checkChecksums(t *testing.T, pkts []pkt) {
	t.Helper()
	for _, p := range pkts {
		if p.cut() {
			continue
		}
		seg := append(bytes.Clone(p.tcp.Contents), p.tcp.Payload...)
		var pseudo []byte
		if p.ip4 != nil {
			if s := sum16(p.ip4.Contents); s != 0xffff {
				t.Errorf("frame %d: IPv4 header checksum %#04x wrong (sum %#04x)", p.n, p.ip4.Checksum, s)
			}
			if int(p.ip4.Length) != len(p.ip4.Contents)+len(seg) {
				t.Errorf("frame %d: IPv4 length %d, header+TCP %d", p.n, p.ip4.Length, len(p.ip4.Contents)+len(seg))
			}
			pseudo = append(append(bytes.Clone(p.ip4.SrcIP.To4()), p.ip4.DstIP.To4()...), 0, 6, byte(len(seg)>>8), byte(len(seg)))
		} else {
			pseudo = append(append(bytes.Clone(p.ip6.SrcIP.To16()), p.ip6.DstIP.To16()...),
				0, 0, byte(len(seg)>>8), byte(len(seg)), 0, 0, 0, 6)
		}
		if s := sum16(pseudo, seg); s != 0xffff {
			t.Errorf("frame %d: TCP checksum %#04x wrong (sum %#04x)", p.n, p.tcp.Checksum, s)
		}
	}
}

// stream is one direction's payload placed by sequence number.
type stream struct {
	data []byte
	have []bool
}

// reassemble places the captured TCP payload of every direction at its
// offset from the first sequence number (the SYN's plus one, or the lowest
// data sequence number when there is no SYN), failing on overlapping bytes
// that differ.
func reassemble(t *testing.T, pkts []pkt) map[string]*stream {
	t.Helper()
	base := map[string]uint32{}
	syn := map[string]bool{}
	for _, p := range pkts {
		f := p.flow()
		switch {
		case p.tcp.SYN:
			base[f], syn[f] = p.tcp.Seq+1, true
		case syn[f] || len(p.tcp.Payload) == 0:
		default:
			if b, ok := base[f]; !ok || int32(p.tcp.Seq-b) < 0 {
				base[f] = p.tcp.Seq
			}
		}
	}
	out := map[string]*stream{}
	for _, p := range pkts {
		if len(p.tcp.Payload) == 0 {
			continue
		}
		f := p.flow()
		s := out[f]
		if s == nil {
			s = &stream{}
			out[f] = s
		}
		off := int(p.tcp.Seq - base[f])
		if end := off + len(p.tcp.Payload); end > len(s.data) {
			s.data = append(s.data, make([]byte, end-len(s.data))...)
			s.have = append(s.have, make([]bool, end-len(s.have))...)
		}
		for i, b := range p.tcp.Payload {
			if s.have[off+i] && s.data[off+i] != b {
				t.Fatalf("frame %d: byte %d of %s differs from an earlier copy", p.n, off+i, f)
			}
			s.data[off+i], s.have[off+i] = b, true
		}
	}
	return out
}

// holes lists the ranges of s not captured, as "start-end" strings.
func (s *stream) holes() []string {
	var out []string
	for i := 0; i < len(s.have); i++ {
		if s.have[i] {
			continue
		}
		j := i
		for j < len(s.have) && !s.have[j] {
			j++
		}
		out = append(out, fmt.Sprintf("%d-%d", i, j))
		i = j
	}
	return out
}

// tcpOpt returns the data of the first option of kind k and whether there is one.
func tcpOpt(tcp *layers.TCP, k layers.TCPOptionKind) ([]byte, bool) {
	for _, o := range tcp.Options {
		if o.OptionType == k {
			return o.OptionData, true
		}
	}
	return nil, false
}

func optKinds(tcp *layers.TCP) []layers.TCPOptionKind {
	var ks []layers.TCPOptionKind
	for _, o := range tcp.Options {
		ks = append(ks, o.OptionType)
	}
	return ks
}

// payload returns n deterministic bytes that differ with salt.
func payload(n int, salt byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i/251) ^ salt
	}
	return b
}
