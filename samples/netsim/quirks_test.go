package netsim_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/kidscope/kidscope/samples/netsim"
)

// The options for real-world capture quirks, checked on the file's bytes:
// the readers that could check them would have to read the quirks first.

// rawRecord is one record of a little-endian classic pcap.
type rawRecord struct {
	orig int
	data []byte
}

// rawPcap splits a little-endian classic pcap into its header's snap
// length and link-type field, and its records.
func rawPcap(t *testing.T, b []byte) (snap, network uint32, rs []rawRecord) {
	t.Helper()
	le := binary.LittleEndian
	if len(b) < 24 || le.Uint32(b) != 0xa1b2c3d4 {
		t.Fatal("not a little-endian microsecond pcap")
	}
	for off := 24; off < len(b); {
		n := int(le.Uint32(b[off+8:]))
		rs = append(rs, rawRecord{int(le.Uint32(b[off+12:])), b[off+16 : off+16+n]})
		off += 16 + n
	}
	return le.Uint32(b[16:]), le.Uint32(b[20:]), rs
}

// ipv4OK reports whether the IPv4 header at off in frame has a valid
// checksum, and returns its total length.
func ipv4OK(frame []byte, off int) (int, bool) {
	ip := frame[off:]
	return int(binary.BigEndian.Uint16(ip[2:])), sum16(ip[:int(ip[0]&0x0f)*4]) == 0xffff
}

func TestIPv4Length(t *testing.T) {
	c := netsim.New(netsim.Options{})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{MSS: 60000})
	msg := payload(130000, 1)
	done := cn.Send(false, msg, netsim.IPv4Length(0, 0), netsim.IPv4Length(1, 65535))
	if done != c.Frames() {
		t.Errorf("Send returned %d, want the last frame %d", done, c.Frames())
	}
	_, _, rs := rawPcap(t, write(t, c))
	var totals []int
	var got []byte
	for _, r := range rs {
		total, ok := ipv4OK(r.data, 14)
		if !ok {
			t.Errorf("frame of %d bytes: bad IPv4 header checksum", len(r.data))
		}
		if hlen := int(r.data[14+20+12]>>4) * 4; len(r.data) > 14+20+hlen {
			totals = append(totals, total)
			got = append(got, r.data[14+20+hlen:]...)
		}
	}
	if len(totals) != 3 || totals[0] != 0 || totals[1] != 65535 || totals[2] != 20+32+10000 {
		t.Errorf("IPv4 total lengths of the data segments %v, want [0 65535 10052]", totals)
	}
	if !bytes.Equal(got, msg) {
		t.Error("the segments do not carry the message")
	}
}

func TestCaplenOverLen(t *testing.T) {
	c := netsim.New(netsim.Options{})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{})
	cn.Send(true, payload(3000, 1), netsim.CaplenOverLen(1, 4))
	_, _, rs := rawPcap(t, write(t, c))
	var short []int
	for i, r := range rs {
		if r.orig != len(r.data) {
			short = append(short, i+1, len(r.data)-r.orig)
		}
	}
	if len(short) != 2 || short[0] != 5 || short[1] != 4 {
		t.Errorf("records with an original length short of their data (frame, bytes short): %v, want [5 4]", short)
	}
	mustPanic(t, "CaplenOverLen in pcapng", func() {
		c := netsim.New(netsim.Options{Format: netsim.PcapNG})
		c.Open(cli4, srv4, netsim.ConnOptions{}).Send(true, payload(10, 0), netsim.CaplenOverLen(0, 1))
	})
	mustPanic(t, "IPv4Length on IPv6", func() {
		c.Open(cli6, srv6, netsim.ConnOptions{}).Send(true, payload(10, 0), netsim.IPv4Length(0, 0))
	})
}

