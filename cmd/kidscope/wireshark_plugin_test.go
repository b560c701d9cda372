package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/kidscope/kidscope/wsplugin"
)

// The Wireshark plugin's tests run tshark once per group of captures, not
// once per capture: each corpus is concatenated with mergecap into as few
// files as keep every TCP connection apart (captures that reuse a
// connection's addresses and ports go to different files), so that
// Wireshark's start-up, the slow part, is paid a few times.

// wiresharkTools returns the paths of tshark, mergecap and capinfos, or
// fails the test: the comparison is the point of the plugin, so a machine
// without Wireshark's tools must say so rather than pass.
func wiresharkTools(t *testing.T) (tshark, mergecap, capinfos string) {
	t.Helper()
	var paths []string
	for _, tool := range []string{"tshark", "mergecap", "capinfos"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s is not installed: the Wireshark plugin's tests need tshark, mergecap and capinfos (apt-get install tshark; .ci/run installs it)", tool)
		}
		paths = append(paths, p)
	}
	return paths[0], paths[1], paths[2]
}

// writePlugin has the binary write the plugin into dir.
func writePlugin(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, wsplugin.FileName)
	if _, stderr, code := runKidscope(t, "wireshark-plugin", path); code != 0 {
		t.Fatalf("wireshark-plugin: exit %d: %s", code, stderr)
	}
	return path
}

// pluginInput is one capture of a corpus and what kidscope says of it.
type pluginInput struct {
	name, path string
	ports      []string
	annotated  string // the analyze --annotate copy (same packets and frame numbers, with comments)
	// conns are the connections analyze saw, as "client broker".
	conns []string
	// frames is how many frames Wireshark numbers in the capture (analyze
	// counts as it does), packets how many packets capinfos counts: they
	// differ when pcapng blocks other than packets are numbered (custom
	// blocks), which mergecap may drop, so such a capture is read alone.
	frames, packets int
	// want is, by frame, the values frames -e gives for each compared
	// field (pluginFields), in message order, empty values left out.
	want map[int][][]string
	// findings is, by frame, one "severity rule [role]" per finding
	// (role on the related frames), sorted.
	findings map[int][]string
	// lossy are the frames with a message on a connection that started
	// mid-stream or lost bytes: Wireshark's Kafka dissector does not find
	// its way back into such a stream, so the plugin has nothing to read
	// where kidscope resynchronised.
	lossy map[int]bool
}

// pluginFields are the plugin's fields that frames has too.
func pluginFields() []wsplugin.Field {
	var out []wsplugin.Field
	for _, f := range wsplugin.Fields {
		if f.Frames != "" {
			out = append(out, f)
		}
	}
	return out
}

// corpusInputs lists a corpus's captures with their broker ports, read from
// the sidecar each has: NAME.expect.json (samples) or NAME.meta.json (real
// captures).
func corpusInputs(t *testing.T, glob, sidecar string) []*pluginInput {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures match %s (%v)", glob, err)
	}
	var out []*pluginInput
	for _, f := range files {
		base := strings.TrimSuffix(strings.TrimSuffix(f, ".pcapng"), ".pcap")
		out = append(out, &pluginInput{name: filepath.Base(f), path: f, ports: capturePorts(t, base+sidecar)})
	}
	return out
}

// describe runs analyze (with --annotate) and frames on one input.
func (in *pluginInput) describe(t *testing.T, dir string) error {
	ports := strings.Join(in.ports, ",")
	in.annotated = filepath.Join(dir, strings.TrimSuffix(strings.TrimSuffix(in.name, ".pcapng"), ".pcap")+".pcapng")
	out, stderr, code := runKidscope(t, "analyze", "-p", ports, "-o", "json", "--fail-on", "never", "--annotate", in.annotated, in.path)
	if code != 0 {
		return fmt.Errorf("analyze: exit %d: %s", code, stderr)
	}
	var doc struct {
		Findings []struct {
			Rule, Severity string
			Frame          int
			Related        []struct {
				Frame int
				Role  string
			}
		}
		Connections []struct {
			Client, Broker string
			MidStream      bool `json:"mid_stream"`
			Gaps           int
		}
		Summary struct{ Packets int }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return fmt.Errorf("analyze -o json: %v", err)
	}
	in.findings = map[int][]string{}
	for _, f := range doc.Findings {
		in.findings[f.Frame] = append(in.findings[f.Frame], f.Severity+" "+f.Rule)
		for _, r := range f.Related {
			in.findings[r.Frame] = append(in.findings[r.Frame], f.Severity+" "+f.Rule+" "+r.Role)
		}
	}
	for _, l := range in.findings {
		sort.Strings(l)
	}
	lossy := map[string]bool{}
	for _, c := range doc.Connections {
		in.conns = append(in.conns, c.Client+" "+c.Broker)
		if c.MidStream || c.Gaps > 0 {
			lossy[c.Client+" "+c.Broker] = true
		}
	}
	in.lossy = map[int]bool{}
	in.frames = doc.Summary.Packets

	fields := pluginFields()
	in.want = map[int][][]string{}
	args := []string{"frames", "-p", ports, "-e", "frame,client,broker"}
	for _, f := range fields {
		args = append(args, "-e", f.Frames)
	}
	out, stderr, code = runKidscope(t, append(args, in.path)...)
	if code != 0 {
		return fmt.Errorf("frames: exit %d: %s", code, stderr)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		cells := strings.Split(l, "\t")
		frame, err := strconv.Atoi(cells[0])
		if err != nil || len(cells) != len(fields)+3 {
			return fmt.Errorf("frames row %q", l)
		}
		if lossy[cells[1]+" "+cells[2]] {
			in.lossy[frame] = true
		}
		row := in.want[frame]
		if row == nil {
			row = make([][]string, len(fields))
			in.want[frame] = row
		}
		for j, f := range fields {
			v := cells[3+j]
			if v == "" {
				continue
			}
			if f.RFC4122 {
				// frames --uuid rfc4122 writes the same ID so.
				if v, err = rfc4122(v); err != nil {
					return fmt.Errorf("frames -e %s %q: %v", f.Frames, cells[3+j], err)
				}
			}
			row[j] = append(row[j], v)
		}
	}
	return nil
}

