package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/internal/synth"
	"github.com/kidscope/kidscope/internal/wireshark"
)

// synthMessages lists the messages of a synthetic capture as both tools name
// them.
func synthMessages(b *synth.Builder) []message {
	var out []message
	for _, m := range b.Msgs {
		msg := message{frame: strconv.FormatInt(m.Frame, 10), request: m.Request, corr: strconv.Itoa(int(m.Corr))}
		if m.Request {
			msg.key, msg.version, msg.clientID = strconv.Itoa(int(m.Key)), strconv.Itoa(int(m.Version)), m.ClientID
		}
		out = append(out, msg)
	}
	return out
}

// sameMessageList requires got and want to hold the same messages.
func sameMessageList(t *testing.T, what string, got, want []message) {
	t.Helper()
	g, w := keys(got), keys(want)
	have := map[string]int{}
	for _, k := range g {
		have[k]++
	}
	for _, k := range w {
		if have[k] == 0 {
			t.Errorf("%s: missing %s", what, k)
			continue
		}
		have[k]--
	}
	for k, n := range have {
		if n > 0 {
			t.Errorf("%s: %d× unexpected %s", what, n, k)
		}
	}
}

// writeSynthVariant writes the synthetic capture called name into dir.
func writeSynthVariant(t *testing.T, dir, name string) (string, *synth.Builder) {
	t.Helper()
	for _, v := range synth.Variants() {
		if v.Name == name {
			path := filepath.Join(dir, v.Name+v.Ext)
			b, err := v.Write(path)
			if err != nil {
				t.Fatal(err)
			}
			return path, b
		}
	}
	t.Fatalf("no variant %s", name)
	return "", nil
}

// tsharkCutShort runs tsharkMessages' command on a truncated file: tshark
// exits 2 after listing the frames before the cut.
func tsharkCutShort(t *testing.T, file string, ports []string) []message {
	t.Helper()
	cmd := exec.Command("tshark", tsharkArgs(file, ports)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "cut short") {
		t.Fatalf("tshark on a truncated file: %v: %s", err, stderr.String())
	}
	return tsharkFields(string(out))
}

// TestFramesAgreeWithTsharkOnSyntheticTraffic writes the synthetic corpus
// (every link type, IPv6, VLAN, pcapng with two interfaces, gzip,
// nanosecond pcap, a truncated file, snap-length cuts, padding, lost,
// reordered, duplicated and overlapping segments, several frames per
// segment, a frame split at every header offset, a capture that starts
// inside a frame, 4-tuple reuse) and requires `frames` to list exactly the
// messages the capture holds, and to agree with tshark wherever tshark
// decodes: exactly on clean captures; on lossy ones kidscope must list all
// tshark lists (tshark, reassembling out-of-order segments, stops at a lost
// segment); where the capture starts inside a frame kidscope must find
// more.
func TestFramesAgreeWithTsharkOnSyntheticTraffic(t *testing.T) {
	wireshark.Need(t)
	dir := t.TempDir()
	ports := []string{"9092"}
	for _, v := range synth.Variants() {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, v.Name+v.Ext)
			b, err := v.Write(path)
			if err != nil {
				t.Fatal(err)
			}
			var ours, theirs []message
			if v.Kind == synth.Truncated {
				out, _, code := runKidscope(t, "frames", "-o", "csv", path)
				if code != 2 {
					t.Errorf("exit %d on a truncated file, want 2", code)
				}
				ours, theirs = framesCSV(t, out), tsharkCutShort(t, path, ports)
			} else {
				ours, theirs = kidscopeMessages(t, path, "9092"), tsharkMessages(t, path, ports)
			}
			sameMessageList(t, "kidscope vs the capture", ours, synthMessages(b))
			compareMessages(t, path, ours, theirs, v.Kind == synth.Clean || v.Kind == synth.Truncated)
			if v.Kind == synth.MidStream {
				// tshark reads the first bytes, inside a Produce request,
				// as a frame size and loses the client side from there.
				var reqs, theirReqs int
				for _, m := range ours {
					if m.request {
						reqs++
					}
				}
				for _, m := range theirs {
					if m.request {
						theirReqs++
					}
				}
				if len(ours) <= len(theirs) || reqs <= theirReqs {
					t.Errorf("kidscope finds %d messages (%d requests), tshark %d (%d requests): want more",
						len(ours), reqs, len(theirs), theirReqs)
				}
			}
		})
	}
}

