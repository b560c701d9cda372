package capture

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// FuzzReader feeds arbitrary bytes as a capture file through Open and Next:
// nothing may panic, Next may only end with io.EOF, and what it returns must
// be consistent with the counters.
func FuzzReader(f *testing.F) {
	frames := [][]byte{
		ether(f, segA.ip4(f), layers.EthernetTypeQinQ, layers.EthernetTypeDot1Q),
		ether(f, seg6.ip6Ext(f, []layers.IPProtocol{layers.IPProtocolIPv6HopByHop, layers.IPProtocolIPv6Fragment}, [][]byte{extHopByHop, extFragFirst})),
		arpFrame(f),
	}
	pcap := pcapBytes(f, layers.LinkTypeEthernet, false, recs(frames...))
	ng := ngBytes(f, []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL2, layers.LinkTypeNull}, []rec{
		{ts: t0, data: frames[0]},
		{ts: t0.Add(1), data: sll2(segB.ip4(f)), iface: 1},
		{ts: t0.Add(2), data: null(binary.BigEndian, 30, seg6.ip6(f)), iface: 2},
	})
	f.Add(pcap)
	f.Add(ng)
	f.Add(dsbBytes(SecretsTLSKeyLog, []byte("CLIENT_RANDOM 00 11\n")))
	f.Add(gzipBytes(f, pcap))
	f.Add(pcapBigEndian(layers.LinkTypeRaw, true, recs(segA.ip4(f), ip4Options(f, segB))))
	f.Add(pcapBytes(f, layers.LinkTypeLinuxSLL, false, []rec{{ts: t0, data: sll(segA.ip4(f))[:50], wire: 80}}))
	f.Add(pcap[:len(pcap)-7])
	f.Add([]byte("Hello, world"))
	// The hostile lengths (bounds_test.go): a packet block declaring
	// 4 GiB; one over the packet limit, skipped by its length, and one
	// whose two lengths disagree; a classic pcap whose snap and captured
	// lengths are 0xfffffff0; a packet on an interface past the limit
	// (maxInterfaces is too many for a seed: one interface more than
	// described stands for it); a flood of name resolution blocks.
	le := binary.LittleEndian
	hostile := func(build func(w *ngWriter)) []byte {
		w := &ngWriter{}
		w.shb(le)
		w.idb(layers.LinkTypeEthernet, 0)
		build(w)
		return w.b.Bytes()
	}
	f.Add(hostile(func(w *ngWriter) { w.b.Write(epbHeader(0xfffffffc, 0xfffffff0)); w.b.Write(zeros(64)) }))
	over := append(epbHeader(maxRecordLength+36, maxRecordLength+4), zeros(maxRecordLength+4)...)
	over = le.AppendUint32(over, maxRecordLength+36)
	f.Add(gzipBytes(f, hostile(func(w *ngWriter) { w.b.Write(over); w.epb(qrec{data: frames[0], orig: len(frames[0])}) })))
	f.Add(hostile(func(w *ngWriter) { w.b.Write(over[:len(over)-4]); w.b.Write(zeros(4)) }))
	f.Add(append(pcapRaw(0xfffffff0, 1, nil), append(epbHeader(0xfffffff0, 0xfffffff0)[12:], zeros(64)...)...))
	f.Add(hostile(func(w *ngWriter) {
		w.idb(layers.LinkTypeEthernet, 0)
		w.epb(qrec{data: frames[0], orig: len(frames[0]), iface: 1})
		w.epb(qrec{data: frames[0], orig: len(frames[0]), iface: 2})
	}))
	f.Add(hostile(func(w *ngWriter) {
		for range 100 {
			w.block(4, append(le.AppendUint16(le.AppendUint16(nil, 1), 8), zeros(8)...))
		}
		w.epb(qrec{data: frames[0], orig: len(frames[0])})
	}))
	// The real-world quirks (quirks_test.go).
	quirks, _ := filepath.Glob(filepath.Join("testdata", "quirks", "*"))
	for _, q := range quirks {
		b, err := os.ReadFile(q)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	path := filepath.Join(f.TempDir(), "in")

	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open([]string{"-"}, bytes.NewReader(data))
		if err != nil {
			return
		}
		defer r.Close()
		// Decryption secrets are read too (half the inputs), and what is
		// handed over fits in the input.
		if len(data)%2 == 0 {
			r.OnSecrets(func(_ int, _ uint32, secrets []byte) {
				if len(secrets) > len(data) {
					t.Fatalf("%d bytes of secrets from a %d-byte input", len(secrets), len(data))
				}
			})
		}
		var (
			p        Packet
			n, frame int64
		)
		for {
			err := r.Next(&p)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			n++
			if p.Frame <= frame {
				t.Fatalf("frame %d after frame %d", p.Frame, frame)
			}
			frame = p.Frame
			if p.TCP == nil || int(p.TCP.DataOffset)*4 < 20 {
				t.Fatalf("frame %d: bad TCP layer %+v", p.Frame, p.TCP)
			}
		}
		st := r.Stats()
		if st.TCP != n || st.Packets != st.TCP+st.NotTCP+st.Malformed+st.OversizedFrames+st.ExtraInterfaceFrames || st.Cut > st.TCP || st.Padded > st.TCP {
			t.Fatalf("inconsistent stats %+v after %d packets", st, n)
		}
		stops, quirks := 0, 0
		for _, p := range r.Problems() {
			if Recovered(p) {
				quirks++
			} else {
				stops++
			}
		}
		// The quirks: longer records, oversized frames, interfaces past
		// the limit.
		if stops > 1 || quirks > 3 {
			t.Fatalf("problems %v: one file stops at most once, and has each quirk reported at most once", r.Problems())
		}
		// The same bytes as a file, which is read through a mapping when
		// it is a classic pcap, must list the same.
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fromFile, err := Open([]string{path}, nil)
		if err != nil {
			t.Fatalf("the file fails where stdin did not: %v", err)
		}
		again, _ := Open([]string{"-"}, bytes.NewReader(data))
		if a, b := listPackets(t, again), listPackets(t, fromFile); a != b {
			t.Fatalf("stdin and file differ:\n%s\n%s", a, b)
		}
	})
}

