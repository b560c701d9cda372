package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/kidscope/kidscope/internal/wireshark"
)

var update = flag.Bool("update", false, "rewrite the quirk captures under testdata/quirks")

// The quirk captures under testdata/quirks are real-world oddities of
// capture files, each read here the way Wireshark reads it. They are made
// by quirkFiles (go test ./capture -run TestQuirkFiles -update writes them
// again) and committed, so that tshark can be run on the same bytes.

// Segments of the quirk captures: a broker host's view of one connection.
var (
	qReq  = seg{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 9092, seq: 1000, payload: "a Kafka request"}
	qAck  = seg{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 9092, seq: 1015, payload: "hi"}
	qBig  = seg{src: "10.0.0.2", dst: "10.0.0.1", sport: 9092, dport: 40000, seq: 5000, payload: strings.Repeat("a TSO-sized Kafka response ", 2370)} // 63990 bytes
	qMid  = seg{src: "10.0.0.2", dst: "10.0.0.1", sport: 9092, dport: 40000, seq: 68990, payload: strings.Repeat("more ", 290)}
	qV6   = seg{src: "2001:db8::1", dst: "2001:db8::2", sport: 40001, dport: 9092, seq: 300, payload: "a Kafka request over IPv6"}
	qV6Rx = seg{src: "2001:db8::2", dst: "2001:db8::1", sport: 9092, dport: 40001, seq: 900, payload: strings.Repeat("IPv6 GRO ", 200)}
)

// quirk is one committed quirk capture and what reading it must give.
type quirk struct {
	name  string
	build func(t testing.TB) []byte
	// want lists the TCP segments read (qline), stats the counters and
	// problems the input problems ("F" for the file's name).
	want     []string
	stats    Stats
	problems []string
}

// qline is how a quirk test names a segment: frame, flow, sequence number
// and payload length and checksum (some payloads are 64 KiB).
func qline(frame int64, s seg) string {
	return qlineN(frame, s, len(s.payload))
}

// qlineN is qline for the first n bytes of s's payload.
func qlineN(frame int64, s seg, n int) string {
	return fmt.Sprintf("%d %s:%d->%s:%d seq=%d len=%d crc=%08x", frame, s.src, s.sport, s.dst, s.dport, s.seq, n, crc32.ChecksumIEEE([]byte(s.payload[:n])))
}

func qdescribe(p *Packet) string {
	src, dst := p.Network.Endpoints()
	s := fmt.Sprintf("%d %s:%d->%s:%d seq=%d len=%d crc=%08x", p.Frame, src, p.TCP.SrcPort, dst, p.TCP.DstPort, p.TCP.Seq, len(p.TCP.Payload), crc32.ChecksumIEEE(p.TCP.Payload))
	if p.Cut {
		s += " cut"
	}
	return s
}

// The secret bytes of the Decryption Secrets Blocks: no packet, problem or
// buffer of the reader may hold them.
const dsbSecret = "CLIENT_RANDOM 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff deadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeefdeadbeef\n"

