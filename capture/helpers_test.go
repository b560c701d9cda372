package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Test captures are built here, in memory: packets with gopacket's
// serializer where it can, link headers gopacket cannot write (SLL2, NULL,
// LOOP) and the big-endian pcap by hand.

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// seg describes one TCP segment to build.
type seg struct {
	src, dst     string
	sport, dport uint16
	seq          uint32
	payload      string
	syn          bool
}

func (s seg) tcp() *layers.TCP {
	return &layers.TCP{
		SrcPort: layers.TCPPort(s.sport), DstPort: layers.TCPPort(s.dport),
		Seq: s.seq, Ack: 1, SYN: s.syn, ACK: !s.syn, PSH: s.payload != "", Window: 65535,
	}
}

func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		t.Fatalf("serialize: %v", err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func (s seg) ip4Layer() *layers.IPv4 {
	return &layers.IPv4{
		Version: 4, TTL: 64, Id: 7, Protocol: layers.IPProtocolTCP,
		SrcIP: net.ParseIP(s.src).To4(), DstIP: net.ParseIP(s.dst).To4(),
	}
}

func (s seg) ip6Layer() *layers.IPv6 {
	return &layers.IPv6{
		Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
		SrcIP: net.ParseIP(s.src), DstIP: net.ParseIP(s.dst),
	}
}

// ip4 is an IPv4 packet carrying s.
func (s seg) ip4(t testing.TB) []byte {
	ip, tcp := s.ip4Layer(), s.tcp()
	tcp.SetNetworkLayerForChecksum(ip)
	return serialize(t, ip, tcp, gopacket.Payload(s.payload))
}

// ip6 is an IPv6 packet carrying s.
func (s seg) ip6(t testing.TB) []byte {
	ip, tcp := s.ip6Layer(), s.tcp()
	tcp.SetNetworkLayerForChecksum(ip)
	return serialize(t, ip, tcp, gopacket.Payload(s.payload))
}

// tcpBytes is the bare TCP segment, checksummed for an IPv6 pseudo-header.
func (s seg) tcpBytes(t testing.TB) []byte {
	tcp := s.tcp()
	tcp.SetNetworkLayerForChecksum(s.ip6Layer())
	return serialize(t, tcp, gopacket.Payload(s.payload))
}

// ip6Ext is an IPv6 packet with the given extension headers (raw bytes,
// each with its next-header byte still to fill in) between the header and
// TCP. kinds are their protocol numbers, in order.
func (s seg) ip6Ext(t testing.TB, kinds []layers.IPProtocol, exts [][]byte) []byte {
	ip := s.ip6Layer()
	ip.NextHeader = kinds[0]
	var chain []byte
	for i, e := range exts {
		e = append([]byte(nil), e...)
		if i+1 < len(kinds) {
			e[0] = byte(kinds[i+1])
		} else {
			e[0] = byte(layers.IPProtocolTCP)
		}
		chain = append(chain, e...)
	}
	return serialize(t, ip, gopacket.Payload(append(chain, s.tcpBytes(t)...)))
}

// Extension headers: hop-by-hop and destination options with one PadN
// option, a routing header with one address, and fragment headers.
var (
	extHopByHop = []byte{0, 0, 1, 4, 0, 0, 0, 0}
	extDestOpts = []byte{0, 0, 1, 4, 0, 0, 0, 0}
	extRouting  = append([]byte{0, 2, 0, 0, 0, 0, 0, 0}, net.ParseIP("2001:db8::99")...)
	// offset 0, no more fragments: an atomic fragment (RFC 6946)
	extFragFirst = []byte{0, 0, 0x00, 0x00, 0, 0, 0, 42}
	// offset 185 (1480 bytes), a later fragment
	extFragLater = []byte{0, 0, 0x05, 0xc8, 0, 0, 0, 42}
)

// Link-layer wrappers.

func ether(t testing.TB, ip []byte, tags ...layers.EthernetType) []byte {
	etype := layers.EthernetTypeIPv4
	if ip[0]>>4 == 6 {
		etype = layers.EthernetTypeIPv6
	}
	eth := &layers.Ethernet{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		EthernetType: etype,
	}
	ls := []gopacket.SerializableLayer{eth}
	// tags are the outer tag types, outermost first; each Dot1Q carries the
	// type of what follows it.
	if len(tags) > 0 {
		eth.EthernetType = tags[0]
		for i := range tags {
			next := etype
			if i+1 < len(tags) {
				next = tags[i+1]
			}
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: uint16(100 + i), Type: next})
		}
	}
	ls = append(ls, gopacket.Payload(ip))
	return serialize(t, ls...)
}

