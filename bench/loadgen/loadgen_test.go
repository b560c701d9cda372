package main

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
)

func testConfig(target int64) config {
	return config{target: target, conns: 200, seed: 1, midstream: 5, closes: 6, brokers: 3,
		ooo: 0.005, dup: 0.002, rate: 20e6, concurrency: 8, groupWeight: 8}
}

// refChecksum is RFC 1071 as written: big-endian 16-bit words.
func refChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

func TestChecksum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.IntN(3000))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if i%7 == 0 {
			for j := range b {
				b[j] = 0xff // carries everywhere
			}
		}
		// In parts cut at even offsets, as the pseudo header, the TCP
		// header and the payload are.
		cut1 := min(len(b), 2*rng.IntN(20))
		cut2 := cut1 + min(len(b)-cut1, 2*rng.IntN(40))
		got := checksum(sumLE(sumLE(sumLE(0, b[:cut1]), b[cut1:cut2]), b[cut2:]))
		if want := refChecksum(b); got != want {
			t.Fatalf("len %d cuts %d,%d: checksum %#04x, want %#04x", len(b), cut1, cut2, got, want)
		}
	}
}

func TestSameFlagsSameBytes(t *testing.T) {
	gen := func(seed uint64) ([]byte, *Expectation) {
		var buf bytes.Buffer
		cfg := testConfig(3e6)
		cfg.seed = seed
		g, err := generate(cfg, &buf)
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), g.expectation("x.pcap", nil)
	}
	a, ea := gen(1)
	b, eb := gen(1)
	c, _ := gen(2)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same flags wrote different bytes")
	}
	ja, _ := json.Marshal(ea)
	jb, _ := json.Marshal(eb)
	if !bytes.Equal(ja, jb) {
		t.Fatal("two runs with the same flags expect different things")
	}
	if bytes.Equal(a, c) {
		t.Fatal("seeds 1 and 2 wrote the same bytes")
	}
	if int64(len(a)) < 3e6 {
		t.Fatalf("asked for 3 MB, wrote %d bytes", len(a))
	}
}

// TestMessagesDecode decodes every whole message of a load with kmsg and
// requires the same bytes back, and a correct CRC on every record batch.
func TestMessagesDecode(t *testing.T) {
	var n, batches int
	var failed error
	check := func(c *conn, m *message) {
		if failed != nil {
			return
		}
		n++
		err := checkMessage(m)
		if err == nil {
			var k int
			k, err = countBatches(m)
			batches += k
		}
		if err != nil {
			failed = fmt.Errorf("key %d v%d corr %d response=%v: %w", m.key, m.ver, m.corr, m.resp, err)
		}
	}
	var buf bytes.Buffer
	if _, err := generateWith(testConfig(10e6), &buf, check); err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatal(failed)
	}
	if n < 500 || batches < 100 {
		t.Fatalf("only %d messages, %d record batches checked", n, batches)
	}
	t.Logf("%d messages, %d record batches", n, batches)
}

// body returns the body of m, after checking its size field and header.
func body(m *message) ([]byte, error) {
	b := m.data
	if int(binary.BigEndian.Uint32(b)) != len(b)-4 {
		return nil, fmt.Errorf("size field %d, frame of %d bytes", binary.BigEndian.Uint32(b), len(b)-4)
	}
	api, _ := decode.LookupAPI(m.key)
	if m.resp {
		if int32(binary.BigEndian.Uint32(b[4:])) != m.corr {
			return nil, fmt.Errorf("correlation ID")
		}
		if api.ResponseHeaderVersion(m.ver) == 0 {
			return b[8:], nil
		}
		if b[8] != 0 {
			return nil, fmt.Errorf("response header tags")
		}
		return b[9:], nil
	}
	if int16(binary.BigEndian.Uint16(b[4:])) != m.key || int16(binary.BigEndian.Uint16(b[6:])) != m.ver ||
		int32(binary.BigEndian.Uint32(b[8:])) != m.corr {
		return nil, fmt.Errorf("request header")
	}
	p := 14 + int(binary.BigEndian.Uint16(b[12:]))
	if api.RequestHeaderVersion(m.ver) < 2 {
		return b[p:], nil
	}
	switch {
	case b[p] == 0:
		return b[p+1:], nil
	case b[p] == 1 && b[p+1] == 0 && b[p+2] == 16:
		return b[p+3+16:], nil
	}
	return nil, fmt.Errorf("header tags %x", b[p:p+3])
}

func checkMessage(m *message) error {
	b, err := body(m)
	if err != nil {
		return err
	}
	var msg interface {
		SetVersion(int16)
		ReadFrom([]byte) error
		AppendTo([]byte) []byte
	}
	if m.resp {
		msg = kmsg.ResponseForKey(m.key)
	} else {
		msg = kmsg.RequestForKey(m.key)
	}
	msg.SetVersion(m.ver)
	if err := msg.ReadFrom(b); err != nil {
		return err
	}
	if again := msg.AppendTo(nil); !bytes.Equal(again, b) {
		return fmt.Errorf("kmsg encodes the decoded body to other bytes (%d, was %d)", len(again), len(b))
	}
	return nil
}

