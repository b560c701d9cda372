package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeveralInputsOneBad: with a good capture among a missing and an
// empty file, the good one is read and reported, each bad one is named
// once on stderr and among the report's input problems, and the exit code
// is that of an input problem.
func TestSeveralInputsOneBad(t *testing.T) {
	good := "../../samples/captures/hdr-acc-client-id-repeated.pcapng" // one warning
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pcap")
	empty := filepath.Join(dir, "empty.pcap")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantProblems := []string{
		"open " + missing + ": no such file or directory",
		"read " + empty + ": not a pcap or pcapng file (file is empty)",
	}
	for _, args := range [][]string{
		{"analyze", "-o", "json"},
		{"analyze", "-o", "json", "--workers", "4"},
		{"analyze", "-o", "table"},
		{"frames", "-o", "csv"},
	} {
		out, stderr, code := runKidscope(t, append(args, missing, good, empty)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
		for _, p := range wantProblems {
			if n := strings.Count(stderr, "kidscope: "+p+"\n"); n != 1 {
				t.Errorf("%v: stderr says %q %d times:\n%s", args, p, n, stderr)
			}
		}
		switch args[2] {
		case "json":
			var got struct {
				analysis
				Summary struct {
					Files    []string `json:"files"`
					Packets  int64    `json:"packets"`
					Problems []string `json:"problems"`
				} `json:"summary"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			if len(got.Findings) != 1 || got.Summary.Packets == 0 || len(got.Summary.Files) != 3 {
				t.Errorf("%v: %d findings, %d packets, files %v: want the good capture's one finding", args, len(got.Findings), got.Summary.Packets, got.Summary.Files)
			}
			if strings.Join(got.Summary.Problems, "\n") != strings.Join(wantProblems, "\n") {
				t.Errorf("%v: problems %q, want %q", args, got.Summary.Problems, wantProblems)
			}
		case "table":
			flat := strings.Join(strings.Fields(out), " ")
			if !strings.Contains(out, "header-client-id-repeated") || !strings.Contains(flat, "missing.pcap: no such file or directory") ||
				!strings.Contains(flat, "empty.pcap: not a pcap or pcapng file (file is empty)") {
				t.Errorf("%v: the report lacks the finding or the problems:\n%s", args, out)
			}
		case "csv":
			if len(framesCSV(t, out)) == 0 {
				t.Errorf("%v: no frames listed", args)
			}
		}
	}
	// Nothing to read: one line per input, and no report.
	out, stderr, code := runKidscope(t, "analyze", missing, empty)
	if want := "kidscope: " + wantProblems[0] + "\nkidscope: " + wantProblems[1] + "\n"; code != 2 || out != "" || stderr != want {
		t.Errorf("no good input: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
