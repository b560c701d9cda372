package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// ngRecord is one packet as both pcapng readers give it.
type ngRecord struct {
	ts        time.Time
	caplen    int
	length    int
	iface     int
	link      layers.LinkType
	data      string
	exactTime bool // the interface's resolution is decimal, which pcapgo converts exactly
}

func (r ngRecord) String() string {
	ts := "~"
	if r.exactTime {
		ts = r.ts.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s %d/%d iface %d link %d crc %08x", ts, r.caplen, r.length, r.iface, r.link, crc32.ChecksumIEEE([]byte(r.data)))
}

// ngEnd classes how a reader stopped: a clean end, a cut, or anything else.
func ngEnd(err error) string {
	switch err {
	case io.EOF:
		return "end"
	case io.ErrUnexpectedEOF:
		return "cut"
	}
	return "error"
}

// headerEnd classes a header's error: Open words a clean end and a cut
// there the same ("truncated pcapng file header").
func headerEnd(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "header truncated"
	}
	return "header error"
}

// ourNgRecords lists the packets ngRecords reads from b (not the frames
// that hold none) and how it stopped.
func ourNgRecords(b []byte) ([]string, string) {
	r, err := newNgRecords(bufio.NewReaderSize(bytes.NewReader(b), 4096))
	if err != nil {
		return nil, headerEnd(err)
	}
	var out []string
	for {
		data, ci, err := r.ZeroCopyReadPacketData()
		if err != nil {
			return out, ngEnd(err)
		}
		if data == nil && r.link == linkUnknown {
			continue
		}
		u := r.ifaces[ci.InterfaceIndex].units
		for u%10 == 0 {
			u /= 10
		}
		exact := u == 1 // a decimal resolution
		out = append(out, ngRecord{ci.Timestamp, ci.CaptureLength, ci.Length, ci.InterfaceIndex, r.link, string(data), exact}.String())
	}
}

// pcapgoNgRecords is ourNgRecords with pcapgo's reader.
func pcapgoNgRecords(b []byte) ([]string, string) {
	r, err := pcapgo.NewNgReader(bytes.NewReader(b), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		return nil, headerEnd(err)
	}
	var out []string
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			return out, ngEnd(err)
		}
		intf, _ := r.Interface(ci.InterfaceIndex)
		link, _ := ci.AncillaryData[0].(layers.LinkType)
		out = append(out, ngRecord{ci.Timestamp, ci.CaptureLength, ci.Length, ci.InterfaceIndex, link, string(data), !intf.TimestampResolution.Binary()}.String())
	}
}

// TestNgRecordsMatchPcapgo reads pcapng files with ngRecords and with
// pcapgo's reader: whole and cut at every offset, they must give the same
// packets and end the same way. (The frames ngRecords gives that hold no
// packet, such as custom blocks, pcapgo skips; a file cut inside a block
// ends in a cut for both.) The read buffer is small, so that large
// records take the copying path.
func TestNgRecordsMatchPcapgo(t *testing.T) {
	frames := [][]byte{
		ether(t, segA.ip4(t)), sll2(seg6.ip6(t)), arpFrame(t), ether(t, segB.ip4(t)),
		ether(t, seg{src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: strings.Repeat("x", 6000)}.ip4(t)),
	}
	rs := recs(frames...)
	rs[1].iface = 1
	rs[3].wire = 3000 // snap-cut
	inputs := map[string][]byte{
		"two interfaces": ngBytes(t, []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL2}, rs),
	}
	for _, name := range []string{"caplen-gt-len.pcapng", "fcs.pcapng", "blocks.pcapng"} {
		b, err := os.ReadFile(quirkPath(name))
		if err != nil {
			t.Fatal(err)
		}
		inputs[name] = b
	}
	// Binary and odd decimal timestamp resolutions, a timestamp offset.
	w := &ngWriter{}
	w.shb(binary.LittleEndian)
	w.idb(layers.LinkTypeRaw, 0, w.option(optTSResol, []byte{0x80 | 20}), w.option(optTSOffset, binary.LittleEndian.AppendUint64(nil, 3600)))
	w.idb(layers.LinkTypeRaw, 0, w.option(optTSResol, []byte{3}))
	for i := range 4 {
		w.epb(qrec{data: segA.ip4(t), orig: 100, iface: i % 2})
	}
	inputs["resolutions"] = w.b.Bytes()

	checked := 0
	for name, whole := range inputs {
		for cut := len(whole); cut >= 0; cut-- {
			in := whole[:cut]
			ours, oursEnd := ourNgRecords(in)
			theirs, theirEnd := pcapgoNgRecords(in)
			// pcapgo words some cuts (inside a name resolution block) as
			// other errors.
			sameEnd := oursEnd == theirEnd || cut < len(whole) && oursEnd == "cut" && theirEnd == "error"
			if strings.Join(ours, "\n") != strings.Join(theirs, "\n") || !sameEnd {
				t.Fatalf("%s cut at %d of %d: ngRecords (%s)\n%s\npcapgo (%s)\n%s", name, cut, len(whole),
					oursEnd, strings.Join(ours, "\n"), theirEnd, strings.Join(theirs, "\n"))
			}
			checked += len(ours)
		}
	}
	if checked == 0 {
		t.Fatal("no packets compared")
	}
}

