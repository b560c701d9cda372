package main

import (
	"bytes"
	endian "encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/internal/wireshark"
)

// The real-traffic captures rewritten with the quirks of real-world
// capture files (see the capture package's quirk tests for the quirks
// one by one, against tshark): kidscope must decode the same Kafka
// messages from each as from the original.

// pcapRecord is one record of a classic pcap file.
type pcapRecord struct {
	sec, usec uint32
	data      []byte
	orig      uint32
}

// readPcap reads a little-endian microsecond pcap (the real captures).
func readPcap(t *testing.T, path string) []pcapRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := endian.LittleEndian
	if len(b) < 24 || le.Uint32(b) != 0xa1b2c3d4 || le.Uint32(b[20:]) != 1 {
		t.Fatalf("%s: not a little-endian microsecond Ethernet pcap", path)
	}
	var rs []pcapRecord
	for off := 24; off < len(b); {
		n := int(le.Uint32(b[off+8:]))
		rs = append(rs, pcapRecord{le.Uint32(b[off:]), le.Uint32(b[off+4:]), b[off+16 : off+16+n], le.Uint32(b[off+12:])})
		off += 16 + n
	}
	return rs
}

// writePcap writes records as a little-endian microsecond pcap with the
// given snap length and link-type field.
func writePcap(snap, network uint32, rs []pcapRecord) []byte {
	le := endian.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(le.AppendUint16(b, 2), 4)
	b = append(b, make([]byte, 8)...)
	b = le.AppendUint32(le.AppendUint32(b, snap), network)
	for _, r := range rs {
		b = le.AppendUint32(le.AppendUint32(b, r.sec), r.usec)
		b = le.AppendUint32(le.AppendUint32(b, uint32(len(r.data))), r.orig)
		b = append(b, r.data...)
	}
	return b
}

// pcapngFile writes records as pcapng: one Ethernet interface with the
// given options (raw option bytes), and before record i the extra blocks
// extra(i) returns.
func pcapngFile(rs []pcapRecord, ifOpts []byte, extra func(i int) [][]byte) []byte {
	le := endian.LittleEndian
	block := func(typ uint32, body []byte) []byte {
		body = append(body, make([]byte, (4-len(body)%4)%4)...)
		n := uint32(12 + len(body))
		return le.AppendUint32(append(le.AppendUint32(le.AppendUint32(nil, typ), n), body...), n)
	}
	shb := le.AppendUint32(nil, 0x1a2b3c4d)
	shb = le.AppendUint64(le.AppendUint16(le.AppendUint16(shb, 1), 0), ^uint64(0))
	b := block(0x0a0d0d0a, shb)
	idb := le.AppendUint32(le.AppendUint32(nil, 1), 262144) // Ethernet, reserved, snap length
	if len(ifOpts) > 0 {
		idb = append(append(idb, ifOpts...), 0, 0, 0, 0)
	}
	b = append(b, block(1, idb)...) // microsecond timestamps: no if_tsresol
	for i, r := range rs {
		if extra != nil {
			for _, x := range extra(i) {
				b = append(b, x...)
			}
		}
		ts := uint64(r.sec)*1e6 + uint64(r.usec)
		epb := le.AppendUint32(nil, 0)
		epb = le.AppendUint32(le.AppendUint32(epb, uint32(ts>>32)), uint32(ts))
		epb = le.AppendUint32(le.AppendUint32(epb, uint32(len(r.data))), r.orig)
		b = append(b, block(6, append(epb, r.data...))...)
	}
	return b
}

// mapRecords is rs with f applied to a copy of every record.
func mapRecords(rs []pcapRecord, f func(i int, r *pcapRecord)) []pcapRecord {
	out := make([]pcapRecord, len(rs))
	for i, r := range rs {
		r.data = bytes.Clone(r.data)
		f(i, &r)
		out[i] = r
	}
	return out
}

// setTotal puts total in the IPv4 header of an Ethernet frame carrying TCP
// with payload; it reports whether the frame is one.
func setTotal(frame []byte, total uint16) bool {
	if len(frame) < 54 || endian.BigEndian.Uint16(frame[12:]) != 0x0800 || frame[23] != 6 {
		return false
	}
	ihl := int(frame[14]&0x0f) * 4
	tcpLen := int(frame[14+ihl+12]>>4) * 4
	if int(endian.BigEndian.Uint16(frame[16:]))-ihl-tcpLen == 0 {
		return false
	}
	endian.BigEndian.PutUint16(frame[16:], total)
	return true
}