// TestFramesBadInput checks the exit code and the one-line message for
// inputs that cannot be read, and a file cut short: its messages before the
// cut are listed, one line names the file and the frame, and the exit code
// is 2.
func TestFramesBadInput(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("this is not a capture\n"), 0o644)
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("plain text, compressed\n"))
	zw.Close()
	gzText := filepath.Join(dir, "notes.txt.gz")
	os.WriteFile(gzText, gz.Bytes(), 0o644)
	for _, tc := range []struct{ name, file, says string }{
		{"not a capture", text, "not a pcap or pcapng file"},
		{"gzip of no capture", gzText, "not a pcap or pcapng file"},
		{"empty", empty, "empty"},
		{"missing", filepath.Join(dir, "missing.pcap"), "no such file"},
		{"directory", dir, "directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runKidscope(t, "frames", tc.file)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.file) || !strings.Contains(lines[0], tc.says) {
				t.Errorf("stderr %q: want one line naming %s and saying %q", stderr, tc.file, tc.says)
			}
		})
	}

	t.Run("truncated", func(t *testing.T) {
		path, b := writeSynthVariant(t, dir, "truncated")
		problem := regexp.MustCompile(`^kidscope: read ` + regexp.QuoteMeta(path) + `: frame ` +
			strconv.Itoa(b.TruncatedAt) + `: truncated file`)
		out, stderr, code := runKidscope(t, "frames", "-o", "json", path)
		if code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if len(lines) != 1 || !problem.MatchString(lines[0]) {
			t.Errorf("stderr %q: want one line naming the file and frame %d", stderr, b.TruncatedAt)
		}
		var doc framesJSONDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("json output of a truncated file: %v", err)
		}
		if len(doc.Frames) != len(b.Msgs) || len(b.Msgs) == 0 {
			t.Errorf("%d messages listed, want the %d before the cut", len(doc.Frames), len(b.Msgs))
		}
		// csv writes its summary on stderr too: one line more, and still
		// one line about the file.
		out, stderr, code = runKidscope(t, "frames", "-o", "csv", path)
		if code != 2 {
			t.Errorf("csv: exit %d, want 2", code)
		}
		sameMessageList(t, "csv", framesCSV(t, out), synthMessages(b))
		named := 0
		for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
			if strings.Contains(l, path) {
				named++
				if !problem.MatchString(l) {
					t.Errorf("csv: stderr line %q", l)
				}
			}
		}
		if named != 1 {
			t.Errorf("csv: stderr %q: want one line naming the file", stderr)
		}
	})
}

// framesJSONDoc is the JSON document of `frames -o json`.
type framesJSONDoc struct {
	SchemaVersion *int                         `json:"schema_version"`
	Frames        []map[string]json.RawMessage `json:"frames"`
	Summary       map[string]json.RawMessage   `json:"summary"`
}

// frameRecordFields are the names docs/design/cli.md gives a frames record.
var frameRecordFields = []string{"file", "frame", "client", "broker", "direction", "api_key", "api_name",
	"api_version", "correlation_id", "client_id", "instance_id", "error_code"}

