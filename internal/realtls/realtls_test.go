package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/internal/realcapture"
	"github.com/kidscope/kidscope/internal/wireshark"
)

// committedDir holds the committed captures, key logs and tshark
// expectations.
var committedDir = filepath.Join("..", "..", "testdata", "tls")

// fixture is one committed scenario's files.
type fixture struct {
	name string
	meta realcapture.Meta
	dir  string
}

func (f fixture) path(suffix string) string { return filepath.Join(f.dir, f.name+suffix) }

func loadFixtures(t *testing.T, dir string) map[string]fixture {
	t.Helper()
	out := map[string]fixture{}
	for _, sc := range scenarios {
		m, err := realcapture.ReadMeta(filepath.Join(dir, sc.name+realcapture.MetaSuffix))
		if err != nil {
			t.Fatalf("%s: %v (regenerate with go run ./internal/realtls -o testdata/tls)", sc.name, err)
		}
		if m.TLS != tlsName(sc.tlsVersion) {
			t.Errorf("%s: sidecar says TLS %q, want %q", sc.name, m.TLS, tlsName(sc.tlsVersion))
		}
		out[sc.name] = fixture{sc.name, m, dir}
	}
	return out
}

// TestFixtureFiles checks, without tshark, that every scenario has its
// files, small, and that each key log holds the secrets of its TLS version
// in NSS key log format.
func TestFixtureFiles(t *testing.T) {
	fs := loadFixtures(t, committedDir)
	for _, sc := range scenarios {
		f := fs[sc.name]
		suffixes := []string{".pcap", GoldenSuffix}
		if sc.tlsVersion != 0 {
			suffixes = append(suffixes, ".keylog", ".dsb.pcapng")
		}
		for _, s := range suffixes {
			fi, err := os.Stat(f.path(s))
			if err != nil {
				t.Errorf("%s: %v", sc.name, err)
				continue
			}
			if fi.Size() > 200<<10 {
				t.Errorf("%s%s is %d bytes, want at most 200 KiB", sc.name, s, fi.Size())
			}
		}
		if sc.tlsVersion == 0 {
			continue
		}
		labels := keylogLabels(t, f.path(".keylog"))
		var want []string
		switch sc.tlsVersion {
		case 0x0304: // TLS 1.3
			want = []string{"CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"}
		case 0x0303: // TLS 1.2
			want = []string{"CLIENT_RANDOM"}
		}
		for _, l := range want {
			if labels[l] == 0 {
				t.Errorf("%s.keylog: no %s line (labels %v)", sc.name, l, labels)
			}
		}
		if n := len(labels); n != len(want) {
			t.Errorf("%s.keylog: labels %v, want only %v", sc.name, labels, want)
		}
		// Every connection of the capture has its secrets: one
		// CLIENT_RANDOM (TLS 1.2) or one set of four (TLS 1.3) each.
		if got := labels[want[0]]; got != f.meta.Connections {
			t.Errorf("%s.keylog: %d %s lines for %d connections", sc.name, got, want[0], f.meta.Connections)
		}
	}
}

// keylogLabels counts the lines of an NSS key log by label, and fails on a
// line that is not "LABEL <64 hex client random> <hex secret>".
func keylogLabels(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || len(f[1]) != 64 || !isHex(f[1]) || !isHex(f[2]) {
			t.Fatalf("%s: line %q is not LABEL CLIENT_RANDOM SECRET", path, sc.Text())
		}
		labels[f[0]]++
	}
	return labels
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return s != ""
}

// tsharkRuns is, for each fixture, tshark's messages: from the pcap with
// the key log (or plain), and, over TLS, from the DSB pcapng without a key
// log and from the pcap without one.
type tsharkRuns struct {
	keylog, dsb, nokeys []Msg
}

func runAll(t *testing.T, tshark string, fs map[string]fixture) map[string]tsharkRuns {
	t.Helper()
	out := map[string]tsharkRuns{}
	for _, sc := range scenarios {
		f := fs[sc.name]
		var r tsharkRuns
		var err error
		tlsOn := sc.tlsVersion != 0
		keylog := ""
		if tlsOn {
			keylog = f.path(".keylog")
		}
		if r.keylog, err = Tshark(tshark, f.path(".pcap"), keylog, tlsOn, f.meta.Ports); err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		if tlsOn {
			if r.dsb, err = Tshark(tshark, f.path(".dsb.pcapng"), "", true, f.meta.Ports); err != nil {
				t.Fatalf("%s.dsb.pcapng: %v", sc.name, err)
			}
			if r.nokeys, err = Tshark(tshark, f.path(".pcap"), "", true, f.meta.Ports); err != nil {
				t.Fatalf("%s without keys: %v", sc.name, err)
			}
		}
		out[sc.name] = r
	}
	return out
}

