package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/kidscope/kidscope/capture/filter"
)

// connectionJSON and brokerJSON are the parts of a connection and a broker
// that expectations and analyze's JSON share.
type connectionJSON struct {
	Client    string  `json:"client"`
	Broker    string  `json:"broker"`
	Profile   *string `json:"profile"`
	MidStream bool    `json:"mid_stream"`
}

type brokerJSON struct {
	Broker  string `json:"broker"`
	KIP1313 string `json:"kip1313"`
}

// expectation is the part of a scenario's NAME.expect.json this test reads.
type expectation struct {
	File     string `json:"file"`
	Ports    []int  `json:"ports"`
	Findings []struct {
		Rule          string  `json:"rule"`
		Severity      string  `json:"severity"`
		Client        string  `json:"client"`
		Broker        string  `json:"broker"`
		Frame         int64   `json:"frame"`
		RelatedFrames []int64 `json:"related_frames"`
	} `json:"findings"`
	Connections []connectionJSON `json:"connections"`
	Brokers     []brokerJSON     `json:"brokers"`
}

// analysis is the part of `analyze -o json` this test reads.
type analysis struct {
	SchemaVersion int `json:"schema_version"`
	Findings      []struct {
		Rule          string  `json:"rule"`
		Severity      string  `json:"severity"`
		Frame         int64   `json:"frame"`
		RelatedFrames []int64 `json:"related_frames"`
		Connection    struct {
			Client string `json:"client"`
			Broker string `json:"broker"`
		} `json:"connection"`
	} `json:"findings"`
	Connections []connectionJSON `json:"connections"`
	Brokers     []brokerJSON     `json:"brokers"`
}

func str(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// TestAnalyzeSamples runs the built binary on every committed scenario and
// requires exactly the scenario's expected findings (rule, severity,
// client, broker, frame), the profile of every connection and the verdict
// of every broker. The expectations were written from docs/design/rules.md by the
// scenario generator, not from the engine's output.
func TestAnalyzeSamples(t *testing.T) {
	exps, _ := filepath.Glob("../../samples/captures/*.expect.json")
	if len(exps) < 40 {
		t.Fatalf("%d scenarios under samples/captures: the corpus is missing", len(exps))
	}
	for _, path := range exps {
		name := strings.TrimSuffix(filepath.Base(path), ".expect.json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var exp expectation
			if err := json.Unmarshal(raw, &exp); err != nil {
				t.Fatal(err)
			}
			var ports []string
			for _, p := range exp.Ports {
				ports = append(ports, strconv.Itoa(p))
			}
			capture := filepath.Join(filepath.Dir(path), exp.File)
			out, stderr, code := runKidscope(t, "analyze", "-o", "json", "-p", strings.Join(ports, ","), capture)
			wantCode := 0
			for _, f := range exp.Findings {
				if f.Severity == "error" {
					wantCode = 1
				}
			}
			if code != wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, wantCode, stderr)
			}
			var got analysis
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("analyze -o json: %v", err)
			}
			var want, have []string
			for _, f := range exp.Findings {
				want = append(want, fmt.Sprintf("%s %s %s→%s frame %d related %v", f.Rule, f.Severity, f.Client, f.Broker, f.Frame, f.RelatedFrames))
			}
			for _, f := range got.Findings {
				// The scenario lists the related frames the rules name; the
				// report adds the answering response's frame.
				rel := f.RelatedFrames
				for _, e := range exp.Findings {
					if e.Rule == f.Rule && e.Frame == f.Frame && e.Client == f.Connection.Client {
						rel = slices.DeleteFunc(slices.Clone(rel), func(x int64) bool { return !slices.Contains(e.RelatedFrames, x) })
					}
				}
				have = append(have, fmt.Sprintf("%s %s %s→%s frame %d related %v", f.Rule, f.Severity, f.Connection.Client, f.Connection.Broker, f.Frame, rel))
			}
			sameSet(t, "findings", want, have)
			checkGapsAddUp(t, []byte(out))
			sameSet(t, "connections", connectionLines(exp.Connections), connectionLines(got.Connections))
			sameSet(t, "brokers", brokerLines(exp.Brokers), brokerLines(got.Brokers))
		})
	}
}

func connectionLines(cs []connectionJSON) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s→%s profile %s mid-stream %v", c.Client, c.Broker, str(c.Profile), c.MidStream))
	}
	return out
}

func brokerLines(bs []brokerJSON) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Broker+" "+b.KIP1313)
	}
	return out
}