// TestFramesOutputFormats checks that every output format of `frames`
// parses and carries every message of a capture with the documented field
// names.
func TestFramesOutputFormats(t *testing.T) {
	dir := t.TempDir()
	path, b := writeSynthVariant(t, dir, "ipv6")
	want := len(b.Msgs)
	checkRecord := func(t *testing.T, r map[string]json.RawMessage) {
		t.Helper()
		for _, f := range frameRecordFields {
			if _, ok := r[f]; !ok {
				t.Errorf("record without %q: %v", f, r)
			}
		}
	}

	t.Run("json", func(t *testing.T) {
		out, stderr, code := runKidscope(t, "frames", "-o", "json", path)
		if code != 0 || stderr != "" {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var doc framesJSONDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("json: %v", err)
		}
		if doc.SchemaVersion == nil || *doc.SchemaVersion != 1 {
			t.Errorf("schema_version %v, want 1", doc.SchemaVersion)
		}
		if len(doc.Frames) != want {
			t.Errorf("%d frames, want %d", len(doc.Frames), want)
		}
		for _, r := range doc.Frames {
			checkRecord(t, r)
		}
		// IPv6 endpoints are written [addr]:port.
		if len(doc.Frames) > 0 && string(doc.Frames[0]["client"]) != `"`+synth.Client6.String()+`"` {
			t.Errorf("client %s, want %q", doc.Frames[0]["client"], synth.Client6)
		}
		var reqs, resps int
		json.Unmarshal(doc.Summary["requests"], &reqs)
		json.Unmarshal(doc.Summary["responses"], &resps)
		if reqs+resps != want || reqs == 0 {
			t.Errorf("summary %d requests, %d responses; want %d messages", reqs, resps, want)
		}
	})

	t.Run("json without messages", func(t *testing.T) {
		out, _, code := runKidscope(t, "frames", "-o", "json", "-p", "9999", path)
		var doc framesJSONDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
			t.Fatalf("exit %d, json: %v: %q", code, err, out)
		}
		if doc.Frames == nil || len(doc.Frames) != 0 || doc.Summary == nil {
			t.Errorf("want an empty frames list and a summary: %q", out)
		}
	})

	t.Run("ndjson", func(t *testing.T) {
		out, _, code := runKidscope(t, "frames", "-o", "ndjson", path)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		frames, summaries := 0, 0
		for sc.Scan() {
			var r map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			switch string(r["kind"]) {
			case `"frame"`:
				if summaries > 0 {
					t.Error("a frame after the summary")
				}
				frames++
				checkRecord(t, r)
			case `"summary"`:
				summaries++
			default:
				t.Errorf("kind %s", r["kind"])
			}
		}
		if frames != want || summaries != 1 {
			t.Errorf("%d frames and %d summaries, want %d and 1", frames, summaries, want)
		}
	})

	t.Run("csv", func(t *testing.T) {
		out, stderr, code := runKidscope(t, "frames", "-o", "csv", path)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		// The CSV adds every distinct code of a response in one cell, then
		// the columns added since (at the end: scripts read by position).
		wantHeader := append(append([]string(nil), frameRecordFields...), "error_codes",
			"time", "connection_id", "request_frame", "response_frame", "latency")
		if strings.Join(rows[0], ",") != strings.Join(wantHeader, ",") {
			t.Errorf("header %v, want %v", rows[0], wantHeader)
		}
		if len(rows)-1 != want {
			t.Errorf("%d rows, want %d", len(rows)-1, want)
		}
		sameMessageList(t, "csv", framesCSV(t, out), synthMessages(b))
		if !strings.Contains(stderr, strconv.Itoa(want/2)+" requests") {
			t.Errorf("summary on stderr %q", stderr)
		}
	})

	t.Run("table", func(t *testing.T) {
		out, _, code := runKidscope(t, "frames", "-o", "table", path)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		// The file once, above the heading and its rows; the rows end at
		// the blank line before the connections.
		rows := 0
		lines := strings.Split(out, "\n")
		for _, l := range lines[min(2, len(lines)):] {
			if l == "" {
				break
			}
			rows++
		}
		if lines[0] != path || strings.Count(out, path) != 1 || !strings.HasPrefix(lines[1], "FRAME") ||
			rows != want || !strings.Contains(out, strconv.Itoa(want/2)+" requests") {
			t.Errorf("table with %d rows, want %d and a summary:\n%s", rows, want, out)
		}
	})
}

// TestFramesNamesSnapCutFrames: packets cut by the snap length are named
// on stderr with file and frame, and analysis goes on.
func TestFramesNamesSnapCutFrames(t *testing.T) {
	for _, v := range synth.Variants() {
		if v.Name != "snap-cut" {
			continue
		}
		path := filepath.Join(t.TempDir(), v.Name+v.Ext)
		if _, err := v.Write(path); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := runKidscope(t, "frames", "-o", "csv", path)
		if code != 0 || len(framesCSV(t, out)) == 0 {
			t.Fatalf("exit %d, output %q", code, out)
		}
		lines := 0
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, path+": frame ") && strings.Contains(l, "cut by the snap length") {
				lines++
			}
		}
		if lines != 2 {
			t.Errorf("want 2 lines naming the cut frames, got stderr:\n%s", stderr)
		}
		return
	}
	t.Fatal("no snap-cut variant in the corpus")
}
