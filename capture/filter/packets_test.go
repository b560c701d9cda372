package filter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/bpf"
)

// The packet set the verdict tests run every program on: IPv4 and IPv6,
// TCP, UDP, SCTP and ICMP, IPv4 options and fragments, IPv6 extension
// headers, VLAN tags of each kind, ARP, frames cut short, on every link
// type the filter supports.

func ip4(src, dst string, proto byte, l4 []byte, opt func(h []byte) []byte) []byte {
	h := make([]byte, 20)
	h[0] = 0x45
	h[8] = 64
	h[9] = proto
	copy(h[12:], netip.MustParseAddr(src).AsSlice())
	copy(h[16:], netip.MustParseAddr(dst).AsSlice())
	if opt != nil {
		h = opt(h)
	}
	binary.BigEndian.PutUint16(h[2:], uint16(len(h)+len(l4)))
	var sum uint32
	for i := 0; i < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
	return append(h, l4...)
}

// withOptions adds 8 bytes of IPv4 options (NOPs), IHL 7.
func withOptions(h []byte) []byte {
	h = append(h, 1, 1, 1, 1, 1, 1, 1, 0)
	h[0] = 0x47
	return h
}

func fragment(offset uint16, more bool) func([]byte) []byte {
	return func(h []byte) []byte {
		v := offset
		if more {
			v |= 0x2000
		}
		binary.BigEndian.PutUint16(h[6:], v)
		return h
	}
}

func ip6(src, dst string, next byte, payload []byte) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	h[6] = next
	h[7] = 64
	copy(h[8:], netip.MustParseAddr(src).AsSlice())
	copy(h[24:], netip.MustParseAddr(dst).AsSlice())
	return append(h, payload...)
}

func tcpHdr(sport, dport uint16) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	b[12] = 5 << 4
	b[13] = 0x18
	binary.BigEndian.PutUint16(b[14:], 65535)
	return append(b, "kafka"...)
}

// tcpSeg is a TCP header with the given flags and options (a multiple of
// 4 bytes), then payload.
func tcpSeg(sport, dport uint16, flags byte, opts []byte, payload string) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	b[12] = byte(5+len(opts)/4) << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:], 65535)
	b = append(b, opts...)
	return append(b, payload...)
}

func udpHdr(sport, dport uint16) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], 12)
	return append(b, "dns?"...)
}

func sctpHdr(sport, dport uint16) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	return b
}

// testPacket is one packet of the set: an IP packet, or a non-IP payload
// with its EtherType, and the VLAN tags (Ethernet only) to put before it.
type testPacket struct {
	name  string
	ip    []byte
	etype uint16 // non-IP: the EtherType of payload
	body  []byte
	tags  []uint16 // tag EtherTypes, outermost first; VLAN IDs are 10, 20... ... in order
	vids  []uint16
	cut   int // keep only this many bytes of the IP packet (0: all)
}

func arpBody(sender, target string) []byte {
	b := []byte{0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1}
	b = append(b, netip.MustParseAddr(sender).AsSlice()...)
	b = append(b, 0, 0, 0, 0, 0, 0)
	return append(b, netip.MustParseAddr(target).AsSlice()...)
}

