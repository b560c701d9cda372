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
)

var update = flag.Bool("update", false, "rewrite the quirk captures under testdata/quirks")

// The quirk captures under testdata/quirks are real-world oddities of
// capture files, each read here the way Wireshark reads it. They are made
// by quirkFiles (go test ./capture -run TestQuirkFiles -update writes them
// again) and committed, so that tshark can be run on the same bytes.

// Segments of the quirk captures: a broker host's view of one connection.
var (
	qReq = seg{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 9092, seq: 1000, payload: "a Kafka request"}
	qAck = seg{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 9092, seq: 1015, payload: "hi"}
	qMid = seg{src: "10.0.0.2", dst: "10.0.0.1", sport: 9092, dport: 40000, seq: 68990, payload: strings.Repeat("more ", 290)}
	qV6  = seg{src: "2001:db8::1", dst: "2001:db8::2", sport: 40001, dport: 9092, seq: 300, payload: "a Kafka request over IPv6"}
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
	tshark := needTshark(t)
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

// needTshark skips the test when tshark is missing, or fails it in CI.
func needTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tshark is not installed; CI must install it (apt-get install tshark)")
		}
		t.Skip("tshark is not installed (apt-get install tshark): the Wireshark cross-check is skipped")
	}
	return p
}