func quirkFiles() []quirk {
	const link = uint32(layers.LinkTypeEthernet)
	return []quirk{
		{
			// Records that say they captured more than the frame had:
			// one stating 4 bytes less, one 0 (some converters write
			// that), between whole ones.
			name: "caplen-gt-len.pcap",
			build: func(t testing.TB) []byte {
				rs := whole(ether(t, qReq.ip4(t)), ether(t, qMid.ip4(t)), ether(t, qAck.ip4(t)))
				rs[0].orig -= 4
				rs[2].orig = 0
				return pcapRaw(262144, link, rs)
			},
			want:     []string{qline(1, qReq), qline(2, qMid), qline(3, qAck)},
			stats:    Stats{Packets: 3, Bytes: 69 + 1504 + 60, TCP: 3, Padded: 1},
			problems: []string{"read F: frame 1: captured length 69 exceeds the original length 65 (so does 1 more frame); read as captured, as Wireshark reads it"},
		},
		{
			name: "caplen-gt-len.pcapng",
			build: func(t testing.TB) []byte {
				w := &ngWriter{}
				w.shb(binary.LittleEndian)
				w.idb(layers.LinkTypeEthernet, 262144)
				rs := whole(ether(t, qReq.ip4(t)), ether(t, qMid.ip4(t)), ether(t, qAck.ip4(t)))
				rs[1].orig = 60
				for _, r := range rs {
					w.epb(r)
				}
				return w.b.Bytes()
			},
			want:     []string{qline(1, qReq), qline(2, qMid), qline(3, qAck)},
			stats:    Stats{Packets: 3, Bytes: 69 + 1504 + 60, TCP: 3, Padded: 1},
			problems: []string{"read F: frame 2: captured length 1504 exceeds the original length 60; read as captured, as Wireshark reads it"},
		},
		{
			// Captured on the broker host: a 64 KiB TSO send with an
			// IPv4 total length of 0, a GRO-merged receive whose total
			// length is over the frame, a padded ACK (trimmed to the
			// total length as ever), and IPv6 with a payload length over
			// the frame.
			name: "tso.pcap",
			build: func(t testing.TB) []byte {
				return pcapRaw(262144, link, whole(
					setIPv4Total(ether(t, qBig.ip4(t)), 14, 0),
					setIPv4Total(ether(t, qMid.ip4(t)), 14, 60000),
					ether(t, qAck.ip4(t)),
					setIPv6Length(ether(t, qV6Rx.ip6(t)), 14, 9000),
					ether(t, qV6.ip6(t)),
				))
			},
			want:  []string{qline(1, qBig), qline(2, qMid), qline(3, qAck), qline(4, qV6Rx), qline(5, qV6)},
			stats: Stats{Packets: 5, Bytes: 64044 + 1504 + 60 + 1874 + 99, TCP: 5, Padded: 1},
		},
		{
			// Ethernet frames with their FCS, which the link-type
			// field's FCS bits declare (2 16-bit words): where the IP
			// length says nothing (TSO's 0) only stripping it keeps the
			// FCS out of the payload.
			name: "fcs.pcap",
			build: func(t testing.TB) []byte {
				return pcapRaw(262144, 0x24000000|link, whole(
					withFCS(ether(t, qReq.ip4(t))),
					withFCS(setIPv4Total(ether(t, qBig.ip4(t)), 14, 0)),
					withFCS(ether(t, qAck.ip4(t))),
					withFCS(ether(t, qV6.ip6(t))),
				))
			},
			want:  []string{qline(1, qReq), qline(2, qBig), qline(3, qAck), qline(4, qV6)},
			stats: Stats{Packets: 4, Bytes: 73 + 64048 + 64 + 103, TCP: 4, Padded: 1},
		},
		{
			// pcapng: interface 0 declares a 32-bit FCS (if_fcslen, in
			// bits as the specification says), interface 1 none, and
			// interface 2 says 4, which Wireshark takes as bytes.
			name: "fcs.pcapng",
			build: func(t testing.TB) []byte {
				w := &ngWriter{}
				w.shb(binary.LittleEndian)
				w.idb(layers.LinkTypeEthernet, 262144, w.option(optFCSLen, []byte{32}))
				w.idb(layers.LinkTypeEthernet, 262144)
				w.idb(layers.LinkTypeEthernet, 262144, w.option(optFCSLen, []byte{4}))
				tso := setIPv4Total(ether(t, qMid.ip4(t)), 14, 0)
				for _, r := range []qrec{
					{data: withFCS(ether(t, qReq.ip4(t))), iface: 0},
					{data: withFCS(tso), iface: 0},
					{data: tso, iface: 1},
					{data: withFCS(tso), iface: 2},
					{data: withFCS(ether(t, qAck.ip4(t))), iface: 2},
				} {
					r.orig = len(r.data)
					w.epb(r)
				}
				return w.b.Bytes()
			},
			want:  []string{qline(1, qReq), qline(2, qMid), qline(3, qMid), qline(4, qMid), qline(5, qAck)},
			stats: Stats{Packets: 5, Bytes: 73 + 1508 + 1504 + 1508 + 64, TCP: 5, Padded: 1},
		},
		{
			// pcapng with blocks that hold no packet between the
			// packets: Decryption Secrets (one before the first
			// interface), custom blocks of both kinds, a systemd journal
			// entry, statistics, name resolution, a block of a type no
			// one knows; then a second, big-endian section. Wireshark
			// shows the custom and journal blocks as frames.
			name: "blocks.pcapng",
			build: func(t testing.TB) []byte {
				w := &ngWriter{}
				le := binary.LittleEndian
				dsb := le.AppendUint32(le.AppendUint32(nil, 0x544c534b), uint32(len(dsbSecret))) // TLS key log
				dsb = append(dsb, dsbSecret...)
				custom := append(le.AppendUint32(nil, 32473), "a comment from a capture tool"...) // PEN 32473: for documentation
				w.shb(le)
				w.block(0x0000000a, dsb)
				w.idb(layers.LinkTypeEthernet, 262144, w.option(2, []byte("eth0")))
				w.epb(whole(ether(t, qReq.ip4(t)))[0])                                                                // frame 1
				w.block(ngCustom, custom)                                                                             // frame 2
				w.epb(whole(ether(t, qMid.ip4(t)))[0])                                                                // frame 3
				w.block(ngCustomNoCopy, custom)                                                                       // frame 4
				w.block(0x0000000a, dsb)                                                                              // (not a frame)
				w.block(0x00000123, []byte("no one knows this block"))                                                // (not a frame)
				w.block(ngJournal, []byte("__REALTIME_TIMESTAMP=1772366400000000\nMESSAGE=kafka broker started\n\n")) // frame 5
				nrb := le.AppendUint16(le.AppendUint16(nil, 1), 10)                                                   // an IPv4 record, its name
				nrb = append(append(nrb, 10, 0, 0, 2), "kafka\x00\x00\x00"...)
				w.block(4, append(nrb, 0, 0, 0, 0)) // name resolution (not a frame)
				isb := le.AppendUint32(nil, 0)
				isb = le.AppendUint32(le.AppendUint32(isb, 0), 0)
				w.block(5, isb)                        // interface statistics (not a frame)
				w.epb(whole(ether(t, qAck.ip4(t)))[0]) // frame 6
				be := binary.BigEndian
				w.shb(be)
				w.idb(layers.LinkTypeEthernet, 262144)
				w.block(ngCustom, append(be.AppendUint32(nil, 32473), "in a big-endian section"...)) // frame 7
				w.epb(whole(ether(t, qV6.ip6(t)))[0])                                                // frame 8
				return w.b.Bytes()
			},
			want:  []string{qline(1, qReq), qline(3, qMid), qline(6, qAck), qline(8, qV6)},
			stats: Stats{Packets: 8, Bytes: 69 + 1504 + 60 + 99, TCP: 4, NotTCP: 4, Padded: 1},
		},
		{
			// A snap length of 0 in the file header: no limit, to
			// Wireshark as to us.
			name: "snaplen-0.pcap",
			build: func(t testing.TB) []byte {
				return pcapRaw(0, link, whole(ether(t, qReq.ip4(t)), ether(t, qMid.ip4(t)), setIPv4Total(ether(t, qBig.ip4(t)), 14, 0)))
			},
			want:  []string{qline(1, qReq), qline(2, qMid), qline(3, qBig)},
			stats: Stats{Packets: 3, Bytes: 69 + 1504 + 64044, TCP: 3},
		},
	}
}