func packetSet() []testPacket {
	v4tcp := func(s, d string, sp, dp uint16) []byte { return ip4(s, d, 6, tcpHdr(sp, dp), nil) }
	v6tcp := func(s, d string, sp, dp uint16) []byte { return ip6(s, d, 6, tcpHdr(sp, dp)) }
	later := make([]byte, 24) // a later fragment whose bytes look like ports 9092
	binary.BigEndian.PutUint16(later[0:], 9092)
	binary.BigEndian.PutUint16(later[2:], 9092)
	hopByHop := append([]byte{6, 0, 1, 4, 0, 0, 0, 0}, tcpHdr(51234, 9092)...)
	frag6 := append([]byte{6, 0, 0, 0, 0, 0, 0, 1}, tcpHdr(51234, 9092)...)
	frag6later := append([]byte{6, 0, 0x05, 0xc8, 0, 0, 0, 2}, tcpHdr(9092, 9092)...)
	return []testPacket{
		{name: "v4 tcp to 9092", ip: v4tcp("10.0.0.1", "10.0.0.2", 51234, 9092)},
		{name: "v4 tcp from 9092", ip: v4tcp("10.0.0.2", "10.0.0.1", 9092, 51234)},
		{name: "v4 tcp 9093", ip: v4tcp("10.0.0.3", "10.0.0.4", 40000, 9093)},
		{name: "v4 tcp ssh", ip: v4tcp("192.168.1.1", "172.16.5.4", 22, 60000)},
		{name: "v4 udp dns", ip: ip4("10.0.0.1", "10.0.0.9", 17, udpHdr(5353, 53), nil)},
		{name: "v4 udp 9092", ip: ip4("10.0.0.5", "10.0.0.6", 17, udpHdr(9092, 1), nil)},
		{name: "v4 sctp 9092", ip: ip4("10.0.0.7", "10.0.0.8", 132, sctpHdr(9092, 2), nil)},
		{name: "v4 options", ip: ip4("10.0.0.1", "10.0.0.2", 6, tcpHdr(1, 9092), withOptions)},
		{name: "v4 first fragment", ip: ip4("10.0.0.1", "10.0.0.2", 6, tcpHdr(1234, 9092), fragment(0, true))},
		{name: "v4 later fragment", ip: ip4("10.0.0.1", "10.0.0.2", 6, later, fragment(185, false))},
		{name: "v4 icmp", ip: ip4("10.0.0.1", "10.1.2.3", 1, []byte{8, 0, 0, 0, 0, 1, 0, 1}, nil)},
		{name: "v4 tcp 65535", ip: v4tcp("10.1.2.3", "8.8.8.8", 65535, 80)},
		{name: "v4 tcp 1 to 2", ip: v4tcp("10.0.0.10", "10.0.0.11", 1, 2)},
		{name: "v4 tcp 9100", ip: v4tcp("10.0.0.12", "10.0.0.13", 9100, 33000)},
		{name: "v4 tcp 9094", ip: v4tcp("10.0.0.1", "10.0.0.2", 9094, 1)},
		{name: "v4 tcp same host", ip: v4tcp("10.0.0.3", "10.0.0.3", 22, 22)},
		{name: "v6 tcp to 9092", ip: v6tcp("2001:db8::1", "2001:db8::2", 51234, 9092)},
		{name: "v6 loopback", ip: v6tcp("::1", "::1", 9092, 40000)},
		{name: "v6 udp", ip: ip6("fe80::1", "fe80::2", 17, udpHdr(53, 5353))},
		{name: "v6 hop-by-hop", ip: ip6("2001:db8::1", "2001:db8::2", 0, hopByHop)},
		{name: "v6 fragment header", ip: ip6("2001:db8::1", "2001:db8::2", 44, frag6)},
		{name: "v6 later fragment", ip: ip6("2001:db8::1", "2001:db8::2", 44, frag6later)},
		{name: "v6 other net", ip: v6tcp("2001:db8:1::5", "2001:db9::1", 1, 2)},
		{name: "v6 sctp", ip: ip6("2001:db8::3", "2001:db8::4", 132, sctpHdr(9092, 9)), cut: 0},
		{name: "v6 tcp 9100", ip: v6tcp("2001:db8::1", "2001:db8:ffff::1", 9100, 9093)},
		{name: "v4 cut in ports", ip: v4tcp("10.0.0.1", "10.0.0.2", 51234, 9092), cut: 21},
		{name: "v4 cut in header", ip: v4tcp("10.0.0.1", "10.0.0.2", 51234, 9092), cut: 14},
		{name: "v6 cut", ip: v6tcp("2001:db8::1", "2001:db8::2", 51234, 9092), cut: 30},
		{name: "arp", etype: 0x0806, body: arpBody("10.0.0.1", "10.0.0.2")},
		{name: "rarp", etype: 0x8035, body: arpBody("10.0.0.3", "10.0.0.1")},
		{name: "lldp", etype: 0x88cc, body: []byte{2, 7, 4, 0, 0, 0, 0, 0, 1}},
		{name: "ip type, nothing after", etype: 0x0800, body: nil},
		{name: "vlan 10 v4", ip: v4tcp("10.0.0.1", "10.0.0.2", 51234, 9092), tags: []uint16{0x8100}, vids: []uint16{10}},
		{name: "vlan 20 v6", ip: v6tcp("2001:db8::1", "2001:db8::2", 51234, 9092), tags: []uint16{0x8100}, vids: []uint16{20}},
		{name: "qinq 30/10 v4", ip: v4tcp("10.0.0.1", "10.0.0.2", 51234, 9092), tags: []uint16{0x88a8, 0x8100}, vids: []uint16{30, 10}},
		{name: "9100-tag 10 udp", ip: ip4("10.0.0.1", "10.0.0.9", 17, udpHdr(5353, 53), nil), tags: []uint16{0x9100}, vids: []uint16{10}},
		{name: "vlan 4095 arp", etype: 0x0806, body: arpBody("10.0.0.1", "10.0.0.2"), tags: []uint16{0x8100}, vids: []uint16{4095}},
		{name: "vlan 10 cut", tags: []uint16{0x8100}, vids: []uint16{10}, etype: 0x0800},
		{name: "v4 tcp syn", ip: ip4("10.0.0.1", "10.0.0.2", 6, tcpSeg(51234, 9092, 0x02, nil, ""), nil)},
		{name: "v4 tcp syn-ack", ip: ip4("10.0.0.2", "10.0.0.1", 6, tcpSeg(9092, 51234, 0x12, []byte{2, 4, 5, 0xb4}, ""), nil)},
		{name: "v4 tcp fin options", ip: ip4("10.0.0.1", "10.0.0.2", 6, tcpSeg(51234, 9092, 0x11, nil, ""), withOptions)},
		{name: "v4 http get", ip: ip4("10.0.0.5", "10.0.0.80", 6, tcpSeg(40000, 80, 0x18, make([]byte, 12), "GET / HTTP/1.1\r\n\r\n"), nil)},
		{name: "v4 http post", ip: ip4("10.0.0.5", "10.0.0.80", 6, tcpSeg(40000, 80, 0x18, nil, "POST / HTTP/1.1\r\n\r\n"), nil)},
		{name: "v4 icmp unreach", ip: ip4("10.0.0.9", "10.0.0.1", 1, []byte{3, 1, 0, 0, 0, 0, 0, 0}, nil)},
		{name: "v4 icmp echo reply", ip: ip4("10.0.0.2", "10.0.0.1", 1, []byte{0, 0, 0, 0, 0, 1, 0, 1}, nil)},
		{name: "v6 icmp6 echo", ip: ip6("2001:db8::1", "2001:db8::2", 58, []byte{128, 0, 0, 0, 0, 1, 0, 1})},
		{name: "v6 neighbor solicit", ip: ip6("fe80::1", "ff02::1:ff00:2", 58, append([]byte{135, 0, 0, 0, 0, 0, 0, 0}, netip.MustParseAddr("fe80::2").AsSlice()...))},
		{name: "v4 big udp", ip: ip4("10.0.0.1", "10.0.0.9", 17, append(udpHdr(5000, 5001), make([]byte, 1200)...), nil)},
		{name: "v4 tos and ttl", ip: ip4("10.0.0.7", "10.0.0.8", 17, udpHdr(1, 2), func(h []byte) []byte { h[1], h[8] = 0x10, 1; return h })},
	}
}

