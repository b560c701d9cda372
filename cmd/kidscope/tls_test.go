package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tlsFixture is one of testdata/tls's captures (internal/realtls wrote
// them: real kgo clients against kfake over TLS, and a crafted client).
type tlsFixture struct {
	name  string
	port  string
	lines []string // the golden tshark messages, canonical
}

func loadTLSFixture(t *testing.T, name string) tlsFixture {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "tls")
	var meta struct {
		Ports []int `json:"ports"`
	}
	b, err := os.ReadFile(filepath.Join(dir, name+".meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil || len(meta.Ports) != 1 {
		t.Fatalf("%s.meta.json: %v, ports %v", name, err, meta.Ports)
	}
	golden, err := os.ReadFile(filepath.Join(dir, name+".tshark.txt"))
	if err != nil {
		t.Fatal(err)
	}
	fx := tlsFixture{name: filepath.Join(dir, name), port: fmt.Sprint(meta.Ports[0])}
	for _, line := range strings.Split(string(golden), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 6 && f[1] == "request":
			fx.lines = append(fx.lines, message{frame: f[0], request: true, key: f[2], version: f[3], corr: f[4],
				clientID: strings.Trim(f[5], `"`)}.String())
		case len(f) == 4 && f[1] == "response":
			fx.lines = append(fx.lines, message{frame: f[0], corr: f[3]}.String())
		}
	}
	if len(fx.lines) == 0 {
		t.Fatalf("%s: no messages in its tshark golden file", name)
	}
	return fx
}

// TestTLSFramesEqualTshark: with the client's key log, or with the keys
// injected into a pcapng as a decryption secrets block (editcap), frames
// finds every Kafka message tshark finds in the TLS 1.3 and 1.2 captures,
// at the same frames, with the same headers; with 1 worker and several.
func TestTLSFramesEqualTshark(t *testing.T) {
	for _, name := range []string{"kgo-tls13", "kgo-tls12", "violating-tls13"} {
		fx := loadTLSFixture(t, name)
		for _, run := range []struct {
			what string
			args []string
		}{
			{"key log", []string{"--tls-keylog", fx.name + ".keylog", fx.name + ".pcap"}},
			{"key log, 3 workers", []string{"--workers", "3", "--tls-keylog", fx.name + ".keylog", fx.name + ".pcap"}},
			{"secrets block", []string{fx.name + ".dsb.pcapng"}},
		} {
			stdout, stderr, code := runKidscope(t, append([]string{"frames", "-o", "csv", "-p", fx.port}, run.args...)...)
			if code != 0 {
				t.Fatalf("%s, %s: exit %d: %s", name, run.what, code, stderr)
			}
			if got := messageLines(framesCSV(t, stdout)); !slices.Equal(got, fx.lines) {
				t.Errorf("%s, %s: kidscope and tshark differ:\nkidscope %d:\n%s\ntshark %d:\n%s", name, run.what,
					len(got), strings.Join(got, "\n"), len(fx.lines), strings.Join(fx.lines, "\n"))
			}
		}
	}
}