func TestEthernetFCS(t *testing.T) {
	c := netsim.New(netsim.Options{Link: netsim.EthernetFCS, Pad: true, NoTimestamps: true})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{})
	cn.Send(true, payload(100, 1))
	cn.Close(true)
	_, network, rs := rawPcap(t, write(t, c))
	if network != 0x24000001 {
		t.Errorf("link-type field %#x, want Ethernet with 2 words of FCS, 0x24000001", network)
	}
	short := 0
	for i, r := range rs {
		n := len(r.data) - 4
		if binary.LittleEndian.Uint32(r.data[n:]) != crc32.ChecksumIEEE(r.data[:n]) {
			t.Errorf("frame %d: no FCS at its end", i+1)
		}
		if len(r.data) == 64 {
			short++
		}
		if total, ok := ipv4OK(r.data, 14); !ok || 14+total > n {
			t.Errorf("frame %d: IPv4 total length %d in a %d-byte frame", i+1, total, len(r.data))
		}
	}
	if short == 0 {
		t.Error("no padded 64-byte frame")
	}
	mustPanic(t, "EthernetFCS in pcapng", func() { netsim.New(netsim.Options{Format: netsim.PcapNG, Link: netsim.EthernetFCS}) })
}

func TestZeroSnaplen(t *testing.T) {
	c := netsim.New(netsim.Options{ZeroSnaplen: true})
	c.Open(cli4, srv4, netsim.ConnOptions{}).Send(true, payload(3000, 1))
	if snap, _, rs := rawPcap(t, write(t, c)); snap != 0 || len(rs) != c.Frames() {
		t.Errorf("snap length %d, %d records for %d frames", snap, len(rs), c.Frames())
	}
	ng := netsim.New(netsim.Options{Format: netsim.PcapNG, ZeroSnaplen: true})
	ng.Open(cli4, srv4, netsim.ConnOptions{})
	b := write(t, ng)
	idb := int(binary.LittleEndian.Uint32(b[4:])) // the first interface follows the section header
	if binary.LittleEndian.Uint32(b[idb:]) != 1 || binary.LittleEndian.Uint32(b[idb+12:]) != 0 {
		t.Errorf("pcapng interface snap length %d, want 0", binary.LittleEndian.Uint32(b[idb+12:]))
	}
}

func TestAddBlock(t *testing.T) {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG})
	cn := c.Open(cli4, srv4, netsim.ConnOptions{})
	c.AddBlock(netsim.Block{Type: 0x0000000a, Body: []byte("secrets")}) // Decryption Secrets: no frame
	c.AddBlock(netsim.Block{Type: 0x00000bad, Body: []byte("custom")})  // a frame to Wireshark
	c.AddBlock(netsim.Block{Type: 0x00000777})                          // unknown: no frame
	if c.Frames() != 4 {
		t.Errorf("Frames() = %d after the handshake and a custom block, want 4", c.Frames())
	}
	if done := cn.Send(true, payload(10, 1)); done != 5 {
		t.Errorf("Send returned frame %d, want 5", done)
	}
	b := write(t, c)
	// Walk the blocks: section, interface, 3 packets, the three blocks
	// in order (7 bytes padded to 8), the packet.
	var types []uint32
	for off := 0; off < len(b); off += int(binary.LittleEndian.Uint32(b[off+4:])) {
		types = append(types, binary.LittleEndian.Uint32(b[off:]))
	}
	want := []uint32{0x0a0d0d0a, 1, 6, 6, 6, 0x0000000a, 0x00000bad, 0x00000777, 6}
	if len(types) != len(want) {
		t.Fatalf("blocks %#x, want %#x", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("blocks %#x, want %#x", types, want)
		}
	}
	if pkts := readCapture(t, b); len(pkts) != 4 {
		t.Errorf("pcapgo reads %d packets, want 4", len(pkts))
	}
	mustPanic(t, "AddBlock in pcap", func() { netsim.New(netsim.Options{}).AddBlock(netsim.Block{Type: 0x00000bad}) })
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", name)
		}
	}()
	f()
}