// TestNgRecordsErrors: pcapng that breaks the format is a problem naming
// the frame, in words that say what is wrong, never a panic or a read
// past the block; what Wireshark reads past, we read too.
func TestNgRecordsErrors(t *testing.T) {
	le := binary.LittleEndian
	pkt := qrec{data: ether(t, segA.ip4(t))}
	pkt.orig = len(pkt.data)
	start := func() *ngWriter {
		w := &ngWriter{}
		w.shb(le)
		w.idb(layers.LinkTypeEthernet, 65535)
		w.epb(pkt)
		return w
	}
	cases := []struct {
		name    string
		build   func(w *ngWriter)
		packets int
		problem string // after "read stdin: frame 2: "; "" none
	}{
		{"packets", func(w *ngWriter) { w.epb(pkt) }, 2, ""},
		{"interface not described", func(w *ngWriter) { pkt := pkt; pkt.iface = 1; w.epb(pkt) }, 1,
			"pcapng packet block on interface 1, which the section does not describe (1 interfaces)"},
		{"total length not a multiple of 4", func(w *ngWriter) { w.b.Write(rawHeader(6, 33)) }, 1,
			"pcapng block of type 0x6: bad total length 33"},
		{"total length too short", func(w *ngWriter) { w.b.Write(rawHeader(0xbad, 8)) }, 1,
			"pcapng block of type 0xbad: bad total length 8"},
		{"lengths differ", func(w *ngWriter) {
			w.block(0x123, nil)
			w.epb(pkt)
			b := w.b.Bytes()
			le.PutUint32(b[len(b)-4:], 12)
		}, 1, "pcapng block of type 0x6: total length 100 at its start, 12 at its end"},
		{"captured length past the block", func(w *ngWriter) {
			body := le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 0), 0), 0)
			body = le.AppendUint32(le.AppendUint32(body, 200), 200)
			w.block(ngEPB, append(body, pkt.data...))
		}, 1, "pcapng packet block: captured length 200 does not fit in its 100-byte block"},
		{"version 1.2", func(w *ngWriter) {
			w.shb(le)
			b := w.b.Bytes()
			le.PutUint16(b[len(b)-28+14:], 2)
			w.idb(layers.LinkTypeEthernet, 0)
			w.epb(pkt)
		}, 2, ""},
		{"version 2.0", func(w *ngWriter) {
			w.shb(le)
			b := w.b.Bytes()
			le.PutUint16(b[len(b)-28+12:], 2)
		}, 1, "pcapng section header: unsupported version 2.0"},
		{"new section forgets interfaces", func(w *ngWriter) { w.shb(binary.BigEndian); w.epb(pkt) }, 1,
			"pcapng packet block on interface 0, which the section does not describe (0 interfaces)"},
		{"simple packet block", func(w *ngWriter) {
			w.block(ngSPB, append(le.AppendUint32(nil, uint32(len(pkt.data))), pkt.data...))
		}, 2, ""},
		{"option past the block", func(w *ngWriter) {
			w.block(ngIDB, append(le.AppendUint32(le.AppendUint32(nil, 1), 0), 9, 0, 8, 0, 6, 0, 0, 0))
		}, 1, "pcapng interface 1: option 9 runs past the end of its block"},
		{"resolution too fine", func(w *ngWriter) { w.idb(layers.LinkTypeEthernet, 0, w.option(optTSResol, []byte{20})) }, 1,
			"pcapng interface 1: timestamp resolution 10^-20 is too fine"},
		{"packet block too short", func(w *ngWriter) { w.block(ngEPB, make([]byte, 8)) }, 1,
			"pcapng packet block too short (20 bytes)"},
		{"block over the limit", func(w *ngWriter) { w.b.Write(rawHeader(6, maxBlockLength+4)) }, 1,
			"pcapng block of type 0x6: total length 16777220 is over the 16777216-byte limit"},
		{"huge unknown block: not believed", func(w *ngWriter) { w.b.Write(rawHeader(0x77, 1<<30)) }, 1,
			"pcapng block of type 0x77: total length 1073741824 is over the 16777216-byte limit"},
		{"unknown block at the limit: skipped, then the file ends", func(w *ngWriter) { w.b.Write(rawHeader(0x77, maxBlockLength)) }, 1,
			"truncated file: block cut short"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := start()
			c.build(w)
			got, st, probs := readBytes(t, w.b.Bytes())
			if len(got) != c.packets || st.Packets != int64(c.packets) {
				t.Errorf("%d packets (%+v), want %d", len(got), st, c.packets)
			}
			var want []string
			if c.problem != "" {
				want = []string{fmt.Sprintf("read stdin: frame %d: %s", c.packets+1, c.problem)}
			}
			var have []string
			for _, p := range probs {
				have = append(have, p.Error())
			}
			if strings.Join(have, "\n") != strings.Join(want, "\n") {
				t.Errorf("problems %q\nwant     %q", have, want)
			}
		})
	}
}

