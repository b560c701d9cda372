package samples

import (
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/internal/wireshark"
)

// tsharkPDU is one Kafka PDU tshark found.
type tsharkPDU struct {
	request                bool
	key, version, clientID string
	corr                   string
}

// tsharkFrame is what tshark says of one frame.
type tsharkFrame struct {
	src, dst  string
	pdus      []tsharkPDU
	malformed bool
	// errors is every kafka.error field of the frame, in order.
	errors []string
}

func runTshark(t *testing.T, tshark, file string, ports []uint16) map[int]*tsharkFrame {
	t.Helper()
	rows, err := wireshark.Fields(tshark, file, ports, "frame.number", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst",
		"tcp.dstport", "kafka.request_key", "kafka.api_version", "kafka.correlation_id", "kafka.client_id", "_ws.malformed", "kafka.error")
	if err != nil {
		t.Fatal(err)
	}
	one := func(f []string) string {
		if len(f) == 0 {
			return ""
		}
		return f[0]
	}
	frames := map[int]*tsharkFrame{}
	for _, f := range rows {
		n, err := strconv.Atoi(one(f[0]))
		if err != nil {
			t.Fatalf("tshark row %q", f)
		}
		addr := func(v4, v6, port []string) string {
			if len(v6) > 0 {
				return "[" + one(v6) + "]:" + one(port)
			}
			return one(v4) + ":" + one(port)
		}
		tf := &tsharkFrame{src: addr(f[1], f[2], f[3]), dst: addr(f[4], f[5], f[6]), malformed: len(f[11]) > 0, errors: f[12]}
		keys, vers, corrs, cids := f[7], f[8], f[9], f[10]
		for i, corr := range corrs {
			p := tsharkPDU{corr: corr}
			if i < len(keys) {
				p.request, p.key = true, keys[i]
				if i < len(vers) {
					p.version = vers[i]
				}
				if i < len(cids) {
					p.clientID = cids[i]
				}
			}
			tf.pdus = append(tf.pdus, p)
		}
		frames[n] = tf
	}
	return frames
}

// TestTshark has Wireshark read every scenario: every scripted request
// must show at its frame with the same API key, version, correlation ID
// and ClientId, every response with its correlation ID, and no frame may
// be malformed except for bodies Wireshark 4.0 cannot dissect (wireshark.Reads)
// and for what tshark is known not to follow: connections with a
// mid-stream start or a lost segment, and bytes that are not Kafka (TLS,
// SASL v0 tokens, which tshark takes for requests).
func TestTshark(t *testing.T) {
	tshark := wireshark.Need(t)
	dir := t.TempDir()
	for _, b := range allBuilt(t) {
		t.Run(b.Scenario.Name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, b.File)
			if err := os.WriteFile(path, b.Capture, 0o644); err != nil {
				t.Fatal(err)
			}
			frames := runTshark(t, tshark, path, b.Expect.Ports)

			skipConn := map[int]bool{}
			for i := range b.Conns {
				skipConn[i] = connHasLoss(b, i)
			}
			allowed := map[int]string{} // malformed frames that are expected, and why
			for _, f := range longerRecords(t, b) {
				// tshark's own error for such a record, in its
				// "Malformed" group; it reads the bytes all the same.
				allowed[f] = "Frame length is less than captured length"
			}
			for _, r := range b.Raws {
				for f := r.First; f <= r.Last; f++ {
					allowed[f] = r.What
				}
			}
			byFrame := map[int][]Message{}
			checked, codesChecked := 0, 0
			for _, m := range b.Messages {
				if m.Frame == 0 {
					continue
				}
				byFrame[m.Frame] = append(byFrame[m.Frame], m)
				if !wireshark.Reads(m.Key, m.Version) {
					allowed[m.Frame] = fmt.Sprintf("%s v%d", apiName(m.Key), m.Version)
				}
			}
			for frame, ms := range byFrame {
				if skipConn[ms[0].Conn] {
					continue
				}
				tf := frames[frame]
				if tf == nil {
					t.Errorf("frame %d: tshark does not list it", frame)
					continue
				}
				var want, got []string
				for _, m := range ms {
					if m.Request {
						cid := "[ Null ]"
						if m.ClientID != nil {
							cid = *m.ClientID
						}
						want = append(want, fmt.Sprintf("request key %d v%d corr %d client %s", m.Key, m.Version, m.Corr, cid))
					} else {
						want = append(want, fmt.Sprintf("response corr %d", m.Corr))
					}
					checked++
				}
				for _, p := range tf.pdus {
					if p.request {
						got = append(got, fmt.Sprintf("request key %s v%s corr %s client %s", p.key, p.version, p.corr, p.clientID))
					} else {
						got = append(got, "response corr "+p.corr)
					}
				}
				if strings.Join(got, "; ") != strings.Join(want, "; ") {
					t.Errorf("frame %d: tshark reads %q, the script wrote %q", frame, got, want)
				}
				// The error codes of a frame that completes one response
				// of a version tshark dissects: tshark lists every code
				// field; the script's top-level code is among them, or,
				// without one, its items' codes are the same set.
				if len(ms) == 1 && !ms[0].Request && wireshark.Reads(ms[0].Key, ms[0].Version) && !tf.malformed {
					top, hasTop, nested := answerOf(ms[0].Body)
					want := map[string]bool{}
					for _, c := range nested {
						want[strconv.Itoa(int(c))] = true
					}
					if hasTop {
						want[strconv.Itoa(int(top))] = true
					}
					got := map[string]bool{}
					for _, c := range tf.errors {
						got[c] = true
					}
					if !maps.Equal(got, want) {
						t.Errorf("frame %d (%s v%d): tshark reads error codes %v, the script wrote %v", frame, apiName(ms[0].Key), ms[0].Version, tf.errors, scriptedCodes(ms[0].Body))
					}
					codesChecked++
				}
			}
			for n, tf := range frames {
				if !tf.malformed {
					continue
				}
				if _, ok := allowed[n]; ok {
					continue
				}
				conn := -1
				for i, c := range b.Conns {
					if s := c.Client.String(); s == tf.src || s == tf.dst {
						conn = i
					}
				}
				if conn >= 0 && skipConn[conn] {
					continue
				}
				t.Errorf("frame %d (%s > %s): tshark reports a malformed packet", n, tf.src, tf.dst)
			}
			t.Logf("%d responses' error codes compared with tshark", codesChecked)
			if checked == 0 && !allSkipped(b, skipConn) {
				t.Errorf("no message was compared")
			}
		})
	}
}

// allSkipped reports whether every connection with messages is one tshark
// is not asked to follow.
func allSkipped(b *Built, skip map[int]bool) bool {
	for _, m := range b.Messages {
		if !skip[m.Conn] {
			return false
		}
	}
	return true
}

// longerRecords lists the frames of a built classic pcap whose record says
// it captured more than the frame's original length (netsim's
// CaplenOverLen).
func longerRecords(t *testing.T, b *Built) []int {
	t.Helper()
	c := b.Capture
	if len(c) < 24 || binary.LittleEndian.Uint32(c) != 0xa1b2c3d4 {
		return nil // pcapng (netsim writes no such EPB), or a pcap variant no scenario uses for them
	}
	var out []int
	for off, n := 24, 1; off+16 <= len(c); n++ {
		caplen, orig := binary.LittleEndian.Uint32(c[off+8:]), binary.LittleEndian.Uint32(c[off+12:])
		if caplen > orig {
			out = append(out, n)
		}
		off += 16 + int(caplen)
	}
	return out
}
