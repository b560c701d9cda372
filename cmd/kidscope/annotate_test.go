package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/samples"
)

// needTshark skips a test that checks kidscope's files with tshark.
func needTshark(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("no tshark")
	}
}

// tsharkLines runs tshark and returns its output's lines, split at tabs.
func tsharkLines(t *testing.T, args ...string) [][]string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("tshark", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %q: %v: %s", args, err, stderr.String())
	}
	var lines [][]string
	for l := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			lines = append(lines, strings.Split(l, "\t"))
		}
	}
	return lines
}

// findingFrames analyses files as JSON and returns, per file index, the
// frames its findings name (the frame and the related ones) with the
// rules that name each.
func findingFrames(t *testing.T, args ...string) map[string]map[int64][]string {
	t.Helper()
	out, stderr, code := runKidscope(t, append([]string{"analyze", "-o", "json", "--fail-on", "never"}, args...)...)
	if code != 0 {
		t.Fatalf("analyze %q: exit %d: %s", args, code, stderr)
	}
	var doc struct {
		Findings []struct {
			Rule    string
			File    string
			Frame   int64
			Related []struct {
				File  string
				Frame int64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	m := map[string]map[int64][]string{}
	add := func(file string, frame int64, rule string) {
		if m[file] == nil {
			m[file] = map[int64][]string{}
		}
		m[file][frame] = append(m[file][frame], rule)
	}
	for _, f := range doc.Findings {
		add(f.File, f.Frame, f.Rule)
		for _, r := range f.Related {
			add(r.File, r.Frame, f.Rule)
		}
	}
	return m
}

// commentsOf are the packet comments tshark reads in a file, by frame.
func commentsOf(t *testing.T, file string) map[int64]string {
	t.Helper()
	m := map[int64]string{}
	for _, l := range tsharkLines(t, "-r", file, "-Y", "frame.comment", "-T", "fields", "-e", "frame.number", "-e", "frame.comment") {
		n, err := strconv.ParseInt(l[0], 10, 64)
		if err != nil || len(l) < 2 {
			t.Fatalf("tshark line %q", l)
		}
		m[n] = l[1]
	}
	return m
}

// checkComments: tshark shows a comment on exactly the frames the
// findings name, each naming the rules that name the frame.
func checkComments(t *testing.T, out string, want map[int64][]string) {
	t.Helper()
	got := commentsOf(t, out)
	for n, rules := range want {
		c, ok := got[n]
		if !ok {
			t.Errorf("%s: frame %d (%s) has no comment", out, n, strings.Join(rules, ", "))
			continue
		}
		for _, r := range rules {
			if !strings.Contains(c, "kidscope ") || !strings.Contains(c, " "+r) {
				t.Errorf("%s: frame %d's comment %q does not name %s", out, n, c, r)
			}
		}
	}
	for n, c := range got {
		if _, ok := want[n]; !ok && strings.Contains(c, "kidscope ") {
			t.Errorf("%s: frame %d has a kidscope comment and no finding: %q", out, n, c)
		}
	}
}

// frameFacts are what tshark says of each frame that an annotated copy
// must keep: time, lengths, interface and link type, protocols.
func frameFacts(t *testing.T, file string, extra ...string) [][]string {
	t.Helper()
	args := []string{"-r", file, "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch", "-e", "frame.len", "-e", "frame.cap_len",
		"-e", "frame.interface_id", "-e", "frame.protocols"}
	return tsharkLines(t, append(append(args, extra...), "-e", "frame.comment")...)
}

// TestAnnotateSamples: on every sample with findings, the annotated copy
// has kidscope's comments on exactly the findings' frames, as tshark
// reads it, and the same frames at the same times on the same links.
func TestAnnotateSamples(t *testing.T) {
	needTshark(t)
	dir := t.TempDir()
	ws, err := samples.WriteAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, w := range ws {
		if filepath.Ext(w.Path) != ".pcapng" {
			continue
		}
		name := filepath.Base(w.Path)
		want := findingFrames(t, w.Path)[w.Path]
		if len(want) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "annotated.pcapng")
			if _, stderr, code := runKidscope(t, "analyze", "--fail-on", "never", "--annotate", out, w.Path); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			checkComments(t, out, want)
			in, got := frameFacts(t, w.Path), frameFacts(t, out)
			if len(in) != len(got) {
				t.Fatalf("%d frames, want %d", len(got), len(in))
			}
			for i := range in {
				if !slices.Equal(in[i][:6], got[i][:6]) {
					t.Errorf("frame %d: %q, input %q", i+1, got[i][:6], in[i][:6])
				}
			}
			if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("mode: %v %v", fi.Mode(), err)
			}
		})
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d samples with findings", checked)
	}
}

