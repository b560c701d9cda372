package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var (
	segA  = seg{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 9092, seq: 100, payload: "hello kafka"}
	segB  = seg{src: "10.0.0.2", dst: "10.0.0.1", sport: 9092, dport: 40000, seq: 500, payload: "hello client"}
	seg6  = seg{src: "2001:db8::1", dst: "2001:db8::2", sport: 40001, dport: 9093, seq: 200, payload: "kafka over v6"}
	segSY = seg{src: "10.0.0.3", dst: "10.0.0.2", sport: 40002, dport: 9092, seq: 7, syn: true}
)

// line is what describe prints for s as frame `frame` of file `file`.
func line(file int, frame int64, s seg) string {
	return line2(file, frame, s, s.payload)
}

func line2(file int, frame int64, s seg, payload string) string {
	return fmt.Sprintf("%d/%d %s:%d->%s:%d seq=%d %q", file, frame, net.ParseIP(s.src), s.sport, net.ParseIP(s.dst), s.dport, s.seq, payload)
}

func udp4(t testing.TB) []byte {
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{10, 0, 0, 9}, DstIP: net.IP{10, 0, 0, 53}}
	udp := &layers.UDP{SrcPort: 5353, DstPort: 53}
	udp.SetNetworkLayerForChecksum(ip)
	return serialize(t, ip, udp, gopacket.Payload("not tcp at all"))
}

func arpFrame(t testing.TB) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{255, 255, 255, 255, 255, 255}, EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPRequest, SourceHwAddress: []byte{2, 0, 0, 0, 0, 1}, SourceProtAddress: []byte{10, 0, 0, 1},
		DstHwAddress: []byte{0, 0, 0, 0, 0, 0}, DstProtAddress: []byte{10, 0, 0, 2},
	}
	return serialize(t, eth, arp)
}

// ip4Options is segA with an IPv4 router-alert option and a NOP/EOL pad.
func ip4Options(t testing.TB, s seg) []byte {
	ip, tcp := s.ip4Layer(), s.tcp()
	ip.Options = []layers.IPv4Option{
		{OptionType: 148, OptionLength: 4, OptionData: []byte{0, 0}},
		{OptionType: 1, OptionLength: 1},
		{OptionType: 1, OptionLength: 1},
		{OptionType: 1, OptionLength: 1},
		{OptionType: 0, OptionLength: 1},
	}
	tcp.SetNetworkLayerForChecksum(ip)
	b := serialize(t, ip, tcp, gopacket.Payload(s.payload))
	if ihl := b[0] & 0x0f; ihl != 7 {
		t.Fatalf("test packet has IHL %d, want 7", ihl)
	}
	return b
}

