package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func tlsConfig(target int64, suite string) config {
	cfg := testConfig(target)
	cfg.midstream = 0
	s, err := findTLSSuite(suite)
	if err != nil {
		panic(err)
	}
	cfg.tls = s
	return cfg
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKeySchedule checks the generator's own key schedule against RFC
// 8448 §3 (Simple 1-RTT Handshake): the early secret, Derive-Secret
// "derived", the handshake secret from the X25519 shared secret, and the
// server handshake write key and IV.
func TestKeySchedule(t *testing.T) {
	h := sha256.New
	early := extract(h, make([]byte, 32), nil)
	if want := unhex(t, "33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a"); !bytes.Equal(early, want) {
		t.Fatalf("early secret %x, want %x", early, want)
	}
	derived := deriveSecret(h, early, "derived", nil)
	if want := unhex(t, "6f2615a108c702c5678f54fc9dbab69716c076189c48250cebeac3576c3611ba"); !bytes.Equal(derived, want) {
		t.Fatalf("derived %x, want %x", derived, want)
	}
	hs := extract(h, unhex(t, "8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d"), derived)
	if want := unhex(t, "1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac"); !bytes.Equal(hs, want) {
		t.Fatalf("handshake secret %x, want %x", hs, want)
	}
	shs := unhex(t, "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38")
	key, iv := expandLabel(h, shs, "key", nil, 16), expandLabel(h, shs, "iv", nil, 12)
	if !bytes.Equal(key, unhex(t, "3fce516009c21727d0f2e4e86ee403bc")) || !bytes.Equal(iv, unhex(t, "5d313eb2671276ee13000b30")) {
		t.Fatalf("server handshake key %x iv %x", key, iv)
	}
}

func TestTLSSameFlagsSameBytes(t *testing.T) {
	gen := func(seed uint64) ([]byte, []byte) {
		var buf bytes.Buffer
		cfg := tlsConfig(1e6, "aes128-gcm")
		cfg.seed = seed
		g, err := generate(cfg, &buf)
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), g.tls.keylog.Bytes()
	}
	a, ka := gen(1)
	b, kb := gen(1)
	_, kc := gen(2)
	if !bytes.Equal(a, b) || !bytes.Equal(ka, kb) {
		t.Fatal("two TLS runs with the same flags wrote different bytes or key logs")
	}
	if bytes.Equal(ka, kc) {
		t.Fatal("seeds 1 and 2 wrote the same key log")
	}
	// Every connection's client random is its own.
	randoms := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(ka)), "\n")
	for _, l := range lines {
		randoms[strings.Fields(l)[1]] = true
	}
	if len(lines) != 4*len(randoms) {
		t.Fatalf("%d key log lines for %d client randoms, want 4 each", len(lines), len(randoms))
	}
}

// writeTLSLoad writes a TLS load and its key log into dir, and returns
// them with what the load holds and every whole message, as
// TestKidscopeFindsThePlantedViolations lists them.
func writeTLSLoad(t *testing.T, dir string, cfg config) (file, keys string, exp *Expectation, written []string) {
	t.Helper()
	file, keys = filepath.Join(dir, "load.pcap"), filepath.Join(dir, "load.keys")
	g, written := generateListed(t, cfg, file)
	if err := os.WriteFile(keys, g.tls.keylog.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, keys, g.expectation(file, nil), written
}

// analyze runs `kidscope analyze -o json` and decodes the report.
func analyze(t *testing.T, bin, file string, extra ...string) (*Report, []byte) {
	t.Helper()
	out, _ := run(t, bin, append(append([]string{"analyze", "-o", "json", "--fail-on", "never"}, extra...), file)...)
	var rep Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("analyze %v: %v", extra, err)
	}
	return &rep, []byte(out)
}