// Link types of the verdict tests, with their tcpdump -y names.
var testLinks = []struct {
	name string
	link layers.LinkType
}{
	{"EN10MB", 1}, {"LINUX_SLL", 113}, {"LINUX_SLL2", 276}, {"RAW", 101},
	{"IPV4", 228}, {"IPV6", 229}, {"NULL", 0}, {"LOOP", 108},
}

func linkByName(name string) layers.LinkType {
	for _, l := range testLinks {
		if l.name == name {
			return l.link
		}
	}
	panic("no link " + name)
}

// frame wraps p for a link type; ok is false where the link cannot carry
// it (VLAN tags or non-IP off Ethernet and Linux cooked, the other IP
// version on raw IPv4/IPv6 links).
func (p testPacket) frame(link layers.LinkType) ([]byte, bool) {
	ip := p.ip
	if p.cut > 0 {
		ip = ip[:p.cut]
	}
	et := p.etype
	payload := p.body
	v := 0
	if p.ip != nil {
		payload = ip
		v = int(p.ip[0] >> 4)
		et = 0x0800
		if v == 6 {
			et = 0x86dd
		}
	}
	if len(p.tags) > 0 && link != layers.LinkTypeEthernet {
		return nil, false
	}
	switch link {
	case layers.LinkTypeEthernet:
		h := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1}
		for i, tag := range p.tags {
			h = binary.BigEndian.AppendUint16(h, tag)
			h = binary.BigEndian.AppendUint16(h, p.vids[i])
		}
		h = binary.BigEndian.AppendUint16(h, et)
		return append(h, payload...), true
	case layers.LinkTypeLinuxSLL:
		h := make([]byte, 16)
		binary.BigEndian.PutUint16(h[2:], 1)
		binary.BigEndian.PutUint16(h[4:], 6)
		copy(h[6:], []byte{2, 0, 0, 0, 0, 1})
		binary.BigEndian.PutUint16(h[14:], et)
		return append(h, payload...), true
	case layers.LinkTypeLinuxSLL2:
		h := make([]byte, 20)
		binary.BigEndian.PutUint16(h[0:], et)
		binary.BigEndian.PutUint32(h[4:], 3)
		binary.BigEndian.PutUint16(h[8:], 1)
		h[11] = 6
		copy(h[12:], []byte{2, 0, 0, 0, 0, 1})
		return append(h, payload...), true
	}
	if p.ip == nil {
		return nil, false
	}
	switch link {
	case layers.LinkTypeRaw, LinkTypeRaw12, LinkTypeRaw14:
		return slicesClone(ip), true
	case layers.LinkTypeIPv4:
		return slicesClone(ip), v == 4
	case layers.LinkTypeIPv6:
		return slicesClone(ip), v == 6
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		fam := uint32(2)
		if v == 6 {
			fam = 30 // macOS's AF_INET6, as its lo0 captures carry
		}
		h := make([]byte, 4)
		if link == layers.LinkTypeNull {
			binary.LittleEndian.PutUint32(h, fam)
		} else {
			binary.BigEndian.PutUint32(h, fam)
		}
		return append(h, ip...), true
	}
	return nil, false
}

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