func sll(ip []byte) []byte {
	h := make([]byte, 16)
	binary.BigEndian.PutUint16(h[0:], 0) // to us
	binary.BigEndian.PutUint16(h[2:], 1) // ARPHRD_ETHER
	binary.BigEndian.PutUint16(h[4:], 6)
	copy(h[6:], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(h[14:], etherTypeOf(ip))
	return append(h, ip...)
}

func sll2(ip []byte) []byte {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:], etherTypeOf(ip))
	binary.BigEndian.PutUint32(h[4:], 3) // interface index
	binary.BigEndian.PutUint16(h[8:], 1) // ARPHRD_ETHER
	h[10] = 4                            // outgoing
	h[11] = 6
	copy(h[12:], []byte{2, 0, 0, 0, 0, 1})
	return append(h, ip...)
}

func etherTypeOf(ip []byte) uint16 {
	if ip[0]>>4 == 6 {
		return 0x86dd
	}
	return 0x0800
}

// null is a BSD loopback header with the given family in the given order.
func null(order binary.ByteOrder, family uint32, ip []byte) []byte {
	h := make([]byte, 4)
	order.PutUint32(h, family)
	return append(h, ip...)
}

// Capture files.

// rec is one record of a capture file.
type rec struct {
	ts    time.Time
	data  []byte
	wire  int // original length; 0 means len(data)
	iface int // pcapng interface
}

func recs(frames ...[]byte) []rec {
	out := make([]rec, len(frames))
	for i, f := range frames {
		out[i] = rec{ts: t0.Add(time.Duration(i) * time.Millisecond), data: f}
	}
	return out
}

func (r rec) ci() gopacket.CaptureInfo {
	wire := r.wire
	if wire == 0 {
		wire = len(r.data)
	}
	return gopacket.CaptureInfo{Timestamp: r.ts, CaptureLength: len(r.data), Length: wire, InterfaceIndex: r.iface}
}