// TestKidscopeOverTLS runs kidscope on a TLS load with its key log: the
// same planted findings, exactly, every connection decrypted, every whole
// message listed at its frame, with one worker and several; without the
// key log, or with one that lacks the load's keys, no connection is
// decoded and each is named TLS. tshark, when installed, decrypts the same
// messages at the same frames. Then the other two suites, on small loads.
func TestKidscopeOverTLS(t *testing.T) {
	bin := kidscopeBinary(t)
	dir := t.TempDir()
	file, keys, exp, written := writeTLSLoad(t, dir, tlsConfig(4e6, "aes128-gcm"))
	if len(exp.Findings) != 5 || len(exp.InfoFindings) != 0 || exp.TLS != "TLS 1.3 TLS_AES_128_GCM_SHA256" {
		t.Fatalf("the load has %d planted findings, %d by design, TLS %q; want 5, 0, TLS 1.3 AES-128-GCM",
			len(exp.Findings), len(exp.InfoFindings), exp.TLS)
	}
	for _, w := range []string{"1", "4"} {
		rep, _ := analyze(t, bin, file, "--tls-keylog", keys, "--workers", w)
		if len(rep.Connections) != exp.Connections {
			t.Errorf("--workers %s: %d connections listed, the load has %d", w, len(rep.Connections), exp.Connections)
		}
		for _, d := range compare(rep, exp) {
			t.Errorf("--workers %s: %s", w, d)
		}
	}
	checkFrames(t, bin, file, exp, written, "--tls-keylog", keys)

	// Without keys: nothing decoded, every connection named.
	other := filepath.Join(dir, "other.keys")
	line := "CLIENT_HANDSHAKE_TRAFFIC_SECRET " + strings.Repeat("ab", 32) + " " + strings.Repeat("cd", 32) + "\n"
	if err := os.WriteFile(other, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		extra []string
		want  string
	}{{"no key log", nil, "TLS"}, {"another key log", []string{"--tls-keylog", other}, "TLS (no key)"}} {
		rep, raw := analyze(t, bin, file, c.extra...)
		var more struct {
			Connections []struct {
				NotKafka *string `json:"not_kafka"`
			} `json:"connections"`
			Brokers []struct {
				TLSNoKey int `json:"tls_no_key"`
			} `json:"brokers"`
		}
		if err := json.Unmarshal(raw, &more); err != nil {
			t.Fatal(err)
		}
		// Without a key log each connection is a stream-not-kafka finding;
		// with one that lacks the keys, each is counted in its broker's row
		// instead. Either way every connection is counted as not Kafka.
		s := rep.Summary
		findings, notKafka := 0, int64(exp.Connections)
		if c.want == "TLS" {
			findings = exp.Connections
		}
		if s.Requests+s.Responses != 0 || s.NotKafka != notKafka || len(rep.Findings) != findings {
			t.Errorf("%s: %d requests, %d responses, %d findings, %d connections not Kafka; want 0, 0, %d, %d",
				c.name, s.Requests, s.Responses, len(rep.Findings), s.NotKafka, findings, notKafka)
		}
		for _, f := range rep.Findings {
			if f.Rule != "stream-not-kafka" {
				t.Errorf("%s: finding %s", c.name, f)
			}
		}
		named, noKey := 0, 0
		for _, x := range more.Connections {
			if x.NotKafka != nil && *x.NotKafka == c.want {
				named++
			}
		}
		for _, b := range more.Brokers {
			noKey += b.TLSNoKey
		}
		if named != exp.Connections {
			t.Errorf("%s: %d connections named %q, want all %d", c.name, named, c.want, exp.Connections)
		}
		if c.want == "TLS (no key)" && noKey != exp.Connections {
			t.Errorf("%s: brokers count %d TLS connections without their keys, want %d", c.name, noKey, exp.Connections)
		}
	}

	if _, err := exec.LookPath("tshark"); err != nil {
		t.Log("tshark is not installed: not compared")
		return
	}
	got := tsharkMessages(t, file, keys)
	var want []string
	for _, w := range written {
		f := strings.Fields(w) // frame N CLIENT DIRECTION corr C
		want = append(want, fmt.Sprintf("frame %s corr %s", f[1], f[5]))
	}
	sameList(t, "tshark: the messages decrypted", got, want)
	t.Logf("tshark decrypts %d messages, kidscope %d", len(got), len(want))

	// The other two suites decrypt too.
	for _, suite := range []string{"aes256-gcm", "chacha20-poly1305"} {
		cfg := tlsConfig(1e6, suite)
		cfg.conns = 30
		file, keys, exp, _ := writeTLSLoad(t, t.TempDir(), cfg)
		rep, _ := analyze(t, bin, file, "--tls-keylog", keys)
		for _, d := range compare(rep, exp) {
			t.Errorf("%s: %s", suite, d)
		}
		if exp.Requests < 100 || len(exp.Findings) != 5 {
			t.Errorf("%s: the load has only %d requests and %d planted findings", suite, exp.Requests, len(exp.Findings))
		}
	}
}

// tsharkMessages lists the Kafka messages tshark decrypts with the key
// log, as "frame N corr C": the frame where each PDU is complete.
func tsharkMessages(t *testing.T, file, keys string) []string {
	t.Helper()
	cmd := exec.Command("tshark", "-r", file, "-o", "tls.keylog_file:"+keys, "-o", "tcp.reassemble_out_of_order:TRUE",
		"-d", "tcp.port==9092,tls", "-d", "tls.port==9092,kafka", "-Y", "kafka",
		"-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "frame.number", "-e", "kafka.correlation_id")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v: %s", err, stderr.String())
	}
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 2 || f[1] == "" {
			continue
		}
		for _, corr := range strings.Split(f[1], "|") {
			msgs = append(msgs, fmt.Sprintf("frame %s corr %s", f[0], corr))
		}
	}
	return msgs
}
