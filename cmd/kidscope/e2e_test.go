package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// binary is the kidscope binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	if out := os.Getenv(rssLauncherEnv); out != "" {
		os.Exit(launchMeasured(out, os.Args[1:]))
	}
	if os.Getenv(asKidscopeEnv) != "" {
		startConfineProbe()
		main()
	}
	dir, err := os.MkdirTemp("", "kidscope-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "kidscope")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build kidscope: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runKidscope runs the binary and returns stdout, stderr and the exit code.
func runKidscope(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run kidscope: %v", err)
	}
	return stdout.String(), stderr.String(), code
}

// message is one Kafka message as both tools can name it.
type message struct {
	frame    string
	request  bool
	key      string
	version  string
	corr     string
	clientID string
}

func (m message) String() string {
	if m.request {
		return fmt.Sprintf("frame %s request key %s v%s corr %s client %q", m.frame, m.key, m.version, m.corr, m.clientID)
	}
	return fmt.Sprintf("frame %s response corr %s", m.frame, m.corr)
}

// kidscopeMessages runs `kidscope frames -o csv` on a capture.
func kidscopeMessages(t *testing.T, file string, ports string) []message {
	t.Helper()
	out, stderr, code := runKidscope(t, "frames", "-o", "csv", "-p", ports, file)
	if code != 0 {
		t.Fatalf("kidscope frames %s: exit %d: %s", file, code, stderr)
	}
	return framesCSV(t, out)
}

// framesCSV reads the output of `kidscope frames -o csv`.
func framesCSV(t *testing.T, out string) []message {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("kidscope frames csv: %v", err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	var msgs []message
	for _, r := range rows[1:] {
		m := message{frame: r[col["frame"]], request: r[col["direction"]] == "request", corr: r[col["correlation_id"]]}
		if m.request {
			m.key, m.version, m.clientID = r[col["api_key"]], r[col["api_version"]], r[col["client_id"]]
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// tsharkMessages runs tshark's Kafka dissector on a capture, with Kafka
// decoded on the given ports, and lists the messages it found.
func tsharkMessages(t *testing.T, file string, ports []string) []message {
	t.Helper()
	cmd := exec.Command("tshark", tsharkArgs(file, ports)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v: %s", file, err, stderr.String())
	}
	return tsharkFields(string(out))
}

// tsharkArgs are the arguments of the tshark command of tsharkMessages.
func tsharkArgs(file string, ports []string) []string {
	args := []string{"-r", file, "-o", "tcp.reassemble_out_of_order:TRUE"}
	for _, p := range ports {
		args = append(args, "-d", "tcp.port=="+p+",kafka")
	}
	return append(args, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|",
		"-e", "frame.number", "-e", "kafka.request_key", "-e", "kafka.api_version", "-e", "kafka.correlation_id",
		"-e", "kafka.client_id", "-e", "kafka.request_frame")
}

// tsharkFields reads the output of the tshark command of tsharkMessages.
func tsharkFields(out string) []message {
	var msgs []message
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.Split(line, "\t")
		for len(f) < 6 {
			f = append(f, "")
		}
		if f[3] == "" {
			continue
		}
		// Several PDUs in one frame come as |-separated lists; requests
		// carry a key, responses do not.
		keys, vers, corrs, cids := split(f[1]), split(f[2]), split(f[3]), split(f[4])
		nreq := len(keys)
		for i, corr := range corrs {
			if i < nreq {
				m := message{frame: f[0], request: true, key: keys[i], corr: corr}
				if i < len(vers) {
					m.version = vers[i]
				}
				if i < len(cids) {
					m.clientID = cids[i]
				}
				msgs = append(msgs, m)
			} else {
				msgs = append(msgs, message{frame: f[0], corr: corr})
			}
		}
	}
	return msgs
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}

// keys are the messages' lines, sorted.
func keys(ms []message) []string {
	out := messageLines(ms)
	sort.Strings(out)
	return out
}

// messageLines are the messages' lines, in order.
func messageLines(msgs []message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.String()
	}
	return out
}

// compareMessages requires kidscope's messages to include every message
// tshark lists, with the same fields, and (when exact) nothing more.
func compareMessages(t *testing.T, file string, ourMsgs, theirMsgs []message, exact bool) {
	t.Helper()
	ours, theirs := keys(ourMsgs), keys(theirMsgs)
	have := map[string]int{}
	for _, k := range ours {
		have[k]++
	}
	missing := 0
	for _, k := range theirs {
		if have[k] == 0 {
			missing++
			if missing <= 10 {
				t.Errorf("%s: tshark has %s; kidscope does not", filepath.Base(file), k)
			}
			continue
		}
		have[k]--
	}
	if missing > 10 {
		t.Errorf("%s: %d messages missing in all", filepath.Base(file), missing)
	}
	if exact {
		extra := 0
		for k, n := range have {
			if n > 0 {
				extra += n
				if extra <= 10 {
					t.Errorf("%s: kidscope has %s; tshark does not", filepath.Base(file), k)
				}
			}
		}
	}
	if len(theirs) == 0 {
		t.Errorf("%s: tshark found no Kafka message: the comparison is empty", file)
	}
	t.Logf("%s: kidscope %d messages, tshark %d", filepath.Base(file), len(ours), len(theirs))
}

// The real-client captures under testdata/real are compared with tshark,
// and their analysis with their expectations, by TestRealCaptures in
// internal/realtraffic (their broker ports are in their sidecars).