// rfc4122 rewrites a UUID from Kafka's form to RFC 4122's.
func rfc4122(kafkaForm string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(kafkaForm)
	if err != nil {
		return "", err
	}
	u, err := uuid.FromBytes(b)
	return u.String(), err
}

// describeAll describes the inputs, a few at a time.
func describeAll(t *testing.T, ins []*pluginInput, dir string) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	errs := make([]error, len(ins))
	for i, in := range ins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = in.describe(t, dir)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", ins[i].name, err)
		}
	}
}

// mergeGroups parts the inputs into groups in which no two captures share
// a connection's endpoints: within one file Wireshark would take them for
// one TCP stream.
func mergeGroups(ins []*pluginInput) [][]*pluginInput {
	var groups, alone [][]*pluginInput
	var used []map[string]bool
	for _, in := range ins {
		if in.frames != in.packets {
			alone = append(alone, []*pluginInput{in})
			continue
		}
		g := 0
		for ; g < len(groups); g++ {
			if !slices.ContainsFunc(in.conns, func(c string) bool { return used[g][c] }) {
				break
			}
		}
		if g == len(groups) {
			groups = append(groups, nil)
			used = append(used, map[string]bool{})
		}
		groups[g] = append(groups[g], in)
		for _, c := range in.conns {
			used[g][c] = true
		}
	}
	return append(groups, alone...)
}