func withFCS(frame []byte) []byte {
	return endian.LittleEndian.AppendUint32(frame, crc32.ChecksumIEEE(frame))
}

// quirkVariant is one quirk applied to a real capture. frameOf maps the
// original's frame numbers to the variant's (nil: the same).
type quirkVariant struct {
	name    string
	build   func(rs []pcapRecord) []byte
	frameOf func(frame int) int
	// problem starts the one input problem the summary must list, after
	// "read FILE: "; "" for none.
	problem string
}

func quirkVariants() []quirkVariant {
	const ether = 1
	custom := func(text string) []byte {
		le := endian.LittleEndian
		body := append(le.AppendUint32(nil, 32473), text...)
		body = append(body, make([]byte, (4-len(body)%4)%4)...)
		n := uint32(12 + len(body))
		return le.AppendUint32(append(le.AppendUint32(le.AppendUint32(nil, 0x00000bad), n), body...), n)
	}
	raw := func(typ uint32, body []byte) []byte {
		le := endian.LittleEndian
		n := uint32(12 + len(body))
		return le.AppendUint32(append(le.AppendUint32(le.AppendUint32(nil, typ), n), body...), n)
	}
	// Before every fifth packet a custom block (a frame to Wireshark), a
	// Decryption Secrets Block and one of a type no one knows.
	blocks := func(i int) [][]byte {
		if i%5 != 0 {
			return nil
		}
		dsb := endian.LittleEndian.AppendUint32(endian.LittleEndian.AppendUint32(nil, 0x544c534b), 16)
		return [][]byte{custom("kidscope quirk test"), raw(0x0000000a, append(dsb, "CLIENT_RANDOM 00"...)), raw(0x00000777, make([]byte, 8))}
	}
	return []quirkVariant{
		{name: "caplen-gt-len.pcap", problem: "frame 1: captured length", build: func(rs []pcapRecord) []byte {
			return writePcap(262144, ether, mapRecords(rs, func(i int, r *pcapRecord) {
				if i%3 == 0 {
					r.orig = uint32(max(len(r.data)-4, 0))
				}
			}))
		}},
		{name: "caplen-gt-len.pcapng", problem: "frame 2: captured length", build: func(rs []pcapRecord) []byte {
			return pcapngFile(mapRecords(rs, func(i int, r *pcapRecord) {
				if i%3 == 1 {
					r.orig = 0
				}
			}), nil, nil)
		}},
		{name: "tso.pcap", build: func(rs []pcapRecord) []byte {
			return writePcap(262144, ether, mapRecords(rs, func(i int, r *pcapRecord) {
				total := uint16(0) // TSO/GSO on the capturing host
				if i%2 == 1 {
					total = 65535 // over the frame, as GRO and LRO leave it
				}
				setTotal(r.data, total)
			}))
		}},
		{name: "fcs.pcap", build: func(rs []pcapRecord) []byte {
			// With total length 0 only the declared FCS tells where the
			// payload ends.
			return writePcap(262144, 0x24000000|ether, mapRecords(rs, func(i int, r *pcapRecord) {
				setTotal(r.data, 0)
				r.data = withFCS(r.data)
				r.orig = uint32(len(r.data))
			}))
		}},
		{name: "fcs.pcapng", build: func(rs []pcapRecord) []byte {
			fcslen := []byte{13, 0, 1, 0, 32, 0, 0, 0} // if_fcslen: 32 bits
			return pcapngFile(mapRecords(rs, func(i int, r *pcapRecord) {
				setTotal(r.data, 0)
				r.data = withFCS(r.data)
				r.orig = uint32(len(r.data))
			}), fcslen, nil)
		}},
		{name: "blocks.pcapng", build: func(rs []pcapRecord) []byte {
			return pcapngFile(rs, nil, blocks)
		}, frameOf: func(frame int) int { return frame + (frame-1)/5 + 1 }},
		{name: "snaplen-0.pcap", build: func(rs []pcapRecord) []byte {
			return writePcap(0, ether, rs)
		}},
	}
}