func TestLinkTypes(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	ext6 := func(t testing.TB) []byte {
		return seg6.ip6Ext(t,
			[]layers.IPProtocol{layers.IPProtocolIPv6HopByHop, layers.IPProtocolIPv6Routing, layers.IPProtocolIPv6Destination, layers.IPProtocolIPv6Fragment},
			[][]byte{extHopByHop, extRouting, extDestOpts, extFragFirst})
	}
	cases := []struct {
		name   string
		link   layers.LinkType
		frames func(t testing.TB) [][]byte
		want   []string
		notTCP int64
	}{
		{
			name: "ethernet", link: layers.LinkTypeEthernet,
			frames: func(t testing.TB) [][]byte {
				return [][]byte{arpFrame(t), ether(t, udp4(t)), ether(t, segA.ip4(t)), ether(t, seg6.ip6(t))}
			},
			want:   []string{line(0, 3, segA), line(0, 4, seg6)},
			notTCP: 2,
		},
		{
			name: "ethernet ipv4 options", link: layers.LinkTypeEthernet,
			frames: func(t testing.TB) [][]byte { return [][]byte{ether(t, ip4Options(t, segA))} },
			want:   []string{line(0, 1, segA)},
		},
		{
			name: "ethernet ipv6 extension headers", link: layers.LinkTypeEthernet,
			frames: func(t testing.TB) [][]byte {
				later := seg6.ip6Ext(t, []layers.IPProtocol{layers.IPProtocolIPv6Fragment}, [][]byte{extFragLater})
				return [][]byte{ether(t, ext6(t)), ether(t, later)}
			},
			want:   []string{line(0, 1, seg6)},
			notTCP: 1,
		},
		{
			name: "802.1Q", link: layers.LinkTypeEthernet,
			frames: func(t testing.TB) [][]byte {
				return [][]byte{ether(t, segA.ip4(t), layers.EthernetTypeDot1Q), ether(t, seg6.ip6(t), layers.EthernetTypeDot1Q)}
			},
			want: []string{line(0, 1, segA), line(0, 2, seg6)},
		},
		{
			name: "QinQ 802.1ad", link: layers.LinkTypeEthernet,
			frames: func(t testing.TB) [][]byte {
				return [][]byte{
					ether(t, segA.ip4(t), layers.EthernetTypeQinQ, layers.EthernetTypeDot1Q),
					ether(t, udp4(t), layers.EthernetTypeQinQ, layers.EthernetTypeDot1Q),
					ether(t, seg6.ip6(t), 0x9100, layers.EthernetTypeDot1Q, layers.EthernetTypeDot1Q),
				}
			},
			want:   []string{line(0, 1, segA), line(0, 3, seg6)},
			notTCP: 1,
		},
		{
			name: "linux SLL", link: layers.LinkTypeLinuxSLL,
			frames: func(t testing.TB) [][]byte { return [][]byte{sll(udp4(t)), sll(segA.ip4(t)), sll(seg6.ip6(t))} },
			want:   []string{line(0, 2, segA), line(0, 3, seg6)},
			notTCP: 1,
		},
		{
			name: "linux SLL2", link: layers.LinkTypeLinuxSLL2,
			frames: func(t testing.TB) [][]byte { return [][]byte{sll2(segA.ip4(t)), sll2(udp4(t)), sll2(ext6(t))} },
			want:   []string{line(0, 1, segA), line(0, 3, seg6)},
			notTCP: 1,
		},
		{
			name: "NULL little-endian", link: layers.LinkTypeNull,
			frames: func(t testing.TB) [][]byte {
				return [][]byte{null(le, 2, segA.ip4(t)), null(le, 24, seg6.ip6(t)), null(le, 28, seg6.ip6(t)), null(le, 30, seg6.ip6(t)), null(le, 7, segA.ip4(t))}
			},
			want:   []string{line(0, 1, segA), line(0, 2, seg6), line(0, 3, seg6), line(0, 4, seg6)},
			notTCP: 1,
		},
		{
			name: "NULL big-endian", link: layers.LinkTypeNull,
			frames: func(t testing.TB) [][]byte {
				return [][]byte{null(be, 2, segA.ip4(t)), null(be, 24, seg6.ip6(t)), null(be, 28, seg6.ip6(t)), null(be, 30, seg6.ip6(t))}
			},
			want: []string{line(0, 1, segA), line(0, 2, seg6), line(0, 3, seg6), line(0, 4, seg6)},
		},
		{
			name: "LOOP", link: layers.LinkTypeLoop,
			frames: func(t testing.TB) [][]byte { return [][]byte{null(be, 2, segA.ip4(t)), null(be, 30, seg6.ip6(t))} },
			want:   []string{line(0, 1, segA), line(0, 2, seg6)},
		},
		{
			name: "raw 101", link: layers.LinkTypeRaw,
			frames: func(t testing.TB) [][]byte { return [][]byte{udp4(t), segA.ip4(t), ext6(t)} },
			want:   []string{line(0, 2, segA), line(0, 3, seg6)},
			notTCP: 1,
		},
		{
			name: "raw 12", link: 12,
			frames: func(t testing.TB) [][]byte { return [][]byte{segA.ip4(t), seg6.ip6(t)} },
			want:   []string{line(0, 1, segA), line(0, 2, seg6)},
		},
		{
			name: "raw 14", link: 14,
			frames: func(t testing.TB) [][]byte { return [][]byte{seg6.ip6(t), segA.ip4(t)} },
			want:   []string{line(0, 1, seg6), line(0, 2, segA)},
		},
		{
			name: "IPv4 228", link: layers.LinkTypeIPv4,
			frames: func(t testing.TB) [][]byte { return [][]byte{ip4Options(t, segB), segA.ip4(t)} },
			want:   []string{line(0, 1, segB), line(0, 2, segA)},
		},
		{
			name: "IPv6 229", link: layers.LinkTypeIPv6,
			frames: func(t testing.TB) [][]byte { return [][]byte{ext6(t), seg6.ip6(t)} },
			want:   []string{line(0, 1, seg6), line(0, 2, seg6)},
		},
		{
			name: "unknown link type", link: 147,
			frames: func(t testing.TB) [][]byte { return [][]byte{segA.ip4(t)} },
			notTCP: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			frames := c.frames(t)
			got, st, probs := readBytes(t, pcapBytes(t, c.link, false, recs(frames...)))
			checkLines(t, got, c.want)
			want := Stats{Packets: int64(len(frames)), TCP: int64(len(c.want)), NotTCP: c.notTCP}
			for _, f := range frames {
				want.Bytes += int64(len(f))
			}
			if st != want {
				t.Errorf("stats %+v, want %+v", st, want)
			}
			if len(probs) != 0 {
				t.Errorf("problems: %v", probs)
			}
		})
	}
}