// TestAnnotateKeepsComments: a capture's own packet comments survive the
// copy, beside kidscope's on the same frame; the section header says
// kidscope's version and command line.
func TestAnnotateKeepsComments(t *testing.T) {
	needTshark(t)
	if _, err := exec.LookPath("editcap"); err != nil {
		t.Skip("no editcap")
	}
	dir := t.TempDir()
	ws, err := samples.WriteAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := ""
	for _, w := range ws {
		if filepath.Base(w.Path) == "hdr-acc-changed.pcapng" {
			src = w.Path
		}
	}
	if src == "" {
		t.Fatal("no hdr-acc-changed sample")
	}
	in := filepath.Join(dir, "commented.pcapng")
	tmp := filepath.Join(dir, "tmp.pcapng")
	if out, err := exec.Command("editcap", "-a", "3:hello from the capturer", src, tmp).CombinedOutput(); err != nil {
		t.Fatalf("editcap: %v: %s", err, out)
	}
	if out, err := exec.Command("editcap", "-a", "12:seen by ops", tmp, in).CombinedOutput(); err != nil {
		t.Fatalf("editcap: %v: %s", err, out)
	}
	out := filepath.Join(dir, "annotated.pcapng")
	if _, stderr, code := runKidscope(t, "analyze", "--fail-on", "never", "--annotate", out, in); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := commentsOf(t, out)
	if got[3] != "hello from the capturer" {
		t.Errorf("frame 3: %q", got[3])
	}
	if !strings.HasPrefix(got[12], "seen by ops,kidscope error header-id-changed") {
		t.Errorf("frame 12: %q", got[12])
	}
	checkComments(t, out, findingFrames(t, in)[in])
	// The copy's capture comment is in the summary of its report.
	table, _, _ := runKidscope(t, "analyze", "--fail-on", "never", out)
	if !regexp.MustCompile(`(?m)^  comments +\S*annotated\.pcapng:\s+kidscope \(`).MatchString(table) {
		t.Errorf("no capture comment in the summary:\n%s", table)
	}
	capinfos, err := exec.Command("capinfos", out).Output()
	if err != nil {
		t.Skipf("capinfos: %v", err)
	}
	if !strings.Contains(string(capinfos), "kidscope ") || !strings.Contains(string(capinfos), "--annotate "+out) {
		t.Errorf("no capture comment of kidscope's:\n%s", capinfos)
	}
}

// TestAnnotateSecrets: the decryption secrets of a TLS capture are left
// out of the copy, which then decrypts in neither tshark nor kidscope;
// --write-secrets keeps them ahead of the packets, and both decrypt it.
func TestAnnotateSecrets(t *testing.T) {
	needTshark(t)
	in := "../../testdata/tls/violating-tls13.dsb.pcapng"
	keylog, err := os.ReadFile("../../testdata/tls/violating-tls13.keylog")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Fields(strings.SplitN(string(keylog), "\n", 2)[0])
	secret := first[len(first)-1]
	want := findingFrames(t, "-p", "37113", in)[in]
	if !slices.Contains(want[14], "header-id-changed") {
		t.Fatalf("the input's findings: %v", want)
	}
	for _, keep := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "annotated.pcapng")
		args := []string{"analyze", "-p", "37113", "--fail-on", "never", "--annotate", out, in}
		if keep {
			args = append(args, "--write-secrets")
		}
		_, stderr, code := runKidscope(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		checkComments(t, out, want)
		b, _ := os.ReadFile(out)
		if got := bytes.Contains(b, []byte(secret)); got != keep {
			t.Errorf("--write-secrets %v: secret in the copy %v", keep, got)
		}
		kafka := tsharkLines(t, "-r", out, "-d", "tls.port==37113,kafka", "-Y", "kafka", "-T", "fields", "-e", "frame.number")
		if (len(kafka) > 0) != keep {
			t.Errorf("--write-secrets %v: tshark decodes %d Kafka frames", keep, len(kafka))
		}
		again := findingFrames(t, "-p", "37113", out)[out]
		if slices.Contains(again[14], "header-id-changed") != keep {
			t.Errorf("--write-secrets %v: kidscope on the copy finds %v", keep, again)
		}
	}
}