func sameSet(t *testing.T, what string, want, have []string) {
	t.Helper()
	sort.Strings(want)
	sort.Strings(have)
	if strings.Join(want, "\n") != strings.Join(have, "\n") {
		t.Errorf("%s:\n got:\n  %s\n want:\n  %s", what, strings.Join(have, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestAnalyzeExitCodesAndFilters checks --fail-on, --rule, --skip-rule,
// --min-severity, the resource flags and bad usage.
func TestAnalyzeExitCodesAndFilters(t *testing.T) {
	capture := "../../samples/captures/hdr-acc-client-id-repeated.pcapng" // one warning
	cases := []struct {
		args []string
		code int
		n    int // findings in the JSON
	}{
		{nil, 0, 1},
		{[]string{"--fail-on", "warning"}, 1, 1},
		{[]string{"--fail-on", "never", "--min-severity", "error"}, 0, 0},
		{[]string{"--rule", "telemetry-*"}, 0, 0},
		{[]string{"--rule", "header-*", "--fail-on", "warning"}, 1, 1},
		{[]string{"--skip-rule", "header-client-id-repeated", "--fail-on", "warning"}, 0, 0},
		{[]string{"--rule", "no-such-rule"}, 2, -1},
		{[]string{"--profile", "nonsense"}, 2, -1},
		{[]string{"--min-severity", "loud"}, 2, -1},
		{[]string{"--workers", "1", "--memory-limit", "0", "--max-resync-buffer", "1MiB"}, 0, 1},
		{[]string{"--workers", "5", "--memory-limit", "64MiB", "--max-buffer-per-connection", "8"}, 0, 1},
		{[]string{"--workers", "-1"}, 2, -1},
		{[]string{"--workers", "0"}, 2, -1},
		{[]string{"--memory-limit", "lots"}, 2, -1},
		{[]string{"--max-resync-buffer", "0"}, 2, -1},
		{[]string{"--max-body-buffer", "0"}, 2, -1},
		{[]string{"--max-body-buffer", "much"}, 2, -1},
		{[]string{"--max-body-buffer", "-1MiB"}, 2, -1},
		{[]string{"--workers", "3", "--max-body-buffer", "1KiB"}, 0, 1},
		{[]string{"--max-frame", "-5"}, 2, -1},
		{[]string{"--max-frame", "0"}, 2, -1},
		{[]string{"--max-frame", "2000000000"}, 2, -1},
		{[]string{"--max-connections", "0"}, 2, -1},
		{[]string{"--max-buffer", "-1"}, 2, -1},
		{[]string{"--max-buffer-per-connection", "0"}, 2, -1},
		{[]string{"--max-frame", "1073741824", "--max-connections", "1", "--max-buffer", "1", "--max-buffer-per-connection", "1"}, 0, 1},
	}
	for _, c := range cases {
		args := append([]string{"analyze", "-o", "json"}, c.args...)
		out, stderr, code := runKidscope(t, append(args, capture)...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, code, c.code, stderr)
			continue
		}
		if c.n < 0 {
			if msg, ok := usageMessage(stderr, "analyze"); !ok {
				t.Errorf("%v: want one error line and the usage, got %q", c.args, stderr)
			} else if strings.Contains(msg, "strconv") {
				t.Errorf("%v: a Go parse error: %q", c.args, msg)
			}
			continue
		}
		var got analysis
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if len(got.Findings) != c.n {
			t.Errorf("%v: %d findings, want %d", c.args, len(got.Findings), c.n)
		}
	}
	if _, stderr, code := runKidscope(t, "analyze", "no-such-file.pcap"); code != 2 || !strings.Contains(stderr, "no-such-file.pcap") {
		t.Errorf("missing file: exit %d, %q", code, stderr)
	}
}

// TestCaptureFilterFlags: --filter and --bpf-raw select frames of files the
// same way, and a bad filter is one error line.
func TestCaptureFilterFlags(t *testing.T) {
	capture := "../../samples/captures/profile-auto-mix.pcapng"
	clients := func(args ...string) map[string]bool {
		out, stderr, code := runKidscope(t, append(append([]string{"frames", "-o", "csv"}, args...), capture)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		got := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			got[strings.Split(line, ",")[2]] = true
		}
		return got
	}
	all := clients()
	if len(all) < 3 {
		t.Fatalf("the capture has %d clients", len(all))
	}
	one := clients("-f", "host 10.0.1.20 and tcp port 9092")
	if len(one) != 1 || !one["10.0.1.20:50110"] {
		t.Errorf("-f host: clients %v", one)
	}
	prog, err := filter.Compile("host 10.0.1.21", layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := prog.Raw()
	text := fmt.Sprintf("%d\n", len(raw))
	for _, r := range raw {
		text += fmt.Sprintf("%d %d %d %d\n", r.Op, r.Jt, r.Jf, r.K)
	}
	rawFile := filepath.Join(t.TempDir(), "prog.ddd")
	if err := os.WriteFile(rawFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{text, rawFile} {
		got := clients("--bpf-raw", arg)
		if len(got) != 1 || !got["10.0.1.21:44782"] {
			t.Errorf("--bpf-raw: clients %v", got)
		}
	}
	if _, stderr, code := runKidscope(t, "analyze", "-f", "port x", capture); code != 2 || !strings.Contains(stderr, "position 6") {
		t.Errorf("bad filter: exit %d, %q", code, stderr)
	} else if _, ok := usageMessage(stderr, "analyze"); !ok {
		t.Errorf("bad filter: want one error line and the usage, got %q", stderr)
	}
}

// checkGapsAddUp requires the summary's gaps to be the sum of the
// connections' gaps, and every connection with a stream-gap finding to
// count one (the connections table once said 0 where the summary said 1).
func checkGapsAddUp(t *testing.T, out []byte) {
	t.Helper()
	var a struct {
		Summary struct {
			Gaps int `json:"gaps"`
		} `json:"summary"`
		Connections []struct {
			ID   int `json:"id"`
			Gaps int `json:"gaps"`
		} `json:"connections"`
		Findings []struct {
			Rule         string `json:"rule"`
			ConnectionID int    `json:"connection_id"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	sum := 0
	gaps := map[int]int{}
	for _, c := range a.Connections {
		sum += c.Gaps
		gaps[c.ID] = c.Gaps
	}
	if sum != a.Summary.Gaps {
		t.Errorf("summary: %d gaps; the connections: %d in all", a.Summary.Gaps, sum)
	}
	for _, f := range a.Findings {
		if f.Rule == "stream-gap" && gaps[f.ConnectionID] == 0 {
			t.Errorf("connection %d: a stream-gap finding, 0 gaps in the connections table", f.ConnectionID)
		}
	}
}
