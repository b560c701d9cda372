package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/internal/realcapture"
	"github.com/kidscope/kidscope/internal/wireshark"
)

// committedDir is where the committed captures and their expectations
// live, from this package's directory.
var committedDir = filepath.Join("..", "..", "testdata", "real")

// freshDirEnv names a directory of freshly made captures (scripts/
// realclients.sh makes every one of them) that TestRealCaptures checks
// instead of the committed ones, against the committed expectations.
const freshDirEnv = "KIDSCOPE_REAL_DIR"

// kidscopeBin is the kidscope binary, built once by TestMain.
var kidscopeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kidscope-realtraffic")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kidscopeBin = filepath.Join(dir, "kidscope")
	if out, err := exec.Command("go", "build", "-o", kidscopeBin, "../../cmd/kidscope").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build kidscope: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// expectation is a capture's hand-written NAME.expect.json: what the capture
// must show, written from docs/design/rules.md and from what the client and the broker
// do on the wire, not from kidscope's output.
type expectation struct {
	Scenario string `json:"scenario"`
	Shows    string `json:"shows"`
	APIKeys  struct {
		// Required keys must have requests in the capture; any key
		// neither required nor optional fails.
		Required []int16 `json:"required"`
		Optional []int16 `json:"optional"`
	} `json:"api_keys"`
	// Versions, where given, is the exact set of versions the requests
	// of a key use (by key, as a decimal string).
	Versions map[string][]int16 `json:"versions"`
	// Flexible is "none" (every request on header v1: kafkajs) or
	// "some".
	Flexible string `json:"flexible"`
	// HeaderIDs is how many requests carry a KIP-1313 header ID (tag 0).
	HeaderIDs int `json:"header_ids"`
	// TerminatingPushes is how many PushTelemetry requests set
	// Terminating.
	TerminatingPushes int `json:"terminating_pushes"`
	// EmptyMemberHeartbeats, where given, is how many
	// ConsumerGroupHeartbeat v1+ requests have an empty MemberId.
	EmptyMemberHeartbeats *int `json:"empty_member_heartbeats"`
	// ClientKind is what every connection must be: "old" (sends no
	// header IDs) or "new".
	ClientKind string `json:"client_kind"`
	// BrokerVerdict is the KIP-1313 verdict (docs/design/rules.md §5) every broker in
	// the capture must get.
	BrokerVerdict string `json:"broker_verdict"`
	// Findings are the error and warning findings the capture deserves;
	// any other error or warning fails. Info findings are not checked
	// unless listed.
	Findings []expectedFinding `json:"findings"`
	Notes    []string          `json:"notes"`
}

type expectedFinding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Min      int    `json:"min"`
	Max      int    `json:"max"` // 0: no upper bound
	Why      string `json:"why"`
	// Pending marks a rule that may not be in this kidscope's catalogue
	// yet (another branch adds it): while `kidscope rules RULE` does not
	// know it, its count is not required. A rule unknown to the catalogue
	// and not pending is a typo, and fails.
	Pending bool `json:"pending"`
}

