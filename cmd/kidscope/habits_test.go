package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// checkFormat parses a command's standard output as the format says: the
// whole of it, so that anything else written there (a streamed finding's
// line ahead of a JSON document) fails.
func checkFormat(t *testing.T, what, format, out string) {
	t.Helper()
	switch format {
	case "json":
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Errorf("%s: stdout is not one JSON document: %v\n%s", what, err, head(out))
		} else if v, ok := doc["schema_version"].(float64); !ok || v < 1 {
			t.Errorf("%s: schema_version %v", what, doc["schema_version"])
		}
	case "ndjson":
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 1<<20)
		kinds := map[string]int{}
		for sc.Scan() {
			var line struct{ Kind string }
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Kind == "" {
				t.Errorf("%s: ndjson line %q: %v", what, head(sc.Text()), err)
			}
			kinds[line.Kind]++
		}
		if kinds["summary"] != 1 {
			t.Errorf("%s: ndjson kinds %v, want one summary", what, kinds)
		}
	case "csv":
		r := csv.NewReader(strings.NewReader(out))
		rows, err := r.ReadAll() // every record must have the header's fields
		if err != nil || len(rows) == 0 {
			t.Errorf("%s: stdout is not CSV: %v\n%s", what, err, head(out))
		} else if c := rows[0][0]; c != "rule" && c != "file" {
			t.Errorf("%s: CSV header %v", what, rows[0])
		}
	case "markdown":
		if !strings.HasPrefix(out, "# ") {
			t.Errorf("%s: markdown does not start with a heading:\n%s", what, head(out))
		}
	case "table":
		// analyze's starts with its summary; frames' with the file's name
		// above its column heads.
		lines := strings.SplitN(out, "\n", 3)
		if !strings.HasPrefix(out, "SUMMARY\n") && (len(lines) < 2 || !strings.HasPrefix(lines[1], "FRAME ")) {
			t.Errorf("%s: the table does not start with its summary or its file and column heads:\n%s", what, head(out))
		}
	case "tsv", "fields":
		rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for i, r := range rows {
			if n, want := strings.Count(r, "\t"), strings.Count(rows[0], "\t"); n != want || n == 0 {
				t.Errorf("%s: line %d has %d tabs, the first %d", what, i+1, n, want)
				break
			}
		}
	default:
		t.Fatalf("no check for format %q", format)
	}
}