func quirkPath(name string) string { return filepath.Join("testdata", "quirks", name) }

// TestQuirkFiles checks the committed quirk captures are what quirkFiles
// builds (with -update, writes them).
func TestQuirkFiles(t *testing.T) {
	for _, q := range quirkFiles() {
		b := q.build(t)
		path := quirkPath(q.name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./capture -run TestQuirkFiles -update)", err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s differs from what quirkFiles builds (go test ./capture -run TestQuirkFiles -update)", path)
		}
	}
}

// readQuirk reads a capture from a file (mapped, for a classic pcap) or on
// stdin, and lists its segments, stats and problems ("F" for its name).
func readQuirk(t *testing.T, path string, stdin bool) ([]string, Stats, []string) {
	t.Helper()
	var (
		r   *Reader
		err error
	)
	if stdin {
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			t.Fatal(rerr)
		}
		r, err = Open([]string{"-"}, bytes.NewReader(b))
	} else {
		r, err = Open([]string{path}, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var (
		got []string
		p   Packet
	)
	for {
		err := r.Next(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, qdescribe(&p))
		if bytes.Contains(p.Segment, []byte(dsbSecret[:20])) {
			t.Errorf("frame %d holds the secrets of a Decryption Secrets Block", p.Frame)
		}
	}
	var probs []string
	for _, e := range r.Problems() {
		probs = append(probs, strings.ReplaceAll(e.Error(), r.Files()[0], "F"))
		if !Recovered(e) {
			t.Errorf("problem %q stopped the file", e)
		}
	}
	for _, s := range r.srcs {
		if s.ng != nil && bytes.Contains(s.ng.big, []byte(dsbSecret[:20])) {
			t.Error("the reader kept the secrets of a Decryption Secrets Block")
		}
	}
	return got, r.Stats(), probs
}

// TestQuirks reads every quirk capture as a file and on stdin: the
// segments with their payloads, the counters, and the problems.
func TestQuirks(t *testing.T) {
	for _, q := range quirkFiles() {
		for _, stdin := range []bool{false, true} {
			t.Run(q.name+"/stdin="+strconv.FormatBool(stdin), func(t *testing.T) {
				got, st, probs := readQuirk(t, quirkPath(q.name), stdin)
				checkLines(t, got, q.want)
				if st != q.stats {
					t.Errorf("stats %+v\nwant  %+v", st, q.stats)
				}
				if strings.Join(probs, "\n") != strings.Join(q.problems, "\n") {
					t.Errorf("problems %q\nwant     %q", probs, q.problems)
				}
			})
		}
	}
}

// TestQuirksAgreeWithTshark has Wireshark read every quirk capture: the
// same frames must carry TCP, with the same payload lengths (tcp.len),
// and no frame may be more or less.
func TestQuirksAgreeWithTshark(t *testing.T) {
	tshark := wireshark.Need(t)
	for _, q := range quirkFiles() {
		t.Run(q.name, func(t *testing.T) {
			path := quirkPath(q.name)
			out, err := exec.Command(tshark, "-r", path, "-T", "fields", "-e", "frame.number", "-e", "tcp.len").Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("tshark: %v: %s", err, ee.Stderr)
				}
				t.Fatalf("tshark: %v", err)
			}
			theirs := map[int64]string{}
			var frames int64
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Split(l, "\t")
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil || len(f) != 2 {
					t.Fatalf("tshark line %q", l)
				}
				frames = max(frames, n)
				if f[1] != "" {
					theirs[n] = f[1]
				}
			}
			r, err := Open([]string{path}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ours := map[int64]string{}
			var p Packet
			for r.Next(&p) == nil {
				ours[p.Frame] = strconv.Itoa(len(p.TCP.Payload))
			}
			if r.Stats().Packets != frames {
				t.Errorf("%d frames, tshark %d", r.Stats().Packets, frames)
			}
			for n := int64(1); n <= frames; n++ {
				if ours[n] != theirs[n] {
					t.Errorf("frame %d: TCP payload length %q, tshark %q", n, ours[n], theirs[n])
				}
			}
		})
	}
}