func readExpectation(t *testing.T, name string) *expectation {
	t.Helper()
	path := filepath.Join(committedDir, name+".expect.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: no expectation: %v (every capture under testdata/real needs one)", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var e expectation
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if e.Scenario != name {
		t.Fatalf("%s: scenario %q", path, e.Scenario)
	}
	return &e
}

// TestRealCaptures checks every committed capture under testdata/real (or,
// with KIDSCOPE_REAL_DIR set, every capture in that directory) against its
// expectation: the harness's own count of its requests, kidscope's analysis
// (findings, broker verdicts, connections), and kidscope's frames beside
// tshark's.
func TestRealCaptures(t *testing.T) {
	if dir := os.Getenv(freshDirEnv); dir != "" {
		t.Logf("checking the fresh captures in %s", dir)
		checkDir(t, dir, true)
		return
	}
	checkDir(t, committedDir, true)
}

// checkDir checks every capture in dir. With complete, every committed
// expectation must have its capture in dir too.
func checkDir(t *testing.T, dir string, complete bool) {
	t.Helper()
	files, metas, err := realcapture.Captures(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no captures in %s", dir)
	}
	have := map[string]bool{}
	for _, f := range files {
		m := metas[f]
		name := strings.TrimSuffix(filepath.Base(f), ".pcap")
		have[name] = true
		t.Run(name, func(t *testing.T) {
			if m.Scenario != name {
				t.Fatalf("sidecar names scenario %q", m.Scenario)
			}
			checkCapture(t, f, m, readExpectation(t, name))
		})
	}
	if complete {
		exps, _ := filepath.Glob(filepath.Join(committedDir, "*.expect.json"))
		for _, e := range exps {
			if name := strings.TrimSuffix(filepath.Base(e), ".expect.json"); !have[name] {
				t.Errorf("%s has no capture in %s", e, dir)
			}
		}
	}
}

func checkCapture(t *testing.T, file string, m realcapture.Meta, e *expectation) {
	st, err := realcapture.ReadRequests(file, m.Ports)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s × %s, %s: %d frames, %d connections; %s", m.Client, m.Broker, m.Role, st.Frames, st.Connections, m.Summary)
	checkHarnessCount(t, st, e)
	a := analyze(t, file, m)
	checkAnalysis(t, st, a, e)
	frames := kidscopeFrames(t, file, m)
	checkFramesCount(t, st, frames)
	tshark := wireshark.Path()
	if tshark == "" {
		if os.Getenv("CI") != "" {
			t.Error("tshark is not installed; .ci/run installs it")
		}
		t.Log("tshark is not installed: no comparison with it")
		return
	}
	tf := runTshark(t, tshark, file, m.Ports)
	compareWithTshark(t, frames, tf)
	compareErrorCodes(t, frames, tf)
}

// checkHarnessCount checks what the harness's own reading of the file (its
// reassembly, request headers, kmsg for a few bodies) finds against the
// expectation.
func checkHarnessCount(t *testing.T, st *realcapture.FileStats, e *expectation) {
	t.Helper()
	if st.Frames == 0 || st.BrokerTCP != st.Frames {
		t.Errorf("%d frames, %d of them TCP to or from a broker port; want all of them, and some", st.Frames, st.BrokerTCP)
	}
	for _, k := range e.APIKeys.Required {
		if st.Requests[k] == 0 {
			t.Errorf("no %d %s request; the scenario is there to show one", k, kmsg.NameForKey(k))
		}
	}
	for _, k := range realcapture.SortedKeys(st.Requests) {
		if !slices.Contains(e.APIKeys.Required, k) && !slices.Contains(e.APIKeys.Optional, k) {
			t.Errorf("%d %s requests (%d): a key the expectation does not name", k, kmsg.NameForKey(k), st.Requests[k])
		}
	}
	for ks, want := range e.Versions {
		var k int16
		if _, err := fmt.Sscan(ks, &k); err != nil {
			t.Fatalf("versions: key %q", ks)
		}
		if got := realcapture.SortedKeys(st.Versions[k]); !slices.Equal(got, want) {
			t.Errorf("%d %s requests in versions %v, want %v", k, kmsg.NameForKey(k), got, want)
		}
	}
	switch e.Flexible {
	case "none":
		if st.Flexible != 0 {
			t.Errorf("%d requests in flexible versions, want none", st.Flexible)
		}
	case "some":
		if st.Flexible == 0 {
			t.Errorf("no request in a flexible version")
		}
	default:
		t.Errorf("expectation: flexible %q, want none or some", e.Flexible)
	}
	if st.HeaderIDs != e.HeaderIDs {
		t.Errorf("%d requests with a header instance ID (tag 0), want %d", st.HeaderIDs, e.HeaderIDs)
	}
	if st.TerminatingPushes != e.TerminatingPushes {
		t.Errorf("%d terminating PushTelemetry requests, want %d", st.TerminatingPushes, e.TerminatingPushes)
	}
	if e.EmptyMemberHeartbeats != nil && st.EmptyMemberHeartbeats != *e.EmptyMemberHeartbeats {
		t.Errorf("%d ConsumerGroupHeartbeat v1+ requests with an empty member ID, want %d", st.EmptyMemberHeartbeats, *e.EmptyMemberHeartbeats)
	}
}

// analysis is the part of `kidscope analyze -o json` the checks read.
type analysis struct {
	Summary struct {
		Connections int64 `json:"connections"`
		Requests    int64 `json:"requests"`
		Gaps        int64 `json:"gaps"`
		Resyncs     int64 `json:"resyncs"`
		Unmatched   int64 `json:"unmatched"`
	} `json:"summary"`
	Findings []struct {
		Rule     string `json:"rule"`
		Severity string `json:"severity"`
		Frame    int64  `json:"frame"`
		APIName  string `json:"api_name"`
		Message  string `json:"message"`
	} `json:"findings"`
	Connections []struct {
		Client    string  `json:"client"`
		Broker    string  `json:"broker"`
		NewClient bool    `json:"new_client"`
		MidStream bool    `json:"mid_stream"`
		Profile   *string `json:"profile"`
		Gaps      int64   `json:"gaps"`
	} `json:"connections"`
	Brokers []struct {
		Broker  string `json:"broker"`
		KIP1313 string `json:"kip1313"`
	} `json:"brokers"`
}

func runKidscope(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(kidscopeBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kidscope %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func analyze(t *testing.T, file string, m realcapture.Meta) *analysis {
	t.Helper()
	out := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--no-progress", "-p", m.PortList(), file)
	var a analysis
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("analyze JSON: %v", err)
	}
	return &a
}

// ruleKnown reports whether this kidscope's catalogue has the rule
// (`kidscope rules ID` succeeds).
var ruleKnown = sync.OnceValue(func() func(string) bool {
	var mu sync.Mutex
	known := map[string]bool{}
	return func(rule string) bool {
		mu.Lock()
		defer mu.Unlock()
		k, ok := known[rule]
		if !ok {
			k = exec.Command(kidscopeBin, "rules", rule).Run() == nil
			known[rule] = k
		}
		return k
	}
})

func checkAnalysis(t *testing.T, st *realcapture.FileStats, a *analysis, e *expectation) {
	t.Helper()
	if a.Summary.Gaps != 0 || a.Summary.Resyncs != 0 {
		t.Errorf("kidscope reports %d gaps and %d resyncs in a lossless loopback capture", a.Summary.Gaps, a.Summary.Resyncs)
	}
	if int(a.Summary.Connections) != st.Connections {
		t.Errorf("kidscope reports %d connections, the harness counted %d", a.Summary.Connections, st.Connections)
	}
	total := 0
	for _, n := range st.Requests {
		total += n
	}
	if int(a.Summary.Requests) != total {
		t.Errorf("kidscope reports %d requests, the harness counted %d", a.Summary.Requests, total)
	}
	for _, c := range a.Connections {
		if c.MidStream {
			t.Errorf("connection %s -> %s: mid-stream, but every connection starts with its SYN", c.Client, c.Broker)
		}
		if got := map[bool]string{false: "old", true: "new"}[c.NewClient]; got != e.ClientKind {
			t.Errorf("connection %s -> %s: a %s client, want %s", c.Client, c.Broker, got, e.ClientKind)
		}
	}
	if len(a.Brokers) == 0 {
		t.Error("kidscope lists no broker")
	}
	for _, b := range a.Brokers {
		if b.KIP1313 != e.BrokerVerdict {
			t.Errorf("broker %s: KIP-1313 verdict %q, want %q", b.Broker, b.KIP1313, e.BrokerVerdict)
		}
	}

	expected := map[string]expectedFinding{}
	for _, x := range e.Findings {
		if !ruleKnown()(x.Rule) && !x.Pending {
			t.Errorf("expectation names rule %s, which kidscope's catalogue does not have (a typo? mark it pending if another branch adds it)", x.Rule)
		}
		expected[x.Rule] = x
	}
	count := map[string]int{}
	for _, f := range a.Findings {
		count[f.Rule]++
		x, ok := expected[f.Rule]
		if ok {
			if x.Severity != "" && x.Severity != f.Severity {
				t.Errorf("frame %d: %s is %s, the expectation says %s", f.Frame, f.Rule, f.Severity, x.Severity)
			}
			continue
		}
		if f.Severity == "error" || f.Severity == "warning" {
			t.Errorf("frame %d: %s %s (%s), which the client and broker do not deserve: %s", f.Frame, f.Severity, f.Rule, f.APIName, f.Message)
		}
	}
	for _, x := range e.Findings {
		n := count[x.Rule]
		if !ruleKnown()(x.Rule) {
			t.Logf("rule %s is not in this kidscope's catalogue yet: want %d..%d of it (%s), not checked", x.Rule, x.Min, x.Max, x.Why)
			continue
		}
		if n < x.Min || (x.Max > 0 && n > x.Max) {
			t.Errorf("%d %s findings, want %d..%d: %s", n, x.Rule, x.Min, x.Max, x.Why)
		}
	}
}

// frameMsg is one message of `kidscope frames -o json`.
type frameMsg struct {
	Frame         int    `json:"frame"`
	Direction     string `json:"direction"`
	APIKey        *int16 `json:"api_key"`
	APIVersion    *int16 `json:"api_version"`
	CorrelationID int32  `json:"correlation_id"`
	ErrorCode     *int16 `json:"error_code"`
	// ErrorCodes is every distinct error code of a response.
	ErrorCodes []struct {
		Code int16  `json:"code"`
		Name string `json:"name"`
	} `json:"error_codes"`
}

func kidscopeFrames(t *testing.T, file string, m realcapture.Meta) []frameMsg {
	t.Helper()
	out := runKidscope(t, "frames", "-o", "json", "--no-progress", "-p", m.PortList(), file)
	var doc struct {
		Frames []frameMsg `json:"frames"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("frames JSON: %v", err)
	}
	return doc.Frames
}

// checkFramesCount requires kidscope's frames to list, by API key and
// version, the very requests the harness's own reader counted.
func checkFramesCount(t *testing.T, st *realcapture.FileStats, frames []frameMsg) {
	t.Helper()
	got := map[[2]int16]int{}
	for _, f := range frames {
		if f.Direction == "request" && f.APIKey != nil && f.APIVersion != nil {
			got[[2]int16{*f.APIKey, *f.APIVersion}]++
		}
	}
	want := map[[2]int16]int{}
	for k, vs := range st.Versions {
		for v, n := range vs {
			want[[2]int16{k, v}] = n
		}
	}
	for kv, n := range want {
		if got[kv] != n {
			t.Errorf("frames lists %d %s v%d requests, the harness counted %d", got[kv], kmsg.NameForKey(kv[0]), kv[1], n)
		}
	}
	for kv, n := range got {
		if want[kv] == 0 {
			t.Errorf("frames lists %d %s v%d requests, the harness counted none", n, kmsg.NameForKey(kv[0]), kv[1])
		}
	}
}

// sortedStrings returns a sorted copy.
func sortedStrings(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}