func head(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// TestOutputFormatsParse: every format of analyze and frames writes to
// stdout what parses as that format, and nothing else.
func TestOutputFormatsParse(t *testing.T) {
	file := "../../samples/captures/hdr-seed-changed.pcapng"
	for _, c := range []struct {
		cmd     string
		formats []string
		code    int
	}{
		{"analyze", []string{"table", "json", "ndjson", "csv", "markdown"}, 1},
		{"frames", []string{"table", "tsv", "fields", "json", "ndjson", "csv"}, 0},
	} {
		for _, format := range c.formats {
			out, errOut, code := runKidscope(t, c.cmd, "-o", format, "--color", "always", file)
			if code != c.code {
				t.Errorf("%s -o %s: exit %d, want %d: %s", c.cmd, format, code, c.code, errOut)
			}
			if format != "table" && strings.Contains(out, "\x1b[") {
				t.Errorf("%s -o %s: escape sequences in a format for programs", c.cmd, format)
			}
			checkFormat(t, c.cmd+" -o "+format, format, out)
		}
	}
}

// TestNoKafkaLine covers the cases the captures above do not reach.
func TestNoKafkaLine(t *testing.T) {
	ports := func(specs ...string) reassembly.Ports {
		p, err := reassembly.ParsePorts(specs)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	withCapture := func(s result.Summary, packets, tcp int64) result.Summary {
		s.Capture.Packets, s.Capture.TCP = packets, tcp
		return s
	}
	for _, c := range []struct {
		sum   result.Summary
		ports reassembly.Ports
		want  string
	}{
		{withCapture(result.Summary{}, 30, 0), ports("9092"), "no Kafka decoded: 30 packets, none TCP"},
		{withCapture(result.Summary{Connections: 2, NotKafka: 2}, 40, 40), ports("9092-9094", "19092"),
			"no Kafka decoded: 2 connections on broker ports 9092-9094, 19092 carried no Kafka message (2 not Kafka: TLS without --tls-keylog, or another protocol)"},
		{withCapture(result.Summary{Connections: 1}, 4, 4), ports("auto"), "no Kafka decoded: 1 connection on any port (-p auto) carried no Kafka message"},
		{withCapture(result.Summary{OtherPorts: []result.PortCount{{Port: 443, Packets: 380}, {Port: 22, Packets: 1}}}, 381, 381), ports("9092"),
			"no Kafka decoded: 381 TCP packets, none on broker port 9092; the busiest TCP ports: 443 (380 packets), 22 (1 packet); none looks like Kafka (-p PORT decodes another port, -p auto every one)"},
		{withCapture(result.Summary{OtherPorts: []result.PortCount{{Port: 443, Packets: 380}},
			KafkaPorts: []result.PortCount{{Port: 29092, Packets: 3, Kafka: true}}}, 383, 383), ports("9092"),
			"no Kafka decoded: 383 TCP packets, none on broker port 9092; the busiest TCP ports: 443 (380 packets); try -p 29092 or -p auto"},
		{withCapture(result.Summary{Reassembly: reassembly.Stats{Segments: 3}}, 3, 3), ports("9092"), "no Kafka decoded: 3 TCP packets, 3 on broker port 9092, with no data"},
	} {
		if got := noKafkaLine(&c.sum, c.ports); got != c.want {
			t.Errorf("noKafkaLine:\ngot  %s\nwant %s", got, c.want)
		}
	}
	var s result.Summary
	s.Requests = 1
	if noKafka(&s) {
		t.Error("a run with a request is taken for one without Kafka")
	}
}

// usageMessage splits what a usage error writes on stderr: one line
// "kidscope: …", then the usage of cmd. ok is false when it is not so.
func usageMessage(stderr, cmd string) (string, bool) {
	usage := "Usage: kidscope " + cmd + " "
	msg, rest, found := strings.Cut(stderr, "\n")
	return msg, found && strings.HasPrefix(msg, "kidscope: ") && strings.HasPrefix(rest, usage) &&
		strings.HasSuffix(rest, "\nRun 'kidscope "+cmd+" --help' for more.\n") && strings.Count(rest, "\n") == 2
}

// TestReadFileFlag: -r FILE, as tcpdump and tshark take it, is a FILE
// argument: repeatable, the -r files first.
func TestReadFileFlag(t *testing.T) {
	a, b := "../../samples/captures/hdr-seed-changed.pcapng", "../../samples/captures/net-port-29092.pcapng"
	for _, cmd := range []string{"analyze", "frames"} {
		want, _, wantCode := runKidscope(t, cmd, "-o", "json", a, b)
		for _, args := range [][]string{{"-r", a, "-r", b}, {"-r", a, b}, {"--read-file", a, "--read-file=" + b}} {
			got, errOut, code := runKidscope(t, append([]string{cmd, "-o", "json"}, args...)...)
			if got != want || code != wantCode {
				t.Errorf("%s %v: exit %d (%s), output differs from %s with the files as arguments", cmd, args, code, errOut, cmd)
			}
		}
	}
}

// TestSizeFlags: every size flag takes the forms docs/analyze.md names, read by
// internal/size.
func TestSizeFlags(t *testing.T) {
	forms := map[string]int64{"1MB": 1e6, "1MiB": 1 << 20, "1M": 1e6, "1048576": 1 << 20, "2.5 MiB": 5 << 19}
	root, _ := newRoot()
	checked := 0
	for _, cmd := range root.Commands() {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			v, ok := f.Value.(*sizeValue)
			if !ok {
				return
			}
			checked++
			for text, want := range forms {
				if v.unit > 1 && !strings.ContainsAny(text, "BM") {
					want *= v.unit // --ring-size: a plain number is MiB
				}
				if err := f.Value.Set(text); err != nil || v.n != want {
					t.Errorf("%s --%s %s: %d, %v; want %d", cmd.Name(), f.Name, text, v.n, err, want)
				}
			}
			if err := f.Value.Set("1XB"); err == nil || !strings.Contains(err.Error(), "want a size such as") {
				t.Errorf("%s --%s 1XB: %v", cmd.Name(), f.Name, err)
			}
		})
	}
	// memory-limit, max-resync-buffer, max-body-buffer, max-frame on
	// analyze, frames and live; write-max-size, ring-size, snaplen on live.
	if checked != 3*4+3 {
		t.Errorf("%d size flags, want 15: a size flag that does not use sizeValue?", checked)
	}
	// --ring-size takes its plain numbers as MiB, as it always has.
	v := newSize("64", 1<<20)
	if v.n != 64<<20 {
		t.Errorf("--ring-size 64 = %d bytes", v.n)
	}
}