// TestQuirksInMemory: with the snap length cutting a frame, TSO lengths
// and a declared FCS still tell the bytes that are missing (a cut, later a
// gap) from bytes that never were; and the cases not in the committed
// files.
func TestQuirksInMemory(t *testing.T) {
	const link = uint32(layers.LinkTypeEthernet)
	tso := setIPv4Total(ether(t, qBig.ip4(t)), 14, 0)
	over := setIPv4Total(ether(t, qMid.ip4(t)), 14, 60000)
	req := withFCS(ether(t, qReq.ip4(t)))
	cases := []struct {
		name    string
		network uint32
		r       qrec
		want    []string
		stats   Stats
	}{
		{"total 0, cut", link, qrec{data: tso[:200], orig: len(tso)}, []string{qlineN(1, qBig, 146) + " cut"},
			Stats{Packets: 1, Bytes: 200, TCP: 1, Cut: 1}},
		{"total over the frame, cut", link, qrec{data: over[:200], orig: len(over)}, []string{qlineN(1, qMid, 146) + " cut"},
			Stats{Packets: 1, Bytes: 200, TCP: 1, Cut: 1}},
		{"FCS, cut in the payload", 0x24000000 | link, qrec{data: req[:60], orig: len(req)}, []string{qlineN(1, qReq, 6) + " cut"},
			Stats{Packets: 1, Bytes: 60, TCP: 1, Cut: 1}},
		{"FCS, cut in the FCS", 0x24000000 | link, qrec{data: req[:len(req)-2], orig: len(req)}, []string{qline(1, qReq)},
			Stats{Packets: 1, Bytes: int64(len(req) - 2), TCP: 1}},
		{"FCS longer than the frame", 0x24000000 | link, qrec{data: req[:3], orig: 3}, nil,
			Stats{Packets: 1, Bytes: 3, Malformed: 1}},
		// tshark 4.0 does not dissect TCP here ("IPv6 payload length
		// equals 0"); an IPv6 TSO send looks so, and the frame is all
		// there is, as for IPv4's total length of 0.
		{"IPv6 payload length 0", link, qrec{data: setIPv6Length(ether(t, qV6.ip6(t)), 14, 0), orig: 99}, []string{qline(1, qV6)},
			Stats{Packets: 1, Bytes: 99, TCP: 1}},
		{"FCS bits on raw IP: no FCS", 0x24000000 | uint32(layers.LinkTypeRaw), qrec{data: setIPv4Total(qReq.ip4(t), 0, 0), orig: 55}, []string{qline(1, qReq)},
			Stats{Packets: 1, Bytes: 55, TCP: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := pcapRaw(262144, c.network, []qrec{c.r})
			for _, stdin := range []bool{false, true} {
				path := writeFile(t, t.TempDir(), "cut.pcap", b)
				got, st, probs := readQuirk(t, path, stdin)
				checkLines(t, got, c.want)
				if st != c.stats || len(probs) != 0 {
					t.Errorf("stdin %v: stats %+v, problems %q\nwant  %+v", stdin, st, probs, c.stats)
				}
			}
		})
	}
}