// TestFlowMatchesGopacket checks that Network and the TCP layer are what
// gopacket's own full decode makes of the same frame, so reassembly keys
// connections the same way.
func TestFlowMatchesGopacket(t *testing.T) {
	for _, frame := range [][]byte{ether(t, segA.ip4(t)), ether(t, seg6.ip6(t), layers.EthernetTypeDot1Q), ether(t, ip4Options(t, segB))} {
		r, err := Open([]string{"-"}, bytes.NewReader(pcapBytes(t, layers.LinkTypeEthernet, false, recs(frame))))
		if err != nil {
			t.Fatal(err)
		}
		var p Packet
		if err := r.Next(&p); err != nil {
			t.Fatal(err)
		}
		gp := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
		if want := gp.NetworkLayer().NetworkFlow(); p.Network != want {
			t.Errorf("flow %v, want %v", p.Network, want)
		}
		tcp := gp.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if p.TCP.Seq != tcp.Seq || p.TCP.Ack != tcp.Ack || p.TCP.SrcPort != tcp.SrcPort || p.TCP.DstPort != tcp.DstPort ||
			p.TCP.ACK != tcp.ACK || p.TCP.PSH != tcp.PSH || !bytes.Equal(p.TCP.Payload, tcp.Payload) {
			t.Errorf("tcp %+v, want %+v", p.TCP, tcp)
		}
		if p.TCP.TransportFlow() != tcp.TransportFlow() {
			t.Errorf("transport flow %v, want %v", p.TCP.TransportFlow(), tcp.TransportFlow())
		}
		r.Close()
	}
}

func TestPcapngInterfaces(t *testing.T) {
	links := []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL2, layers.LinkTypeNull, layers.LinkTypeRaw}
	rs := []rec{
		{ts: t0, data: ether(t, segA.ip4(t)), iface: 0},
		{ts: t0.Add(1), data: sll2(seg6.ip6(t)), iface: 1},
		{ts: t0.Add(2), data: arpFrame(t), iface: 0},
		{ts: t0.Add(3), data: null(binary.LittleEndian, 2, segB.ip4(t)), iface: 2},
		{ts: t0.Add(4), data: segSY.ip4(t), iface: 3},
		// raw IP bytes on the Ethernet interface are garbage there
		{ts: t0.Add(5), data: segA.ip4(t)[:12], iface: 0},
	}
	got, st, probs := readBytes(t, ngBytes(t, links, rs))
	checkLines(t, got, []string{line(0, 1, segA), line(0, 2, seg6), line(0, 4, segB), line(0, 5, segSY)})
	if st.Packets != 6 || st.TCP != 4 || st.NotTCP != 1 || st.Malformed != 1 {
		t.Errorf("stats %+v", st)
	}
	if len(probs) != 0 {
		t.Errorf("problems: %v", probs)
	}
}