// FuzzTCPDecoder compares TCPDecoder with gopacket's decoder, on any bytes:
// both fail on the same segments, and otherwise agree on every field but
// the options.
func FuzzTCPDecoder(f *testing.F) {
	f.Add(segA.ip4(f)[20:])
	f.Add(seg6.ip6(f)[40:])
	f.Add([]byte("01234567890123456789"))
	f.Fuzz(func(t *testing.T, seg []byte) {
		var want, got layers.TCP
		var d TCPDecoder
		errWant := want.DecodeFromBytes(seg, gopacket.NilDecodeFeedback)
		errGot := d.Decode(&got, seg)
		if (errWant == nil) != (errGot == nil) {
			t.Fatalf("gopacket: %v, TCPDecoder: %v", errWant, errGot)
		}
		if errGot != nil {
			return
		}
		if got.TransportFlow() != want.TransportFlow() || got.Seq != want.Seq || got.Ack != want.Ack ||
			got.DataOffset != want.DataOffset || got.Window != want.Window || got.Checksum != want.Checksum || got.Urgent != want.Urgent ||
			got.FIN != want.FIN || got.SYN != want.SYN || got.RST != want.RST || got.PSH != want.PSH || got.ACK != want.ACK ||
			got.URG != want.URG || got.ECE != want.ECE || got.CWR != want.CWR || got.NS != want.NS ||
			!bytes.Equal(got.Contents, want.Contents) || !bytes.Equal(got.Payload, want.Payload) {
			t.Fatalf("TCPDecoder gave\n%+v\ngopacket\n%+v", got, want)
		}
	})
}