// rawHeader is the start of a block, its type and total length, with the
// first 4 bytes of a body: what a reader sees before it trusts the length.
func rawHeader(typ, total uint32) []byte {
	le := binary.LittleEndian
	return le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, typ), total), 0)
}

// TestNgTimestamps converts timestamps of every resolution kind exactly.
func TestNgTimestamps(t *testing.T) {
	cases := []struct {
		resol  byte
		offset int64
		ts     uint64
		want   time.Time
	}{
		{6, 0, 1_700_000_000_123_456, time.Unix(1_700_000_000, 123_456_000)},
		{9, 0, 1_700_000_000_123_456_789, time.Unix(1_700_000_000, 123_456_789)},
		{3, -10, 1_700_000_000_123, time.Unix(1_699_999_990, 123_000_000)},
		{12, 0, 1_700_000_000_123_456_789, time.Unix(1_700_000, 123_456)},
		{0x80 | 20, 0, 3<<20 + 1<<19, time.Unix(3, 500_000_000)},
		{0x80 | 30, 0, 1<<30 + 1, time.Unix(1, 0)}, // 0.93 ns, truncated
		{0, 5, 7, time.Unix(12, 0)},
	}
	for _, c := range cases {
		w := &ngWriter{}
		w.shb(binary.LittleEndian)
		body := w.order.AppendUint16(w.order.AppendUint16(nil, uint16(layers.LinkTypeRaw)), 0)
		body = w.order.AppendUint32(body, 0)
		body = append(body, w.option(optTSResol, []byte{c.resol})...)
		body = append(body, w.option(optTSOffset, binary.LittleEndian.AppendUint64(nil, uint64(c.offset)))...)
		w.block(ngIDB, append(body, 0, 0, 0, 0))
		epb := binary.LittleEndian.AppendUint32(nil, 0)
		epb = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(epb, uint32(c.ts>>32)), uint32(c.ts))
		epb = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(epb, 0), 0)
		w.block(ngEPB, epb)
		r, err := newNgRecords(bufio.NewReader(bytes.NewReader(w.b.Bytes())))
		if err != nil {
			t.Fatal(err)
		}
		_, ci, err := r.ZeroCopyReadPacketData()
		if err != nil {
			t.Fatal(err)
		}
		if !ci.Timestamp.Equal(c.want) {
			t.Errorf("resolution %#x offset %d ts %d: %v, want %v", c.resol, c.offset, c.ts, ci.Timestamp, c.want.UTC())
		}
	}
}

// FuzzNgRecords compares ngRecords with pcapgo's reader on any bytes after
// a section header: where both read a packet it is the same packet.
func FuzzNgRecords(f *testing.F) {
	for _, name := range []string{"caplen-gt-len.pcapng", "fcs.pcapng", "blocks.pcapng"} {
		b, err := os.ReadFile(filepath.Join("testdata", "quirks", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(ngBytes(f, []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL2}, []rec{
		{ts: t0, data: ether(f, segA.ip4(f))}, {ts: t0.Add(1), data: sll2(segB.ip4(f)), iface: 1},
	}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ours, _ := ourNgRecords(b)
		theirs, _ := pcapgoNgRecords(b)
		for i := range min(len(ours), len(theirs)) {
			if ours[i] != theirs[i] {
				t.Fatalf("packet %d: ngRecords %s, pcapgo %s", i, ours[i], theirs[i])
			}
		}
	})
}