// TestTLSAnalyze: the crafted client that breaks header-id-changed over
// TLS is found with its key log; without it the connection is TLS and
// not Kafka; with a key log that lacks its keys, "TLS (no key)". The kgo
// capture over TLS draws the same findings as its plaintext twin.
func TestTLSAnalyze(t *testing.T) {
	analyze := func(args ...string) tlsDoc { t.Helper(); return analyzeTLS(t, args...) }
	rules := func(d tlsDoc) []string {
		var out []string
		for _, f := range d.Findings {
			out = append(out, f.Rule)
		}
		slices.Sort(out)
		return out
	}
	v := loadTLSFixture(t, "violating-tls13")
	if got := rules(analyze("-p", v.port, "--tls-keylog", v.name+".keylog", v.name+".pcap")); !slices.Contains(got, "header-id-changed") {
		t.Errorf("violating client over TLS with its key log: findings %v, want header-id-changed", got)
	}
	if d := analyze("-p", v.port, v.name+".pcap"); len(d.Connections) != 1 || d.Connections[0].NotKafka == nil || *d.Connections[0].NotKafka != "TLS" {
		t.Errorf("without a key log: connections %+v, want one, TLS", d.Connections)
	}
	other := loadTLSFixture(t, "kgo-tls12")
	d := analyze("-p", v.port, "--tls-keylog", other.name+".keylog", v.name+".pcap")
	if len(d.Connections) != 1 || d.Connections[0].NotKafka == nil || *d.Connections[0].NotKafka != "TLS (no key)" {
		t.Errorf("with another capture's key log: connections %+v, want one, TLS (no key)", d.Connections)
	}
	if len(d.Brokers) != 1 || d.Brokers[0].TLSNoKey != 1 {
		t.Errorf("with another capture's key log: brokers %+v, want one with one TLS (no key)", d.Brokers)
	}

	tls13, plain := loadTLSFixture(t, "kgo-tls13"), loadTLSFixture(t, "kgo-plain")
	enc := analyze("-p", tls13.port, "--tls-keylog", tls13.name+".keylog", tls13.name+".pcap")
	clear := analyze("-p", plain.port, plain.name+".pcap")
	for _, c := range enc.Connections {
		if c.TLS == nil || *c.TLS != "TLS 1.3 TLS_AES_128_GCM_SHA256" {
			t.Errorf("a decrypted connection's tls is %v, want TLS 1.3 TLS_AES_128_GCM_SHA256", c.TLS)
		}
	}
	for _, c := range clear.Connections {
		if c.TLS != nil {
			t.Errorf("a plaintext connection's tls is %q", *c.TLS)
		}
	}
	if !slices.Equal(rules(enc), rules(clear)) {
		t.Errorf("findings over TLS %v, in plaintext %v", rules(enc), rules(clear))
	}
	reqs := func(d tlsDoc) (n int) {
		for _, c := range d.Connections {
			n += c.Requests
		}
		return n
	}
	if reqs(enc) != reqs(clear) || reqs(enc) == 0 {
		t.Errorf("requests over TLS %d, in plaintext %d", reqs(enc), reqs(clear))
	}
}