// TestAnnotateSeveralInputs: one copy per input, numbered in the order
// given, each with the comments of its own findings at its own frame
// numbers (the numbers the report names).
func TestAnnotateSeveralInputs(t *testing.T) {
	needTshark(t)
	dir := t.TempDir()
	ws, err := samples.WriteAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ins []string
	for _, w := range ws {
		switch filepath.Base(w.Path) {
		case "hdr-acc-changed.pcapng", "gts-row5-body-differs.pcapng":
			ins = append(ins, w.Path)
		}
	}
	if len(ins) != 2 {
		t.Fatalf("samples %q", ins)
	}
	want := findingFrames(t, ins...)
	out := filepath.Join(dir, "annotated.pcapng")
	_, stderr, code := runKidscope(t, append([]string{"analyze", "--fail-on", "never", "--annotate", out}, ins...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written for two inputs", out)
	}
	for i, in := range ins {
		copy := filepath.Join(dir, "annotated-"+strconv.Itoa(i+1)+".pcapng")
		if len(want[in]) == 0 {
			t.Fatalf("%s has no findings", in)
		}
		checkComments(t, copy, want[in])
	}
}

// TestAnnotateRefused: what --annotate cannot do is refused before the
// inputs are read, and an existing file is not replaced without --force.
func TestAnnotateRefused(t *testing.T) {
	dir := t.TempDir()
	in := "../../testdata/real/kgo-producer-kfake.pcap"
	exists := filepath.Join(dir, "exists.pcapng")
	if err := os.WriteFile(exists, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--annotate", filepath.Join(dir, "a.pcapng"), "-"}, exitBadInput, "standard input"},
		{[]string{"--write-secrets", in}, exitBadInput, "give one of them too"},
		{[]string{"--annotate", in, in}, exitBadInput, "is input 1"},
		{[]string{"--annotate", exists, in}, exitBadInput, "use --force"},
	} {
		_, stderr, code := runKidscope(t, append([]string{"analyze", "--fail-on", "never"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	if b, _ := os.ReadFile(exists); string(b) != "mine" {
		t.Errorf("existing file replaced: %q", b)
	}
	if _, stderr, code := runKidscope(t, "analyze", "--fail-on", "never", "--force", "--annotate", exists, in); code != 0 {
		t.Errorf("--force: exit %d: %s", code, stderr)
	}
}

// TestExtract: each finding's extract, analysed again, has a finding of
// the same rule; it is smaller than its input, and tshark reads it, with
// the finding's comments. --finding N writes only the Nth.
func TestExtract(t *testing.T) {
	needTshark(t)
	dir := t.TempDir()
	ws, err := samples.WriteAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The samples with a rule not seen in those before, to keep it short.
	ins := []string{"../../testdata/real/rdkafka-two-producers-mock.pcap"}
	seen := map[string]bool{}
	for _, w := range ws {
		if filepath.Ext(w.Path) != ".pcapng" {
			continue
		}
		fresh := false
		for _, rules := range findingFrames(t, w.Path)[w.Path] {
			for _, r := range rules {
				fresh = fresh || !seen[r]
				seen[r] = true
			}
		}
		if fresh {
			ins = append(ins, w.Path)
		}
	}
	checked := 0
	for _, in := range ins {
		t.Run(filepath.Base(in), func(t *testing.T) {
			out, stderr, code := runKidscope(t, "analyze", "-p", "auto", "-o", "json", "--fail-on", "never", "--extract", filepath.Join(t.TempDir(), "x"), in)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var doc struct{ Findings []struct{ Rule string } }
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			inFrames := len(tsharkLines(t, "-r", in, "-T", "fields", "-e", "frame.number"))
			for i, f := range doc.Findings {
				x := ""
				for l := range strings.SplitSeq(stderr, "\n") {
					if strings.HasPrefix(l, "kidscope: finding "+strconv.Itoa(i+1)+" ("+f.Rule+"): ") {
						x = strings.Fields(strings.TrimPrefix(l, "kidscope: finding "+strconv.Itoa(i+1)+" ("+f.Rule+"): "))[0]
					}
				}
				if x == "" {
					t.Fatalf("finding %d: no extract named in %q", i+1, stderr)
				}
				// An extract ends at the finding's answer: a connection
				// whose profile (--profile auto) its later requests
				// decided is judged by it given (README).
				found := false
				for _, profile := range []string{"auto", "seed", "accepted"} {
					for _, rules := range findingFrames(t, "-p", "auto", "--profile", profile, x)[x] {
						found = found || slices.Contains(rules, f.Rule)
					}
					if found {
						break
					}
				}
				if !found {
					t.Errorf("%s: analysed again, no %s", x, f.Rule)
				}
				n := len(tsharkLines(t, "-r", x, "-T", "fields", "-e", "frame.number"))
				if n == 0 || n > inFrames {
					t.Errorf("%s: %d frames of %d", x, n, inFrames)
				}
				comments := commentsOf(t, x)
				named := false
				for _, c := range comments {
					named = named || strings.Contains(c, " "+f.Rule)
				}
				if !named {
					t.Errorf("%s: no comment names %s: %v", x, f.Rule, comments)
				}
				checked++
			}
		})
	}
	if checked < 10 {
		t.Fatalf("only %d extracts checked", checked)
	}
	// --finding 2 of an input with two findings.
	two := filepath.Join(dir, "hdr-acc-changed.pcapng")
	xdir := filepath.Join(t.TempDir(), "one")
	_, stderr, code := runKidscope(t, "analyze", "--fail-on", "never", "--extract", xdir, "--finding", "2", two)
	if code != 0 {
		t.Fatalf("--finding 2: exit %d: %s", code, stderr)
	}
	if ents, _ := os.ReadDir(xdir); len(ents) != 1 || ents[0].Name() != "finding-2-stream-unanswered.pcapng" {
		t.Errorf("--finding 2: %v", ents)
	}
	if _, stderr, code := runKidscope(t, "analyze", "-p", "auto", "--fail-on", "never", "--extract", xdir, "--finding", "99", ins[0]); code != exitBadInput || !strings.Contains(stderr, "--finding 99") {
		t.Errorf("--finding 99: exit %d: %s", code, stderr)
	}
}