// TestTsharkReference runs tshark over every committed fixture: each TLS
// capture decrypts with its key log, into plausible Kafka requests; the
// DSB pcapng gives the same messages with no key log option; without the
// keys tshark sees no Kafka at all; the golden NAME.tshark.txt is what
// tshark shows; and the plaintext and TLS runs of the kgo scenario send the
// same requests in the same order.
func TestTsharkReference(t *testing.T) {
	tshark := wireshark.Need(t)
	fs := loadFixtures(t, committedDir)
	runs := runAll(t, tshark, fs)
	for _, sc := range scenarios {
		r := runs[sc.name]
		checkDecrypted(t, sc, r)
		golden, err := os.ReadFile(fs[sc.name].path(GoldenSuffix))
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatGolden(r.keylog); !bytes.Equal(got, golden) {
			t.Errorf("%s%s differs from what tshark shows now:\n%s", sc.name, GoldenSuffix, lineDiff(string(golden), string(got)))
		}
		parsed, err := ParseGolden(golden)
		if err != nil {
			t.Fatalf("%s%s: %v", sc.name, GoldenSuffix, err)
		}
		if !slices.EqualFunc(parsed, r.keylog, func(a, b Msg) bool { return a.Line() == b.Line() }) {
			t.Errorf("%s%s does not read back into tshark's messages", sc.name, GoldenSuffix)
		}
		t.Logf("%s: %d Kafka messages (%d requests), %d in frames tshark 4.0 calls malformed",
			sc.name, len(r.keylog), len(requests(r.keylog)), countMalformed(r.keylog))
	}
	comparePlainTLS(t, runs, true)
}

// checkDecrypted checks one fixture's tshark runs.
func checkDecrypted(t *testing.T, sc scenario, r tsharkRuns) {
	t.Helper()
	reqs := requests(r.keylog)
	if len(reqs) == 0 || len(reqs) == len(r.keylog) {
		t.Errorf("%s: tshark shows %d messages, %d of them requests: want requests and responses", sc.name, len(r.keylog), len(reqs))
	}
	for _, m := range reqs {
		// Plausible: a key kmsg knows, a version the client could
		// send, the scenario's client IDs.
		k := kmsg.Key(m.Key)
		if kmsg.NameForKey(int16(m.Key)) == "Unknown" || m.Version < 0 || m.Version > int(k.Request().MaxVersion()) {
			t.Errorf("%s: frame %d: implausible request key %d v%d", sc.name, m.Frame, m.Key, m.Version)
		}
		if !slices.Contains([]string{producerID, consumerID, "crafted"}, m.ClientID) {
			t.Errorf("%s: frame %d: client ID %q", sc.name, m.Frame, m.ClientID)
		}
	}
	if sc.tlsVersion == 0 {
		return
	}
	if !slices.EqualFunc(r.dsb, r.keylog, func(a, b Msg) bool { return a.Line() == b.Line() }) {
		t.Errorf("%s: the DSB pcapng gives %d messages, the pcap with the key log %d, or they differ:\n%s",
			sc.name, len(r.dsb), len(r.keylog), lineDiff(string(FormatGolden(r.keylog)), string(FormatGolden(r.dsb))))
	}
	if len(r.nokeys) != 0 {
		t.Errorf("%s: without the key log tshark still finds %d Kafka messages: not encrypted?", sc.name, len(r.nokeys))
	}
}

// comparePlainTLS compares the requests of the plaintext and TLS runs of
// the kgo scenario. With inOrder (the committed set, checked to agree) the
// sequences of (API key, version, correlation ID, client ID) in frame order
// must be equal. A fresh run need not repeat them exactly: under load a
// consumer can close before or after one more fetch connection (ApiVersions
// and Fetch of its own) and the connections' requests interleave
// differently, so without inOrder the sets of distinct (API key, version,
// client ID) must be equal. Responses are not compared: tshark matches
// some of them to no request (kafka.response_key missing), and not the
// same ones in every file.
func comparePlainTLS(t *testing.T, runs map[string]tsharkRuns, inOrder bool) {
	t.Helper()
	seq := func(name string) []string {
		var s []string
		for _, m := range requests(runs[name].keylog) {
			if inOrder {
				s = append(s, fmt.Sprintf("%d v%d corr %d %q", m.Key, m.Version, m.Corr, m.ClientID))
			} else {
				s = append(s, fmt.Sprintf("%d v%d %q", m.Key, m.Version, m.ClientID))
			}
		}
		if !inOrder {
			slices.Sort(s)
			s = slices.Compact(s)
		}
		return s
	}
	plain := seq("kgo-plain")
	for _, name := range []string{"kgo-tls13", "kgo-tls12"} {
		if got := seq(name); !slices.Equal(got, plain) {
			t.Errorf("%s's requests differ from kgo-plain's:\n%s", name, lineDiff(strings.Join(plain, "\n"), strings.Join(got, "\n")))
		}
	}
}