// framesFor returns the set's frames for a link type, with their names.
func framesFor(link layers.LinkType) (frames [][]byte, names []string) {
	for _, p := range packetSet() {
		if f, ok := p.frame(link); ok {
			frames = append(frames, f)
			names = append(names, p.name)
		}
	}
	return frames, names
}

// writePcap writes frames to a pcap file, frame i stamped i seconds after
// the epoch so tcpdump -tt names it.
func writePcap(t testing.TB, dir string, link layers.LinkType, frames [][]byte) string {
	t.Helper()
	var b bytes.Buffer
	w := pcapgo.NewWriter(&b)
	if err := w.WriteFileHeader(DefaultSnaplen, link); err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, fmt.Sprintf("link%d-%d.pcap", link, len(frames)))
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseImage reads "tcpdump -d" output back into instructions, so that
// tcpdump's own program can be run on the packet set.
func parseImage(text string) ([]bpf.RawInstruction, error) {
	re := regexp.MustCompile(`^\((\d+)\) (\S+)\s*(.*?)\s*(?:jt (\d+)\s+jf (\d+))?$`)
	var prog []bpf.RawInstruction
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %q", line)
		}
		n, _ := strconv.Atoi(m[1])
		op, arg := m[2], m[3]
		num := func(s string) uint32 {
			v, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				panic(fmt.Sprintf("number %q in %q", s, line))
			}
			return uint32(v)
		}
		var ins bpf.RawInstruction
		size := map[string]uint16{"ld": bpfW, "ldh": bpfH, "ldb": bpfB}
		alu := map[string]uint16{"add": bpfADD, "sub": bpfSUB, "mul": bpfMUL, "div": bpfDIV, "mod": bpfMOD,
			"and": bpfAND, "or": bpfOR, "xor": bpfXOR, "lsh": bpfLSH, "rsh": bpfRSH}
		jmp := map[string]uint16{"jeq": bpfJEQ, "jgt": bpfJGT, "jge": bpfJGE, "jset": bpfJSET}
		switch {
		case op == "ret" && arg == "":
			ins.Op = bpfRET | bpfA
		case op == "ret":
			ins.Op, ins.K = bpfRET|bpfK, num(arg[1:])
		case op == "ldxb":
			ins.Op, ins.K = bpfLDX|bpfB|bpfMSH, num(strings.TrimSuffix(strings.TrimPrefix(arg, "4*(["), "]&0xf)"))
		case op == "ldx" && strings.HasPrefix(arg, "#"):
			ins.Op, ins.K = bpfLDX|bpfIMM, num(arg[1:])
		case op == "ldx" && strings.HasPrefix(arg, "M["):
			ins.Op, ins.K = bpfLDX|bpfMEM, num(strings.TrimSuffix(arg[2:], "]"))
		case op == "ld" && strings.HasPrefix(arg, "M["):
			ins.Op, ins.K = bpfLD|bpfMEM, num(strings.TrimSuffix(arg[2:], "]"))
		case op == "st" || op == "stx":
			ins.Op, ins.K = bpfST, num(strings.TrimSuffix(strings.TrimPrefix(arg, "M["), "]"))
			if op == "stx" {
				ins.Op = bpfSTX
			}
		case op == "neg":
			ins.Op = bpfALU | bpfNEG
		case size[op] != 0 || op == "ld":
			switch {
			case strings.HasPrefix(arg, "[x + "):
				ins.Op, ins.K = bpfLD|size[op]|bpfIND, num(strings.TrimSuffix(arg[5:], "]"))
			case strings.HasPrefix(arg, "["):
				ins.Op, ins.K = bpfLD|size[op]|bpfABS, num(strings.Trim(arg, "[]"))
			case arg == "#pktlen":
				ins.Op = bpfLD | bpfW | bpfLEN
			case strings.HasPrefix(arg, "#"):
				ins.Op, ins.K = bpfLD|bpfIMM, num(arg[1:])
			default:
				return nil, fmt.Errorf("line %q", line)
			}
		case alu[op] != 0 || op == "add":
			if arg == "x" {
				ins.Op = bpfALU | alu[op] | bpfX
			} else {
				ins.Op, ins.K = bpfALU|alu[op]|bpfK, num(arg[1:])
			}
		case jmp[op] != 0:
			jt, _ := strconv.Atoi(m[4])
			jf, _ := strconv.Atoi(m[5])
			if arg == "x" {
				ins.Op = bpfJMP | jmp[op] | bpfX
			} else {
				ins.Op, ins.K = bpfJMP|jmp[op]|bpfK, num(arg[1:])
			}
			ins.Jt, ins.Jf = uint8(jt-n-1), uint8(jf-n-1)
		case op == "ja":
			ins.Op, ins.K = bpfJMP|bpfJA, num(arg)-uint32(n)-1
		case op == "tax":
			ins.Op = bpfMISC | bpfTAX
		case op == "txa":
			ins.Op = bpfMISC | bpfTXA
		default:
			return nil, fmt.Errorf("line %q", line)
		}
		prog = append(prog, ins)
	}
	return prog, nil
}