// TestTLSKeyLogGarbage: a key log with lines that are not key log lines
// is used for the lines it has, and says on stderr how many it left out,
// by number, never their text.
func TestTLSKeyLogGarbage(t *testing.T) {
	fx := loadTLSFixture(t, "violating-tls13")
	good, err := os.ReadFile(fx.name + ".keylog")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keys.log")
	garbage := "not a key log line SECRET-LOOKING-TEXT\nCLIENT_RANDOM zz\n"
	if err := os.WriteFile(path, append([]byte(garbage), good...), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runKidscope(t, "frames", "-o", "csv", "-p", fx.port, "--tls-keylog", path, fx.name+".pcap")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := messageLines(framesCSV(t, stdout)); !slices.Equal(got, fx.lines) {
		t.Errorf("with garbage lines: %d messages, want %d", len(got), len(fx.lines))
	}
	wantIn(t, stderr, "2 lines are not key log lines")
	if strings.Contains(stderr, "SECRET-LOOKING-TEXT") {
		t.Errorf("stderr quotes a key log line: %s", stderr)
	}
}

// TestTLSHalfTheKeys: with the secrets of every other connection left out
// of the key log, those connections are named TLS (no key) and counted
// per broker, and the others are decoded as with the whole key log.
func TestTLSHalfTheKeys(t *testing.T) {
	fx := loadTLSFixture(t, "kgo-tls13")
	whole, err := os.ReadFile(fx.name + ".keylog")
	if err != nil {
		t.Fatal(err)
	}
	var randoms []string
	byRandom := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(whole)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		if byRandom[f[1]] == nil {
			randoms = append(randoms, f[1])
		}
		byRandom[f[1]] = append(byRandom[f[1]], line)
	}
	var half strings.Builder
	for i, cr := range randoms {
		if i%2 == 0 {
			half.WriteString(strings.Join(byRandom[cr], "\n") + "\n")
		}
	}
	path := filepath.Join(t.TempDir(), "half.keylog")
	if err := os.WriteFile(path, []byte(half.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(keys string) tlsDoc {
		t.Helper()
		return analyzeTLS(t, "-p", fx.port, "--tls-keylog", keys, fx.name+".pcap")
	}
	all, part := run(fx.name+".keylog"), run(path)
	decrypted := func(d tlsDoc) (n, requests int) {
		for _, c := range d.Connections {
			if c.TLS != nil {
				n++
				requests += c.Requests
			}
		}
		return n, requests
	}
	nAll, _ := decrypted(all)
	nPart, reqPart := decrypted(part)
	noKey := 0
	for _, c := range part.Connections {
		if c.NotKafka != nil && *c.NotKafka == "TLS (no key)" {
			noKey++
		}
	}
	brokerNoKey := 0
	for _, b := range part.Brokers {
		brokerNoKey += b.TLSNoKey
	}
	kept := (len(randoms) + 1) / 2
	if nAll != len(randoms) || nPart != kept || noKey != len(randoms)-kept || brokerNoKey != noKey || reqPart == 0 {
		t.Errorf("%d client randoms, half kept: %d decrypted (whole key log: %d), %d TLS (no key), brokers count %d, %d requests",
			len(randoms), nPart, nAll, noKey, brokerNoKey, reqPart)
	}
}

// TestTLSWrongKey: a key log whose traffic secrets are the wrong ones
// (the client's and the server's swapped) decrypts nothing: the connection
// is named so, counted per broker and among the connections not Kafka,
// never shown as decrypted.
func TestTLSWrongKey(t *testing.T) {
	fx := loadTLSFixture(t, "violating-tls13")
	good, err := os.ReadFile(fx.name + ".keylog")
	if err != nil {
		t.Fatal(err)
	}
	swapped := strings.NewReplacer("CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0",
		"SERVER_TRAFFIC_SECRET_0", "CLIENT_TRAFFIC_SECRET_0").Replace(string(good))
	path := filepath.Join(t.TempDir(), "swapped.keylog")
	if err := os.WriteFile(path, []byte(swapped), 0o600); err != nil {
		t.Fatal(err)
	}
	d := analyzeTLS(t, "-p", fx.port, "--tls-keylog", path, fx.name+".pcap")
	if len(d.Connections) != 1 || d.Connections[0].NotKafka == nil || !strings.Contains(*d.Connections[0].NotKafka, "do not decrypt") ||
		d.Connections[0].TLS != nil {
		t.Errorf("connections %+v, want one whose key log's secrets do not decrypt it", d.Connections)
	}
	if d.Summary.Requests != 0 || d.Summary.NotKafka != 1 || len(d.Brokers) != 1 || d.Brokers[0].TLSNoKey != 1 {
		t.Errorf("summary %+v, brokers %+v: want no request, one connection not Kafka, counted TLS without its key", d.Summary, d.Brokers)
	}
}

// tlsDoc is what the TLS tests read of analyze -o json.
type tlsDoc struct {
	Summary struct {
		Requests int `json:"requests"`
		NotKafka int `json:"not_kafka"`
	} `json:"summary"`
	Findings []struct {
		Rule string `json:"rule"`
	} `json:"findings"`
	Connections []struct {
		NotKafka *string `json:"not_kafka"`
		TLS      *string `json:"tls"`
		Requests int     `json:"requests"`
	} `json:"connections"`
	Brokers []struct {
		TLSNoKey int `json:"tls_no_key"`
	} `json:"brokers"`
}

// analyzeTLS runs analyze -o json --fail-on never with args, and reads its
// document; any exit but 0 fails the test.
func analyzeTLS(t *testing.T, args ...string) tlsDoc {
	t.Helper()
	stdout, stderr, code := runKidscope(t, append([]string{"analyze", "-o", "json", "--fail-on", "never"}, args...)...)
	var d tlsDoc
	if code != 0 || json.Unmarshal([]byte(stdout), &d) != nil {
		t.Fatalf("analyze %v: exit %d: %s", args, code, stderr)
	}
	return d
}