func requests(msgs []Msg) []Msg {
	var out []Msg
	for _, m := range msgs {
		if m.Request {
			out = append(out, m)
		}
	}
	return out
}

func countMalformed(msgs []Msg) int {
	n := 0
	for _, m := range msgs {
		if m.Malformed {
			n++
		}
	}
	return n
}

// lineDiff lists the lines a has more often than b (-) and those b has more
// often than a (+), up to 20.
func lineDiff(a, b string) string {
	count := map[string]int{}
	var order []string
	for _, l := range strings.Split(a, "\n") {
		if _, ok := count[l]; !ok {
			order = append(order, l)
		}
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		if _, ok := count[l]; !ok {
			order = append(order, l)
		}
		count[l]--
	}
	var out []string
	for _, l := range order {
		switch n := count[l]; {
		case n > 0:
			out = append(out, fmt.Sprintf("- %s (×%d)", l, n))
		case n < 0:
			out = append(out, fmt.Sprintf("+ %s (×%d)", l, -n))
		}
	}
	if len(out) == 0 {
		out = append(out, "(the same lines, in another order)")
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// TestCaptureEndToEnd runs the whole program into a temporary directory
// (clusters, live capture of lo, every scenario, editcap, tshark), then
// the checks above on the fresh files. It needs root for AF_PACKET.
func TestCaptureEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to capture on lo with AF_PACKET")
	}
	if testing.Short() {
		t.Skip("runs clusters and a live capture; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	dir := t.TempDir()
	var log bytes.Buffer
	if err := run(ctx, "lo", dir, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Log("\n" + log.String())
	tshark := wireshark.Path()
	if tshark == "" {
		t.Skip("tshark is not installed: the fresh captures are not checked")
	}
	fs := loadFixtures(t, dir)
	runs := runAll(t, tshark, fs)
	for _, sc := range scenarios {
		checkDecrypted(t, sc, runs[sc.name])
	}
	comparePlainTLS(t, runs, false)
}

// TestViolatingInstanceIDs has tshark decrypt the crafted client's
// requests into raw bytes (-d tls.port==N,data) and reads their headers
// here: the first two carry one instance ID (request header v2, tag 0), the
// third another, which is what header-id-changed is about.
func TestViolatingInstanceIDs(t *testing.T) {
	tshark := wireshark.Need(t)
	f := loadFixtures(t, committedDir)["violating-tls13"]
	port := f.meta.Ports[0]
	out, err := exec.Command(tshark, "-r", f.path(".pcap"), "-n", "-o", "tls.keylog_file:"+f.path(".keylog"),
		"-d", fmt.Sprintf("tls.port==%d,data", port), "-Y", fmt.Sprintf("tcp.dstport==%d && data", port),
		"-T", "fields", "-e", "data.data").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	var ids []string
	for _, l := range strings.Fields(string(out)) {
		for _, h := range strings.Split(l, ",") {
			b, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			id, err := headerTag0(b)
			if err != nil {
				t.Fatalf("request %x: %v", b, err)
			}
			ids = append(ids, id)
		}
	}
	if len(ids) != 3 || ids[0] == "" || ids[0] != ids[1] || ids[2] == ids[1] || ids[2] == "" {
		t.Fatalf("instance IDs of the crafted requests: %q, want two equal then another", ids)
	}
	t.Logf("instance IDs %q", ids)
}

// headerTag0 reads a whole request (size, then header v2) and returns the
// hex of its header's tag 0, "" if it has none.
func headerTag0(b []byte) (string, error) {
	if len(b) < 14 || int(binary.BigEndian.Uint32(b)) != len(b)-4 {
		return "", fmt.Errorf("not one whole request")
	}
	n := 12 + 2 + int(int16(binary.BigEndian.Uint16(b[12:]))) // client ID
	if n > len(b) {
		return "", fmt.Errorf("short client ID")
	}
	count, w := binary.Uvarint(b[n:])
	n += w
	for i := uint64(0); i < count; i++ {
		tag, w := binary.Uvarint(b[n:])
		n += w
		size, w := binary.Uvarint(b[n:])
		n += w
		if w <= 0 || n+int(size) > len(b) {
			return "", fmt.Errorf("short tagged field")
		}
		if tag == 0 {
			return hex.EncodeToString(b[n : n+int(size)]), nil
		}
		n += int(size)
	}
	return "", nil
}