// TestQuirksDecodeKafka rewrites each real capture with each quirk: `frames`
// lists the original's messages, at the same frames as Wireshark numbers
// them (tshark agrees where frame numbers move), and `analyze` counts the
// same requests and responses and exits the same way, with one input
// problem where the file has records longer than their frames.
func TestQuirksDecodeKafka(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/real/*.pcap")
	if len(files) == 0 {
		t.Fatal("no captures under testdata/real")
	}
	dir := t.TempDir()
	for _, orig := range files {
		base := strings.TrimSuffix(filepath.Base(orig), ".pcap")
		t.Run(base, func(t *testing.T) {
			t.Parallel()
			brokerPorts := capturePorts(t, strings.TrimSuffix(orig, ".pcap")+".meta.json")
			ports := strings.Join(brokerPorts, ",")
			rs := readPcap(t, orig)
			want := kidscopeMessages(t, orig, ports)
			wantSum, wantCode := analyzeSummary(t, orig, ports)
			if len(want) == 0 || wantSum.Requests == 0 {
				t.Fatalf("%s: no Kafka messages in the original", orig)
			}
			for _, q := range quirkVariants() {
				t.Run(q.name, func(t *testing.T) {
					path := filepath.Join(dir, base+"-"+q.name)
					if err := os.WriteFile(path, q.build(rs), 0o644); err != nil {
						t.Fatal(err)
					}
					moved := want
					if q.frameOf != nil {
						moved = nil
						for _, m := range want {
							n, _ := strconv.Atoi(m.frame)
							m.frame = strconv.Itoa(q.frameOf(n))
							moved = append(moved, m)
						}
					}
					got := kidscopeMessages(t, path, ports)
					if strings.Join(keys(got), "\n") != strings.Join(keys(moved), "\n") {
						t.Errorf("frames lists %d messages, the original %d; first differences:\n%s", len(got), len(moved), firstDiff(keys(got), keys(moved)))
					}
					if q.frameOf != nil && wireshark.Path() != "" {
						compareMessages(t, path, got, tsharkMessages(t, path, brokerPorts), true)
					}
					sum, code := analyzeSummary(t, path, ports)
					if sum.Requests != wantSum.Requests || sum.Responses != wantSum.Responses || code != wantCode {
						t.Errorf("analyze: %d requests, %d responses, exit %d; the original %d, %d, exit %d",
							sum.Requests, sum.Responses, code, wantSum.Requests, wantSum.Responses, wantCode)
					}
					switch {
					case q.problem == "" && len(sum.Problems) != 0:
						t.Errorf("input problems %q, want none", sum.Problems)
					case q.problem != "" && (len(sum.Problems) != 1 || !strings.HasPrefix(sum.Problems[0], "read "+path+": "+q.problem)):
						t.Errorf("input problems %q, want one that starts %q", sum.Problems, "read "+path+": "+q.problem)
					}
				})
			}
		})
	}
}

type quirkSummary struct {
	Requests  int64    `json:"requests"`
	Responses int64    `json:"responses"`
	Problems  []string `json:"problems"`
}

// analyzeSummary runs `analyze -o json` and returns its summary and exit
// code.
func analyzeSummary(t *testing.T, path, ports string) (quirkSummary, int) {
	t.Helper()
	out, stderr, code := runKidscope(t, "analyze", "-o", "json", "-p", ports, path)
	var doc struct {
		Summary quirkSummary `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("analyze %s: exit %d: %v: %s", path, code, err, stderr)
	}
	return doc.Summary, code
}

func firstDiff(a, b []string) string {
	var out []string
	for i := 0; i < max(len(a), len(b)) && len(out) < 6; i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("  got  %s\n  want %s", x, y))
		}
	}
	return strings.Join(out, "\n")
}

// capturePorts reads the broker ports of a real capture from its sidecar.
func capturePorts(t *testing.T, meta string) []string {
	t.Helper()
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Ports []int `json:"ports"`
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Ports) == 0 {
		t.Fatalf("%s: no broker ports (%v)", meta, err)
	}
	var out []string
	for _, p := range m.Ports {
		out = append(out, strconv.Itoa(p))
	}
	return out
}