// TestFormats reads the same packets from every container: pcap in both
// byte orders and both resolutions, pcapng, and each of those gzipped. The
// gzip files have no .gz name: detection is by content.
func TestFormats(t *testing.T) {
	rs := []rec{
		{ts: t0.Add(123456789 * time.Nanosecond), data: ether(t, segA.ip4(t))},
		{ts: t0.Add(2*time.Second + 987654321*time.Nanosecond), data: ether(t, seg6.ip6(t))},
	}
	want := []string{line(0, 1, segA), line(0, 2, seg6)}
	micro := []time.Time{rs[0].ts.Truncate(time.Microsecond), rs[1].ts.Truncate(time.Microsecond)}
	nano := []time.Time{rs[0].ts, rs[1].ts}
	formats := []struct {
		name  string
		b     []byte
		times []time.Time
	}{
		{"pcap", pcapBytes(t, layers.LinkTypeEthernet, false, rs), micro},
		{"pcap nanoseconds", pcapBytes(t, layers.LinkTypeEthernet, true, rs), nano},
		{"pcap big-endian", pcapBigEndian(layers.LinkTypeEthernet, false, rs), micro},
		{"pcap big-endian nanoseconds", pcapBigEndian(layers.LinkTypeEthernet, true, rs), nano},
		{"pcapng", ngBytes(t, []layers.LinkType{layers.LinkTypeEthernet}, rs), nano},
	}
	for _, f := range formats {
		formats = append(formats, struct {
			name  string
			b     []byte
			times []time.Time
		}{f.name + " gzip", gzipBytes(t, f.b), f.times})
	}
	dir := t.TempDir()
	for i, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			path := writeFile(t, dir, fmt.Sprintf("capture%d.bin", i), f.b)
			r, err := Open([]string{path}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var (
				got   []string
				times []time.Time
				p     Packet
			)
			for r.Next(&p) == nil {
				got = append(got, describe(&p))
				times = append(times, p.Time)
				if p.WireLength != len(rs[p.Frame-1].data) {
					t.Errorf("frame %d: wire length %d, want %d", p.Frame, p.WireLength, len(rs[p.Frame-1].data))
				}
			}
			checkLines(t, got, want)
			if !slices.EqualFunc(times, f.times, time.Time.Equal) {
				t.Errorf("times %v, want %v", times, f.times)
			}
			if n := r.BytesRead(); n != int64(len(f.b)) {
				t.Errorf("BytesRead %d, want the file size %d", n, len(f.b))
			}
			if len(r.Problems()) != 0 {
				t.Errorf("problems: %v", r.Problems())
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	frames := [][]byte{ether(t, segA.ip4(t)), ether(t, segB.ip4(t)), ether(t, seg6.ip6(t)), ether(t, segSY.ip4(t))}
	full := pcapBytes(t, layers.LinkTypeEthernet, false, recs(frames...))
	rec3 := 24 + 16 + len(frames[0]) + 16 + len(frames[1]) // offset of record 3
	ngFull := ngBytes(t, []layers.LinkType{layers.LinkTypeEthernet}, recs(frames...))
	// pcapng: SHB and IDB, then one EPB per packet; find EPB 3 by walking.
	off := 0
	for i := 0; i < 4; i++ { // SHB, IDB, EPB 1, EPB 2
		off += int(binary.LittleEndian.Uint32(ngFull[off+4:]))
	}
	// gzip with two members: everything up to record 3 whole, then record 3
	// on, cut short in the middle of the compressed data.
	tail := gzipBytes(t, full[rec3:])
	gz := append(gzipBytes(t, full[:rec3]), tail[:len(tail)/2]...)

	cases := []struct {
		name string
		b    []byte
		msg  string
	}{
		{"pcap cut in record data", full[:rec3+16+20], "truncated file: packet record cut short"},
		{"pcap cut after record header", full[:rec3+16], "truncated file: packet record cut short"},
		{"pcap cut in record header", full[:rec3+5], "truncated file: packet record cut short"},
		{"pcapng cut in block", ngFull[:off+30], "truncated file: block cut short"},
		{"pcapng cut in block header", ngFull[:off+6], "truncated file: block cut short"},
		{"gzip pcap cut", gz, "truncated file: packet record cut short"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, dir, fmt.Sprintf("cut%d.pcap", i), c.b)
			got, st, probs := readAll(t, []string{path}, nil)
			checkLines(t, got, []string{line(0, 1, segA), line(0, 2, segB)})
			if st.Packets != 2 {
				t.Errorf("stats %+v", st)
			}
			if len(probs) != 1 {
				t.Fatalf("problems %v, want one", probs)
			}
			want := "read " + path + ": frame 3: " + c.msg
			if probs[0].Error() != want {
				t.Errorf("problem %q, want %q", probs[0], want)
			}
			var fe *FrameError
			if !errors.As(probs[0], &fe) || fe.File != path || fe.Frame != 3 {
				t.Errorf("problem is not a FrameError for %s frame 3: %#v", path, probs[0])
			}
			if !errors.Is(probs[0], io.ErrUnexpectedEOF) {
				t.Errorf("problem does not wrap io.ErrUnexpectedEOF")
			}
		})
	}

	// A truncated file does not stop the others in a merge.
	t.Run("merge goes on", func(t *testing.T) {
		cut := writeFile(t, dir, "cut.pcap", full[:rec3+40])
		other := writeFile(t, dir, "other.pcap", pcapBytes(t, layers.LinkTypeEthernet, false, recs(frames...)))
		got, _, probs := readAll(t, []string{cut, other}, nil)
		checkLines(t, got, []string{
			line(0, 1, segA), line(1, 1, segA), line(0, 2, segB), line(1, 2, segB), line(1, 3, seg6), line(1, 4, segSY),
		})
		if len(probs) != 1 || probs[0].Error() != "read "+cut+": frame 3: truncated file: packet record cut short" {
			t.Errorf("problems %v", probs)
		}
	})
}

// TestBadRecord: a record longer than any snap length is a problem naming
// the frame, not a crash or an endless read.
func TestBadRecord(t *testing.T) {
	b := pcapBytes(t, layers.LinkTypeEthernet, false, recs(ether(t, segA.ip4(t)), ether(t, segB.ip4(t))))
	rec2 := 24 + 16 + len(ether(t, segA.ip4(t)))
	binary.LittleEndian.PutUint32(b[rec2+8:], 1<<30) // captured length
	binary.LittleEndian.PutUint32(b[rec2+12:], 1<<30)
	got, _, probs := readBytes(t, b)
	checkLines(t, got, []string{line(0, 1, segA)})
	if len(probs) != 1 || probs[0].Error() != "read stdin: frame 2: capture length exceeds snap length: 1073741824 > 65535" {
		t.Errorf("problems %v", probs)
	}
}