// countPackets has capinfos count the packets of every input's annotated
// copy, in one run.
func countPackets(t *testing.T, capinfos string, ins []*pluginInput) {
	t.Helper()
	args := []string{"-T", "-r", "-c"}
	for _, in := range ins {
		args = append(args, in.annotated)
	}
	out, err := exec.Command(capinfos, args...).Output()
	if err != nil {
		t.Fatalf("capinfos: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(ins) {
		t.Fatalf("capinfos: %d lines for %d files: %s", len(lines), len(ins), out)
	}
	for i, l := range lines {
		cells := strings.Split(l, "\t")
		c, err := strconv.Atoi(strings.TrimSpace(cells[len(cells)-1]))
		if err != nil {
			t.Fatalf("capinfos line %q", l)
		}
		ins[i].packets = c
	}
}

// tsharkRow is what tshark says of one frame of an input.
type tsharkRow struct {
	fields [][]string // per pluginFields, empty values left out
	// findings are the plugin's expert items of findings, as "severity
	// rule [role]", sorted; rules the kidscope.finding.rule values.
	findings, rules []string
	luaErrs         []string
}

// The plugin's own columns after the compared fields.
var pluginExtraColumns = []string{"kidscope.finding.severity", "kidscope.finding.rule", "kidscope.finding.role",
	"_ws.expert.severity", "_ws.expert.message", "_ws.lua.text"}

// wsSeverity names Wireshark's expert severities as kidscope's.
var wsSeverity = map[string]string{"8388608": "error", "6291456": "warning", "4194304": "info"}

// runGroup merges a group's annotated copies and has tshark read them with
// the plugin, once; it returns each input's rows by frame and tshark's
// standard error.
func runGroup(t *testing.T, tshark, mergecap, plugin, dir string, n int, group []*pluginInput) (map[*pluginInput]map[int]*tsharkRow, string) {
	t.Helper()
	merged := group[0].annotated
	firsts := make([]int, len(group)) // frames before each input in the merged file
	ports := map[string]bool{}
	total := 0
	args := []string{"-a", "-I", "none", "-F", "pcapng", "-w", filepath.Join(dir, fmt.Sprintf("merged-%d.pcapng", n))}
	for i, in := range group {
		args = append(args, in.annotated)
		firsts[i] = total
		total += in.frames
		for _, p := range in.ports {
			ports[p] = true
		}
	}
	if len(group) > 1 {
		if out, err := exec.Command(mergecap, args...).CombinedOutput(); err != nil {
			t.Fatalf("mergecap: %v: %s", err, out)
		}
		merged = args[6]
	}

	fields := pluginFields()
	targs := []string{"-n", "-X", "lua_script:" + plugin, "-r", merged, "-o", "tcp.reassemble_out_of_order:TRUE"}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range ports {
			if !yield(p) {
				return
			}
		}
	}) {
		targs = append(targs, "-d", "tcp.port=="+p+",kafka")
	}
	targs = append(targs, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=\x1f", "-e", "frame.number")
	for _, f := range fields {
		targs = append(targs, "-e", "kidscope."+f.Abbrev)
	}
	for _, c := range pluginExtraColumns {
		targs = append(targs, "-e", c)
	}
	cmd := exec.Command(tshark, targs...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v: %s", err, stderr.String())
	}

	rows := map[*pluginInput]map[int]*tsharkRow{}
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		cols := strings.Split(l, "\t")
		if len(cols) != 1+len(fields)+len(pluginExtraColumns) {
			t.Fatalf("tshark row of %d columns: %q", len(cols), l)
		}
		split := func(s string) []string {
			var vs []string
			for _, v := range strings.Split(s, "\x1f") {
				if v != "" {
					vs = append(vs, v)
				}
			}
			return vs
		}
		num, err := strconv.Atoi(cols[0])
		if err != nil {
			t.Fatalf("tshark row %q", l)
		}
		i := sort.Search(len(firsts), func(i int) bool { return firsts[i] >= num }) - 1
		in, frame := group[i], num-firsts[i]
		r := &tsharkRow{fields: make([][]string, len(fields))}
		for j, f := range fields {
			vs := split(cols[1+j])
			for k, v := range vs {
				switch f.Type {
				case wsplugin.Bool:
					vs[k] = strconv.FormatBool(v == "1" || v == "True")
				case wsplugin.FrameNum:
					// A frame of the merged file, numbered again as in
					// its input.
					if n, err := strconv.Atoi(v); err == nil {
						vs[k] = strconv.Itoa(n - firsts[i])
					}
				}
			}
			r.fields[j] = vs
		}
		extra := cols[1+len(fields):]
		r.rules = split(extra[1])
		sort.Strings(r.rules)
		wsSevs, msgs := split(extra[3]), split(extra[4])
		for k, m := range msgs {
			if k >= len(wsSevs) {
				break
			}
			// Wireshark's own item for each comment is the comment itself.
			if p := findingMessage.FindStringSubmatch(m); p != nil && !strings.HasPrefix(m, "kidscope ") {
				s := wsSeverity[wsSevs[k]] + " " + p[1]
				if p[2] != "" {
					s += " " + p[2]
				}
				r.findings = append(r.findings, s)
			}
		}
		sort.Strings(r.findings)
		r.luaErrs = split(extra[5])
		if rows[in] == nil {
			rows[in] = map[int]*tsharkRow{}
		}
		rows[in][frame] = r
	}
	return rows, stderr.String()
}

// findingMessage is how the plugin words the expert item of a finding's
// comment: the rule, then on a related frame its role, else the rule's
// summary.
var findingMessage = regexp.MustCompile(`^([a-z0-9]+(?:-[a-z0-9]+)*)(?:: the ([a-z0-9-]+) frame of the finding at |: )`)