// TestColor: --color always and never decide; auto colours a terminal
// unless NO_COLOR is set (and not empty) or TERM is dumb.
func TestColor(t *testing.T) {
	// /dev/null is a character device: isTerminal takes it for one.
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var pipe strings.Builder
	for _, c := range []struct {
		when, noColor, term string
		w                   any
		want                bool
	}{
		{"auto", "", "xterm", tty, true},
		{"auto", "", "dumb", tty, false},
		{"auto", "1", "xterm", tty, false},
		{"auto", "", "xterm", &pipe, false},
		{"always", "1", "dumb", &pipe, true},
		{"never", "", "xterm", tty, false},
	} {
		t.Setenv("NO_COLOR", c.noColor)
		t.Setenv("TERM", c.term)
		root := &cobra.Command{Use: "x"}
		registerColor(root)
		if err := root.PersistentFlags().Set("color", c.when); err != nil {
			t.Fatal(err)
		}
		if got := colorWanted(root, c.w); got != c.want {
			t.Errorf("--color %s, NO_COLOR=%q, TERM=%s, terminal %v: colour %v, want %v", c.when, c.noColor, c.term, c.w == tty, got, c.want)
		}
	}
	// End to end: off a terminal, auto has none and always has colour,
	// NO_COLOR notwithstanding.
	file := "../../samples/captures/hdr-seed-changed.pcapng"
	if out, _, _ := runKidscope(t, "analyze", file); strings.Contains(out, "\x1b[") {
		t.Error("colour off a terminal")
	}
	t.Setenv("NO_COLOR", "1")
	if out, _, _ := runKidscope(t, "analyze", "--color", "always", file); !strings.Contains(out, "\x1b[1;31m") {
		t.Error("no colour with --color always")
	}
}

// TestCompletion asks the binary for completions as the shells do, with
// cobra's hidden __complete command.
func TestCompletion(t *testing.T) {
	var ifaces []string
	if is, err := net.Interfaces(); err == nil {
		for _, i := range is {
			ifaces = append(ifaces, i.Name)
		}
	}
	var ids []string
	for _, r := range rules.Catalog() {
		ids = append(ids, r.ID)
	}
	for _, c := range []struct {
		args      []string
		want      []string // all of these
		not       []string // none of these
		directive string
	}{
		{[]string{"analyze", "-o", ""}, []string{"table", "json", "ndjson", "csv", "markdown"}, nil, ":4"},
		{[]string{"frames", "--output", ""}, []string{"table", "json", "ndjson", "csv"}, []string{"markdown"}, ":4"},
		{[]string{"live", "-o", "n"}, []string{"ndjson"}, []string{"json", "table"}, ":4"},
		{[]string{"analyze", "--rule", "header-id-c"}, []string{"header-id-changed"}, []string{"telemetry-*", "header-id-late"}, ":4"},
		{[]string{"analyze", "--skip-rule", ""}, append([]string{"telemetry-*", "header-*"}, ids...), nil, ":4"},
		{[]string{"live", "--rule", "tele"}, []string{"telemetry-*", "telemetry-body-mismatch"}, []string{"header-*"}, ":4"},
		{[]string{"analyze", "--profile", ""}, []string{"auto", "seed", "accepted"}, nil, ":4"},
		{[]string{"analyze", "--fail-on", ""}, []string{"info", "warning", "error", "never"}, nil, ":4"},
		{[]string{"live", "--min-severity", ""}, []string{"info", "warning", "error"}, []string{"never"}, ":4"},
		{[]string{"frames", "--uuid", ""}, []string{"kafka", "rfc4122"}, nil, ":4"},
		{[]string{"analyze", "-p", ""}, []string{"auto", "9092"}, nil, ":4"},
		{[]string{"live", "-i", ""}, append([]string{"any"}, ifaces...), nil, ":4"},
		{[]string{"analyze", "--color", ""}, []string{"auto", "always", "never"}, nil, ":4"},
		{[]string{"rules", ""}, ids, []string{"header-*"}, ":4"},
		{[]string{"analyze", "-r", ""}, nil, nil, ":0"},
		{[]string{"analyze", ""}, nil, nil, ":0"},
		{[]string{"samples", ""}, nil, nil, ":16"},
	} {
		out, errOut, code := runKidscope(t, append([]string{"__complete"}, c.args...)...)
		if code != 0 {
			t.Errorf("__complete %q: exit %d: %s", c.args, code, errOut)
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		directive := lines[len(lines)-1]
		var got []string
		for _, l := range lines[:len(lines)-1] {
			v, _, _ := strings.Cut(l, "\t")
			got = append(got, v)
		}
		if directive != c.directive {
			t.Errorf("__complete %q: directive %s, want %s", c.args, directive, c.directive)
		}
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("__complete %q: %q missing from %q", c.args, w, got)
			}
		}
		for _, n := range c.not {
			if slices.Contains(got, n) {
				t.Errorf("__complete %q: %q offered", c.args, n)
			}
		}
	}
}