func TestSnapLengthCut(t *testing.T) {
	long := segA
	long.payload = "0123456789abcdefghij"
	full := ether(t, long.ip4(t))
	full6 := ether(t, seg6.ip6Ext(t, []layers.IPProtocol{layers.IPProtocolIPv6HopByHop, layers.IPProtocolIPv6Routing}, [][]byte{extHopByHop, extRouting}))
	rs := []rec{
		{ts: t0, data: full[:len(full)-8], wire: len(full)},               // payload cut
		{ts: t0.Add(1), data: full[:14+20+10], wire: len(full)},           // TCP header cut
		{ts: t0.Add(2), data: full[:14+12], wire: len(full)},              // IP header cut
		{ts: t0.Add(3), data: full6[:14+40+8+10], wire: len(full6)},       // IPv6 routing header cut
		{ts: t0.Add(4), data: full[:14+20+20], wire: len(full)},           // header whole, no payload byte
		{ts: t0.Add(5), data: full6[:len(full6)-1], wire: len(full6)},     // one byte short
		{ts: t0.Add(6), data: ether(t, segB.ip4(t)), wire: len(full) + 1}, // whole IP packet: not cut
	}
	got, st, _ := readBytes(t, pcapBytes(t, layers.LinkTypeEthernet, false, rs))
	checkLines(t, got, []string{
		line2(0, 1, long, "0123456789ab") + " cut",
		line2(0, 5, long, "") + " cut",
		line2(0, 6, seg6, seg6.payload[:len(seg6.payload)-1]) + " cut",
		line(0, 7, segB),
	})
	if st.Cut != 3 || st.Malformed != 3 || st.TCP != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestPadding(t *testing.T) {
	short := segA
	short.payload = "hi" // 14+20+20+2 = 56 bytes: the serializer pads to 60
	fcs := []byte{0xde, 0xad, 0xbe, 0xef}
	frames := [][]byte{
		ether(t, short.ip4(t)),
		append(ether(t, segA.ip4(t)), fcs...),
		append(ether(t, seg6.ip6(t)), fcs...),
		append(sll(segB.ip4(t)), 0, 0),
		ether(t, segB.ip4(t)), // no padding
	}
	if len(frames[0]) != 60 {
		t.Fatalf("test frame is %d bytes, want 60", len(frames[0]))
	}
	rs := recs(frames...)
	rs[3].iface = 1
	got, st, _ := readBytes(t, ngBytes(t, []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL}, rs))
	checkLines(t, got, []string{line(0, 1, short), line(0, 2, segA), line(0, 3, seg6), line(0, 4, segB), line(0, 5, segB)})
	if st.Padded != 4 || st.Cut != 0 || st.TCP != 5 {
		t.Errorf("stats %+v", st)
	}
}

func TestFragmentsAndMalformed(t *testing.T) {
	set := func(b []byte, f func([]byte)) []byte { b = append([]byte(nil), b...); f(b); return b }
	a := segA.ip4(t)
	frames := []struct {
		data []byte
		want string // "tcp", "not", "bad"
	}{
		{set(a, func(b []byte) { b[6] |= 0x20 }), "tcp"},                                                                                        // 1 first fragment, more to come
		{set(a, func(b []byte) { b[7] = 185 }), "not"},                                                                                          // 2 a later fragment
		{set(a, func(b []byte) { b[0] = 0x44 }), "bad"},                                                                                         // 3 IHL 4
		{set(a, func(b []byte) { b[2], b[3] = 0, 10 }), "bad"},                                                                                  // 4 total length < header
		{set(a, func(b []byte) { b[20+12] = 4 << 4 }), "bad"},                                                                                   // 5 TCP data offset 4
		{set(a, func(b []byte) { b[20+12] = 15 << 4 }), "bad"},                                                                                  // 6 TCP header past the end
		{set(a, func(b []byte) { b[0] = 0x55 }), "bad"},                                                                                         // 7 IP version 5
		{set(a, func(b []byte) { b[9] = 1 }), "not"},                                                                                            // 8 ICMP
		{set(a, func(b []byte) { b[2], b[3] = 0, 0 }), "tcp"},                                                                                   // 9 total length 0 (TSO)
		{set(seg6.ip6(t), func(b []byte) { b[6] = 59 }), "not"},                                                                                 // 10 no next header
		{seg6.ip6Ext(t, []layers.IPProtocol{layers.IPProtocolIPv6Fragment}, [][]byte{extFragLater}), "not"},                                     // 11
		{seg6.ip6Ext(t, []layers.IPProtocol{layers.IPProtocolIPv6Fragment}, [][]byte{extFragFirst}), "tcp"},                                     // 12
		{set(seg6.ip6Ext(t, []layers.IPProtocol{layers.IPProtocolIPv6HopByHop}, [][]byte{extHopByHop}), func(b []byte) { b[41] = 200 }), "bad"}, // 13 ext header past the end
		{set(seg6.ip6(t), func(b []byte) { b[4], b[5] = 0, 0 }), "tcp"},                                                                         // 14 payload length 0
		{[]byte{}, "bad"}, // 15
		{a[:19], "bad"},   // 16
	}
	var (
		data          [][]byte
		want          []string
		nNot, nBad    int64
		seqs          = map[int]seg{1: segA, 9: segA, 12: seg6, 14: seg6}
		frameNumber   int
		expectedFlows int
	)
	for _, f := range frames {
		frameNumber++
		data = append(data, f.data)
		switch f.want {
		case "tcp":
			want = append(want, line(0, int64(frameNumber), seqs[frameNumber]))
			expectedFlows++
		case "not":
			nNot++
		case "bad":
			nBad++
		}
	}
	got, st, _ := readBytes(t, pcapBytes(t, layers.LinkTypeRaw, false, recs(data...)))
	checkLines(t, got, want)
	if st.NotTCP != nNot || st.Malformed != nBad || st.TCP != int64(expectedFlows) || st.Packets != int64(len(frames)) {
		t.Errorf("stats %+v, want %d not TCP, %d malformed", st, nNot, nBad)
	}
}