func pcapBytes(t testing.TB, link layers.LinkType, nanos bool, rs []rec) []byte {
	t.Helper()
	var b bytes.Buffer
	w := pcapgo.NewWriter(&b)
	if nanos {
		w = pcapgo.NewWriterNanos(&b)
	}
	if err := w.WriteFileHeader(65535, link); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if err := w.WritePacket(r.ci(), r.data); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// pcapBigEndian writes a classic pcap in big-endian byte order, as a SPARC
// or PowerPC host would; pcapgo only writes little-endian.
func pcapBigEndian(link layers.LinkType, nanos bool, rs []rec) []byte {
	be := binary.BigEndian
	h := make([]byte, 24)
	be.PutUint32(h[0:], 0xa1b2c3d4)
	if nanos {
		be.PutUint32(h[0:], 0xa1b23c4d)
	}
	be.PutUint16(h[4:], 2)
	be.PutUint16(h[6:], 4)
	be.PutUint32(h[16:], 65535)
	be.PutUint32(h[20:], uint32(link))
	for _, r := range rs {
		ci := r.ci()
		rh := make([]byte, 16)
		frac := ci.Timestamp.Nanosecond() / 1000
		if nanos {
			frac = ci.Timestamp.Nanosecond()
		}
		be.PutUint32(rh[0:], uint32(ci.Timestamp.Unix()))
		be.PutUint32(rh[4:], uint32(frac))
		be.PutUint32(rh[8:], uint32(ci.CaptureLength))
		be.PutUint32(rh[12:], uint32(ci.Length))
		h = append(h, rh...)
		h = append(h, r.data...)
	}
	return h
}

// ngBytes writes a pcapng with one interface per link type.
func ngBytes(t testing.TB, links []layers.LinkType, rs []rec) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&b, pcapgo.NgInterface{LinkType: links[0], SnapLength: 65535}, pcapgo.NgWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links[1:] {
		if _, err := w.AddInterface(pcapgo.NgInterface{LinkType: l, SnapLength: 65535}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rs {
		if err := w.WritePacket(r.ci(), r.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Reading.

// describe renders a packet as one comparable line.
func describe(p *Packet) string {
	src, dst := p.Network.Endpoints()
	s := fmt.Sprintf("%d/%d %s:%d->%s:%d seq=%d %q", p.File, p.Frame, src, p.TCP.SrcPort, dst, p.TCP.DstPort, p.TCP.Seq, p.TCP.Payload)
	if p.Cut {
		s += " cut"
	}
	return s
}

// readAll opens paths (with stdin) and returns every packet described,
// the stats and the problems.
func readAll(t testing.TB, paths []string, stdin io.Reader) ([]string, Stats, []error) {
	t.Helper()
	r, err := Open(paths, stdin)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	var (
		out []string
		p   Packet
	)
	for {
		err := r.Next(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, describe(&p))
	}
	return out, r.Stats(), r.Problems()
}

// readBytes reads one in-memory capture through stdin.
func readBytes(t testing.TB, b []byte) ([]string, Stats, []error) {
	t.Helper()
	return readAll(t, []string{"-"}, bytes.NewReader(b))
}

func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d packets, want %d", len(got), len(want))
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("packet %d:\n got  %s\n want %s", i, g, w)
		}
	}
}

// Quirk captures (quirks_test.go, pcapng_test.go): records that state
// any original length, and pcapng written by hand.

// qrec is one record of a quirk capture: the bytes it holds and the
// original length it states.
type qrec struct {
	data  []byte
	orig  int
	iface int
}

func whole(frames ...[]byte) []qrec {
	out := make([]qrec, len(frames))
	for i, f := range frames {
		out[i] = qrec{data: f, orig: len(f)}
	}
	return out
}

// qtime is the capture time of record i.
func qtime(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }

// pcapRaw writes a classic little-endian microsecond pcap with the given
// snap length and link-type field (its FCS bits included).
func pcapRaw(snap, network uint32, rs []qrec) []byte {
	le := binary.LittleEndian
	b := make([]byte, 24)
	le.PutUint32(b[0:], 0xa1b2c3d4)
	le.PutUint16(b[4:], 2)
	le.PutUint16(b[6:], 4)
	le.PutUint32(b[16:], snap)
	le.PutUint32(b[20:], network)
	for i, r := range rs {
		h := make([]byte, 16)
		ts := qtime(i)
		le.PutUint32(h[0:], uint32(ts.Unix()))
		le.PutUint32(h[4:], uint32(ts.Nanosecond()/1000))
		le.PutUint32(h[8:], uint32(len(r.data)))
		le.PutUint32(h[12:], uint32(r.orig))
		b = append(append(b, h...), r.data...)
	}
	return b
}

// ngWriter writes pcapng by hand: pcapgo writes neither if_fcslen nor the
// blocks the quirks are about, nor big-endian sections.
type ngWriter struct {
	b     bytes.Buffer
	order byteOrder
	n     int // packets written, for their times
}

type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func (w *ngWriter) block(typ uint32, body []byte) {
	body = append(body, make([]byte, (4-len(body)%4)%4)...)
	n := uint32(12 + len(body))
	w.b.Write(w.order.AppendUint32(w.order.AppendUint32(nil, typ), n))
	w.b.Write(body)
	w.b.Write(w.order.AppendUint32(nil, n))
}

// shb starts a section in the given byte order.
func (w *ngWriter) shb(order byteOrder) {
	w.order = order
	body := order.AppendUint32(nil, ngByteOrderMagic)
	body = order.AppendUint16(order.AppendUint16(body, 1), 0)
	body = order.AppendUint64(body, ^uint64(0))
	w.block(ngSHB, body)
}

// option is one option's bytes, padded.
func (w *ngWriter) option(code uint16, v []byte) []byte {
	b := w.order.AppendUint16(w.order.AppendUint16(nil, code), uint16(len(v)))
	return append(append(b, v...), make([]byte, (4-len(v)%4)%4)...)
}

// idb describes an interface with nanosecond timestamps and the given
// options.
func (w *ngWriter) idb(link layers.LinkType, snap uint32, opts ...[]byte) {
	body := w.order.AppendUint16(w.order.AppendUint16(nil, uint16(link)), 0)
	body = w.order.AppendUint32(body, snap)
	body = append(body, w.option(optTSResol, []byte{9})...)
	for _, o := range opts {
		body = append(body, o...)
	}
	body = append(body, 0, 0, 0, 0) // end of options
	w.block(ngIDB, body)
}

func (w *ngWriter) epb(r qrec) {
	ts := uint64(qtime(w.n).UnixNano())
	w.n++
	body := w.order.AppendUint32(nil, uint32(r.iface))
	body = w.order.AppendUint32(w.order.AppendUint32(body, uint32(ts>>32)), uint32(ts))
	body = w.order.AppendUint32(w.order.AppendUint32(body, uint32(len(r.data))), uint32(r.orig))
	w.block(ngEPB, append(body, r.data...))
}

// setIPv4Total puts total into the IPv4 header at off in frame (a copy),
// with the header checksum made again.
func setIPv4Total(frame []byte, off, total int) []byte {
	f := bytes.Clone(frame)
	ip := f[off:]
	binary.BigEndian.PutUint16(ip[2:], uint16(total))
	binary.BigEndian.PutUint16(ip[10:], 0)
	ihl := int(ip[0]&0x0f) * 4
	var sum uint32
	for i := 0; i < ihl; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	return f
}

// setIPv6Length puts plen into the payload length of the IPv6 header at
// off in frame (a copy).
func setIPv6Length(frame []byte, off, plen int) []byte {
	f := bytes.Clone(frame)
	binary.BigEndian.PutUint16(f[off+4:], uint16(plen))
	return f
}

// withFCS is frame with its Ethernet FCS (CRC-32, least significant byte
// first, as it is sent) after it.
func withFCS(frame []byte) []byte {
	return binary.LittleEndian.AppendUint32(bytes.Clone(frame), crc32.ChecksumIEEE(frame))
}