// countBatches checks the CRC-32C of the record batches of a Produce
// request or Fetch response and counts them.
func countBatches(m *message) (int, error) {
	b, err := body(m)
	if err != nil {
		return 0, err
	}
	var sets [][]byte
	switch {
	case m.key == 0 && !m.resp:
		r := kmsg.NewPtrProduceRequest()
		r.Version = m.ver
		if err := r.ReadFrom(b); err != nil {
			return 0, err
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				sets = append(sets, p.Records)
			}
		}
	case m.key == 1 && m.resp:
		r := kmsg.NewPtrFetchResponse()
		r.Version = m.ver
		if err := r.ReadFrom(b); err != nil {
			return 0, err
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				sets = append(sets, p.RecordBatches)
			}
		}
	}
	n := 0
	for _, s := range sets {
		for len(s) > 0 {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(s); err != nil {
				return n, err
			}
			l := 12 + int(rb.Length)
			if crc32.Checksum(s[21:l], castagnoli) != uint32(rb.CRC) {
				return n, fmt.Errorf("record batch %d: bad CRC", n)
			}
			s = s[l:]
			n++
		}
	}
	return n, nil
}

// kidscopeBinary builds kidscope once for the tests that run it.
func kidscopeBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kidscope")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kidscope/kidscope/cmd/kidscope").CombinedOutput()
	if err != nil {
		t.Fatalf("go build kidscope: %v\n%s", err, out)
	}
	return bin
}

func run(t *testing.T, bin string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kidscope %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// generateListed writes the load of cfg to file, and lists every whole
// message in it: the frame where it is complete, its client, direction and
// correlation ID.
func generateListed(t *testing.T, cfg config, file string) (*gen, []string) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	g, err := generateWith(cfg, f, func(c *conn, m *message) {
		dir := "request"
		if m.resp {
			dir = "response"
		}
		written = append(written, fmt.Sprintf("frame %d %s %s corr %d", m.frame, c.clientAddr(), dir, m.corr))
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return g, written
}

// TestKidscopeFindsThePlantedViolations runs kidscope on a 20 MB load and
// requires exactly the planted error and warning findings, the info
// findings the load makes by design (one stream-mid-start per connection
// open before the capture), and every whole request and response.
func TestKidscopeFindsThePlantedViolations(t *testing.T) {
	bin := kidscopeBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "load.pcap")
	g, written := generateListed(t, testConfig(20e6), file)
	exp := g.expectation(file, nil)
	if len(exp.Findings) != 5 || len(exp.InfoFindings) != 5 {
		t.Fatalf("the load has %d planted findings and %d by design, want 5 and 5", len(exp.Findings), len(exp.InfoFindings))
	}

	// One worker and several.
	for _, extra := range [][]string{{"--workers", "1"}, {"--workers", "4"}} {
		args := append([]string{"analyze", "-o", "json", "--fail-on", "never"}, extra...)
		out, _ := run(t, bin, append(args, file)...)
		var rep Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("analyze %v: %v", extra, err)
		}
		for _, d := range compare(&rep, exp) {
			t.Errorf("analyze %v: %s", extra, d)
		}
	}

	checkFrames(t, bin, file, exp, written)
}

// checkFrames requires `kidscope frames` (with the extra flags) to list
// exactly the whole messages written, by frame, client, direction and
// correlation ID, and the load's counts by API key.
func checkFrames(t *testing.T, bin, file string, exp *Expectation, written []string, extra ...string) {
	t.Helper()
	out, _ := run(t, bin, append(append([]string{"frames", "-o", "csv"}, extra...), file)...)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("frames -o csv: %v", err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	var reqs, resps, unmatched int64
	byKey := map[string]int64{}
	var listed []string
	for _, r := range rows[1:] {
		listed = append(listed, fmt.Sprintf("frame %s %s %s corr %s", r[col["frame"]], r[col["client"]], r[col["direction"]], r[col["correlation_id"]]))
		switch r[col["direction"]] {
		case "request":
			reqs++
			byKey["req "+r[col["api_key"]]]++
		case "response":
			resps++
			if r[col["api_key"]] == "" {
				unmatched++
			} else {
				byKey["resp "+r[col["api_key"]]]++
			}
		}
	}
	if reqs != exp.Requests || resps != exp.Responses || unmatched != exp.Unmatched {
		t.Errorf("frames: %d requests, %d responses (%d unmatched); the load has %d, %d (%d)",
			reqs, resps, unmatched, exp.Requests, exp.Responses, exp.Unmatched)
	}
	sameList(t, "frames: the messages listed", listed, written)
	for k, n := range exp.RequestsByKey {
		if byKey["req "+k] != n {
			t.Errorf("frames: %d requests of API key %s, the load has %d", byKey["req "+k], k, n)
		}
	}
	for k, n := range exp.ResponsesByKey {
		if byKey["resp "+k] != n {
			t.Errorf("frames: %d responses of API key %s, the load has %d", byKey["resp "+k], k, n)
		}
	}
}

func sameList(t *testing.T, what string, got, want []string) {
	t.Helper()
	for _, d := range diffLists(what, got, want) {
		t.Error(d)
	}
}