func TestMergeByTime(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	dir := t.TempDir()
	a := writeFile(t, dir, "a.pcap", pcapBytes(t, layers.LinkTypeEthernet, false, []rec{
		{ts: ms(1), data: ether(t, segA.ip4(t))},
		{ts: ms(3), data: ether(t, segA.ip4(t))},
		{ts: ms(5), data: ether(t, segA.ip4(t))},
	}))
	b := writeFile(t, dir, "b.pcapng", ngBytes(t, []layers.LinkType{layers.LinkTypeEthernet}, []rec{
		{ts: ms(0), data: arpFrame(t)},
		{ts: ms(2), data: ether(t, segB.ip4(t))},
		{ts: ms(3), data: ether(t, segB.ip4(t))},
		{ts: ms(4), data: ether(t, segB.ip4(t))},
	}))
	got, st, _ := readAll(t, []string{a, b}, nil)
	checkLines(t, got, []string{
		line(0, 1, segA), line(1, 2, segB), line(0, 2, segA), line(1, 3, segB), line(1, 4, segB), line(0, 3, segA),
	})
	if st.Packets != 7 || st.TCP != 6 || st.NotTCP != 1 {
		t.Errorf("stats %+v", st)
	}

	// A file that goes back in time keeps its own order.
	c := writeFile(t, dir, "c.pcapng", ngBytes(t, []layers.LinkType{layers.LinkTypeEthernet}, []rec{
		{ts: ms(5), data: ether(t, segA.ip4(t))},
		{ts: ms(1), data: ether(t, segA.ip4(t))},
	}))
	d := writeFile(t, dir, "d.pcap", pcapBytes(t, layers.LinkTypeEthernet, false, []rec{{ts: ms(3), data: ether(t, segB.ip4(t))}}))
	got, _, _ = readAll(t, []string{c, d}, nil)
	checkLines(t, got, []string{line(1, 1, segB), line(0, 1, segA), line(0, 2, segA)})
}