// checkCorpus compares, for every capture of a corpus, what tshark with
// the plugin shows with what kidscope frames and analyze say.
func checkCorpus(t *testing.T, plugin string, ins []*pluginInput) {
	tshark, mergecap, capinfos := wiresharkTools(t)
	dir := t.TempDir()
	describeAll(t, ins, dir)
	countPackets(t, capinfos, ins)
	groups := mergeGroups(ins)
	t.Logf("%d captures in %d tshark runs", len(ins), len(groups))
	fields := pluginFields()
	var wg sync.WaitGroup
	results := make([]map[*pluginInput]map[int]*tsharkRow, len(groups))
	stderrs := make([]string, len(groups))
	for g, group := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[g], stderrs[g] = runGroup(t, tshark, mergecap, plugin, dir, g, group)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, s := range stderrs {
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			if l != "" && !strings.HasPrefix(l, "Running as user") {
				t.Errorf("tshark says: %s", l)
			}
		}
	}
	compared, unfollowed, findings := 0, 0, 0
	for g, group := range groups {
		for _, in := range group {
			got := results[g][in]
			frames := map[int]bool{}
			for f := range in.want {
				frames[f] = true
			}
			for f := range in.findings {
				frames[f] = true
			}
			for f, r := range got {
				if len(r.luaErrs) > 0 {
					t.Errorf("%s frame %d: Lua error: %q", in.name, f, r.luaErrs)
				}
				frames[f] = true
			}
			for _, f := range slices.Sorted(func(yield func(int) bool) {
				for f := range frames {
					if !yield(f) {
						return
					}
				}
			}) {
				r := got[f]
				if r == nil {
					r = &tsharkRow{fields: make([][]string, len(fields))}
				}
				want := in.want[f]
				if want == nil {
					want = make([][]string, len(fields))
				}
				missed := false
				for j, fl := range fields {
					switch {
					case slices.Equal(r.fields[j], want[j]):
						compared += len(want[j])
					case in.lossy[f] && len(r.fields[j]) == 0:
						// What the plugin cannot see: a message Wireshark
						// did not find, or a response to one.
						missed = true
					default:
						t.Errorf("%s frame %d: kidscope.%s %q, frames -e %s %q", in.name, f, fl.Abbrev, r.fields[j], fl.Frames, want[j])
					}
				}
				if missed {
					unfollowed++
				}
				if !slices.Equal(r.findings, in.findings[f]) {
					t.Errorf("%s frame %d: expert items %q, analyze's findings %q", in.name, f, r.findings, in.findings[f])
				}
				var rules []string
				for _, fd := range in.findings[f] {
					rules = append(rules, strings.Fields(fd)[1])
				}
				sort.Strings(rules)
				if !slices.Equal(r.rules, rules) {
					t.Errorf("%s frame %d: kidscope.finding.rule %q, analyze's findings %q", in.name, f, r.rules, in.findings[f])
				}
				findings += len(in.findings[f])
			}
		}
	}
	if compared == 0 {
		t.Error("no field value compared")
	}
	t.Logf("%d field values and %d findings compared; %d frames after a mid-stream start or a lost segment, where Wireshark's Kafka dissector does not follow the stream", compared, findings, unfollowed)
}

// TestWiresharkPluginMatchesFrames: on every bundled sample and every real
// capture, tshark with the plugin shows, frame by frame and message by
// message, the instance IDs, telemetry and member IDs kidscope frames -e
// gives, loads without a warning or a Lua error, and on the copies analyze
// --annotate writes shows one expert item of the right severity per
// finding.
func TestWiresharkPluginMatchesFrames(t *testing.T) {
	wiresharkTools(t)
	plugin := writePlugin(t, t.TempDir())
	corpora := []struct{ name, glob, sidecar string }{
		{"samples", "../../samples/captures/*.pcap*", ".expect.json"},
		{"real", "../../testdata/real/*.pcap", ".meta.json"},
	}
	for _, c := range corpora {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkCorpus(t, plugin, corpusInputs(t, c.glob, c.sidecar))
		})
	}
}

// treeSample is the capture whose frames the tree golden shows: a seed
// client's GetTelemetrySubscriptions v0 with a changed header ID (frame
// 10) and the broker's answer (frame 11), each with a finding's comment.
const treeSample = "hdr-seed-changed"

// TestWiresharkPluginTree: the kidscope tree of two frames of an annotated
// sample as tshark -V prints it, with tshark's two passes (-2), which
// read the frames again as Wireshark does when one is clicked. The same
// text is in docs/wireshark.md, made by the commands shown there (the
// folder /tmp/ks stands for the test's own).
func TestWiresharkPluginTree(t *testing.T) {
	tshark, _, _ := wiresharkTools(t)
	dir := t.TempDir()
	plugin := writePlugin(t, dir)
	in := filepath.Join(dir, treeSample+".pcapng")
	b, err := os.ReadFile(filepath.Join("../../samples/captures", treeSample+".pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	annotated := filepath.Join(dir, "annotated.pcapng")
	if _, stderr, code := runKidscope(t, "analyze", "-p", "9092", "--fail-on", "never", "--annotate", annotated, in); code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	cmd := exec.Command(tshark, "-X", "lua_script:"+plugin, "-r", annotated, "-2", "-d", "tcp.port==9092,kafka",
		"-O", "kidscope", "-Y", "frame.number in {10,11}")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v: %s", err, stderr.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, "Running as user") {
			t.Errorf("tshark says: %s", l)
		}
	}
	got := bytes.ReplaceAll(out, []byte(dir), []byte("ks")) // as docs/wireshark.md names the directory
	goldenFile(t, "testdata/wireshark/tree.golden", got)
	doc, err := os.ReadFile("../../docs/wireshark.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, got) {
		t.Error("docs/wireshark.md does not show testdata/wireshark/tree.golden as it is: copy it in")
	}
}