// TestMergeRandom compares the merge of many files with a plain reference:
// repeatedly take the earliest head, the lowest file on a tie.
func TestMergeRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	frame := ether(t, segA.ip4(t))
	for round := 0; round < 20; round++ {
		nfiles := 1 + rng.Intn(12) // past manyFiles too
		var (
			paths []string
			times [][]time.Time
		)
		for f := 0; f < nfiles; f++ {
			n := rng.Intn(30)
			var rs []rec
			var ts []time.Time
			for i := 0; i < n; i++ {
				tm := t0.Add(time.Duration(rng.Intn(40)) * time.Millisecond) // many ties, some going back
				rs = append(rs, rec{ts: tm, data: frame})
				ts = append(ts, tm)
			}
			paths = append(paths, writeFile(t, dir, fmt.Sprintf("r%d-%d.pcap", round, f), pcapBytes(t, layers.LinkTypeEthernet, false, rs)))
			times = append(times, ts)
		}
		var want []string
		next := make([]int, nfiles)
		for {
			best := -1
			for f := range nfiles {
				if next[f] < len(times[f]) && (best < 0 || times[f][next[f]].Before(times[best][next[best]])) {
					best = f
				}
			}
			if best < 0 {
				break
			}
			next[best]++
			want = append(want, fmt.Sprintf("%d/%d", best, next[best]))
		}
		r, err := Open(paths, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var p Packet
		for r.Next(&p) == nil {
			got = append(got, fmt.Sprintf("%d/%d", p.File, p.Frame))
		}
		r.Close()
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: merged order\n got  %v\n want %v", round, got, want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.pcap", pcapBytes(t, layers.LinkTypeEthernet, false, recs(ether(t, segA.ip4(t)))))
	pcapHdr := pcapBytes(t, layers.LinkTypeEthernet, false, nil)
	ngHdr := ngBytes(t, []layers.LinkType{layers.LinkTypeEthernet}, nil)
	badVersion := append([]byte(nil), pcapHdr...)
	badVersion[4] = 3
	cases := []struct {
		name string
		b    []byte
		msg  string // after "read PATH: "
	}{
		{"x.txt", []byte("Hello, world\n"), "not a pcap or pcapng file (starts with 48 65 6c 6c)"},
		{"empty.pcap", nil, "not a pcap or pcapng file (file is empty)"},
		{"short.pcap", []byte{0xd4, 0xc3}, "not a pcap or pcapng file (file is 2 bytes long)"},
		{"text.gz", gzipBytes(t, []byte("Hello, world\n")), "not a pcap or pcapng file (gzip-compressed, starts with 48 65 6c 6c)"},
		{"empty.gz", gzipBytes(t, nil), "not a pcap or pcapng file (gzip-compressed file is empty)"},
		{"badgzip.gz", []byte{0x1f, 0x8b, 0, 0, 0}, "gzip: unexpected EOF"},
		{"cutgzip.gz", gzipBytes(t, pcapHdr)[:11], "gzip: unexpected EOF"},
		{"header.pcap", pcapHdr[:10], "truncated pcap file header"},
		{"header.pcapng", ngHdr[:20], "truncated pcapng file header"},
		{"version.pcap", badVersion, "pcap file header: Unknown major version 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, dir, c.name, c.b)
			want := "read " + path + ": " + c.msg
			// Alone, the input fails Open.
			if r, err := Open([]string{path}, nil); err == nil {
				r.Close()
				t.Errorf("no error alone")
			} else if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			// With a good one, it is a problem of its own, and the good
			// one is read; indexes stay those of the paths.
			got, _, probs := readAll(t, []string{path, good}, nil)
			checkLines(t, got, []string{line(1, 1, segA)})
			if len(probs) != 1 || probs[0].Error() != want || Recovered(probs[0]) {
				t.Fatalf("problems %v, want %q", probs, want)
			}
			var pe *fs.PathError
			if !errors.As(probs[0], &pe) || pe.Path != path {
				t.Errorf("problem is not a *fs.PathError for %s: %#v", path, probs[0])
			}
		})
	}
	t.Run("several bad, one good", func(t *testing.T) {
		empty := writeFile(t, dir, "e.pcap", nil)
		missing := filepath.Join(dir, "missing.pcap")
		r, err := Open([]string{empty, good, missing}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if got := r.Files(); !slices.Equal(got, []string{empty, good, missing}) {
			t.Errorf("Files() = %v", got)
		}
		var p Packet
		if err := r.Next(&p); err != nil || p.File != 1 || p.Frame != 1 {
			t.Errorf("Next: %v, file %d frame %d", err, p.File, p.Frame)
		}
		if err := r.Next(&p); err != io.EOF {
			t.Errorf("Next at the end: %v", err)
		}
		probs := r.Problems()
		if len(probs) != 2 || !strings.Contains(probs[0].Error(), empty+": not a pcap or pcapng file (file is empty)") ||
			!errors.Is(probs[1], fs.ErrNotExist) || !strings.Contains(probs[1].Error(), missing) {
			t.Errorf("problems %v", probs)
		}
	})
	t.Run("all bad", func(t *testing.T) {
		empty := writeFile(t, dir, "e2.pcap", nil)
		missing := filepath.Join(dir, "missing2.pcap")
		_, err := Open([]string{empty, missing}, nil)
		if err == nil {
			t.Fatal("no error")
		}
		want := "read " + empty + ": not a pcap or pcapng file (file is empty)\nopen " + missing + ": no such file or directory"
		if err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error does not wrap fs.ErrNotExist")
		}
	})
	t.Run("stdin twice", func(t *testing.T) {
		if _, err := Open([]string{good, "-", "-"}, bytes.NewReader(nil)); err == nil || err.Error() != "read stdin: named more than once" {
			t.Errorf("error %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		path := filepath.Join(dir, "x.pcap")
		_, err := Open([]string{path}, nil)
		if err == nil || err.Error() != "open "+path+": no such file or directory" {
			t.Errorf("error %v", err)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error does not wrap fs.ErrNotExist")
		}
	})
	t.Run("directory", func(t *testing.T) {
		_, err := Open([]string{dir}, nil)
		if err == nil || err.Error() != "read "+dir+": is a directory" {
			t.Errorf("error %v", err)
		}
	})
	t.Run("no files", func(t *testing.T) {
		if _, err := Open(nil, nil); err == nil {
			t.Error("no error")
		}
	})
	t.Run("header only", func(t *testing.T) {
		for _, b := range [][]byte{pcapHdr, ngHdr} {
			got, st, probs := readBytes(t, b)
			if len(got) != 0 || st != (Stats{}) || len(probs) != 0 {
				t.Errorf("got %v %+v %v from an empty capture", got, st, probs)
			}
		}
	})
}

func TestStdin(t *testing.T) {
	b := pcapBytes(t, layers.LinkTypeEthernet, false, recs(ether(t, segA.ip4(t))))
	dir := t.TempDir()
	file := writeFile(t, dir, "f.pcap", b)
	r, err := Open([]string{file, "-"}, bytes.NewReader(gzipBytes(t, b)))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Files(); !slices.Equal(got, []string{file, "stdin"}) {
		t.Errorf("Files() = %v", got)
	}
	var (
		p   Packet
		got []string
	)
	for r.Next(&p) == nil {
		got = append(got, describe(&p))
	}
	checkLines(t, got, []string{line(0, 1, segA), line(1, 1, segA)})
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := r.Next(&p); err == nil || err == io.EOF {
		t.Errorf("Next after Close: %v", err)
	}

	if _, err := Open([]string{"-", "-"}, bytes.NewReader(b)); err == nil || err.Error() != "read stdin: named more than once" {
		t.Errorf("stdin twice: %v", err)
	}
	if _, err := Open([]string{"-"}, nil); err == nil || err.Error() != "read stdin: no standard input" {
		t.Errorf("no stdin: %v", err)
	}
	if _, err := Open([]string{"-"}, bytes.NewReader([]byte("GET / HTTP/1.1"))); err == nil ||
		err.Error() != "read stdin: not a pcap or pcapng file (starts with 47 45 54 20)" {
		t.Errorf("text on stdin: %v", err)
	}
}

// TestNextDoesNotAllocate holds the hot path to zero allocations per packet,
// for one file and for a merge.
func TestNextDoesNotAllocate(t *testing.T) {
	frames := [][]byte{ether(t, segA.ip4(t)), ether(t, seg6.ip6(t), layers.EthernetTypeDot1Q), arpFrame(t)}
	var rs []rec
	for i := 0; i < 1500; i++ {
		rs = append(rs, rec{ts: t0.Add(time.Duration(i) * time.Microsecond), data: frames[i%len(frames)]})
	}
	pcap := pcapBytes(t, layers.LinkTypeEthernet, false, rs)
	ng := ngBytes(t, []layers.LinkType{layers.LinkTypeEthernet}, rs)
	cases := map[string][]io.Reader{
		"pcap":   {bytes.NewReader(pcap)},
		"pcapng": {bytes.NewReader(ng)},
	}
	dir := t.TempDir()
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := Open([]string{"-"}, in[0])
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			checkNoAllocs(t, r)
		})
	}
	t.Run("merge", func(t *testing.T) {
		r, err := Open([]string{writeFile(t, dir, "a.pcap", pcap), writeFile(t, dir, "b.pcapng", ng)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		checkNoAllocs(t, r)
	})
}

func checkNoAllocs(t *testing.T, r *Reader) {
	t.Helper()
	var p Packet
	if err := r.Next(&p); err != nil { // opening allocations happen here
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(500, func() {
		if err := r.Next(&p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet, want 0", allocs)
	}
}

// TestPacketBytesValidUntilNext: in a merge, each packet's payload must stay
// intact until the next call, though other files are read in between.
func TestPacketBytesValidUntilNext(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for f := 0; f < 3; f++ {
		var rs []rec
		for i := 0; i < 50; i++ {
			s := segA
			s.seq = uint32(f*1000 + i)
			s.payload = fmt.Sprintf("file %d packet %d", f, i)
			rs = append(rs, rec{ts: t0.Add(time.Duration(i*3+f) * time.Millisecond), data: ether(t, s.ip4(t))})
		}
		paths = append(paths, writeFile(t, dir, fmt.Sprintf("%d.pcap", f), pcapBytes(t, layers.LinkTypeEthernet, false, rs)))
	}
	r, err := Open(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p Packet
	n := 0
	for r.Next(&p) == nil {
		want := fmt.Sprintf("file %d packet %d", p.File, p.Frame-1)
		if string(p.TCP.Payload) != want || p.TCP.Seq != uint32(p.File*1000+int(p.Frame)-1) {
			t.Fatalf("packet %d: payload %q seq %d, want %q", n, p.TCP.Payload, p.TCP.Seq, want)
		}
		n++
	}
	if n != 150 {
		t.Errorf("%d packets, want 150", n)
	}
}

// benchCapture is an in-memory pcap of n Ethernet/IPv4 TCP packets on a
// handful of connections, with Kafka-sized payloads.
func benchCapture(tb testing.TB, n int) []byte {
	b, _ := benchRecords(tb, n)
	return b
}

// benchRecords is benchCapture, with its records.
func benchRecords(tb testing.TB, n int) ([]byte, []rec) {
	payload := make([]byte, 300)
	for i := range payload {
		payload[i] = byte(i)
	}
	var rs []rec
	for i := 0; i < n; i++ {
		s := seg{src: "10.0.0.1", dst: "10.0.0.2", sport: uint16(40000 + i%8), dport: 9092, seq: uint32(i * 300), payload: string(payload)}
		if i%2 == 1 {
			s.src, s.dst, s.sport, s.dport = s.dst, s.src, s.dport, s.sport
		}
		rs = append(rs, rec{ts: t0.Add(time.Duration(i) * 10 * time.Microsecond), data: ether(tb, s.ip4(tb))})
	}
	return pcapBytes(tb, layers.LinkTypeEthernet, false, rs), rs
}

func BenchmarkReader(b *testing.B) {
	const n = 10000
	pcap := benchCapture(b, n)
	b.SetBytes(int64(len(pcap)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Open([]string{"-"}, bytes.NewReader(pcap))
		if err != nil {
			b.Fatal(err)
		}
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
