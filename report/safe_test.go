package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/rules"
)

// hostile is a capture's string that would start a spreadsheet formula
// linking away, clear the screen, retitle the terminal, return the cursor,
// ring the bell, reverse the text after it, break a Markdown table and
// start code in it, and carry a byte that is not UTF-8.
const hostile = "=HYPERLINK(\"http://x\",\"y\")\x1b[2J\x1b]0;x\x07\r\x07|`#A\u202eB\xff"

func TestShown(t *testing.T) {
	cases := []struct{ in, want, cell string }{
		{"kgo-producer", "kgo-producer", "kgo-producer"},
		{"café ü", "café ü", "café ü"},
		{"a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`},
		{"t\x1b]0;x\x07", `t\x1b]0;x\x07`, `t\x1b]0;x\x07`},
		{"a\rb\tc\x7f\u0085", `a\x0db\x09c\x7f\x85`, `a\x0db\x09c\x7f\x85`},
		{"x\u202ey\u2066z\u200b", `x\u202ey\u2066z\u200b`, `x\u202ey\u2066z\u200b`},
		{"bad\xff\xc3", `bad\xff\xc3`, `bad\xff\xc3`},
		{"=SUM(A1)", "=SUM(A1)", "'=SUM(A1)"},
		{"-1+1", "-1+1", "'-1+1"},
		{"@x", "@x", "'@x"},
		{"\tx", `\x09x`, `\x09x`},
	}
	for _, c := range cases {
		if got := shown(c.in); got != c.want {
			t.Errorf("shown(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := shownCell(c.in); got != c.cell {
			t.Errorf("shownCell(%q) = %q, want %q", c.in, got, c.cell)
		}
	}
}

// hostileFields plant the hostile string in each string a capture can put
// in an analysis: client IDs (of a connection, an instance, a finding's
// value), member IDs, what the bytes are instead of Kafka, an input
// problem's text.
var hostileFields = []struct {
	name  string
	inCSV bool // a finding's: -o csv holds the findings only
	plant func(a *Analysis)
}{
	{"connection client ID", false, func(a *Analysis) { a.Result.Connections[0].ClientID = hostile }},
	{"connection not Kafka", false, func(a *Analysis) { a.Result.Connections[0].NotKafka = hostile }},
	{"instance client IDs", false, func(a *Analysis) {
		a.Result.Instances = []rules.Instance{{ID: instA, ClientIDs: []string{hostile, "ok"}, First: at(0, 2, 0), Last: at(0, 9, 1)}}
	}},
	{"finding seen client ID", true, func(a *Analysis) {
		a.Result.Findings = append(a.Result.Findings, rules.Finding{Rule: rules.HeaderClientIDRepeated, Severity: rules.Warning,
			At: at(0, 15, 0.3), Conn: a.Result.Connections[0].Key, ConnID: 1, HasAPI: true, APIKey: 3, APIVersion: 12,
			Expected: rules.Value{Kind: rules.ValueNullClientID}, Seen: rules.Value{Kind: rules.ValueClientID, Text: hostile}})
	}},
	{"finding member IDs", true, func(a *Analysis) {
		a.Result.Findings = append(a.Result.Findings, rules.Finding{Rule: rules.HeartbeatMemberIDChanged, Severity: rules.Warning,
			At: at(0, 16, 0.3), Conn: a.Result.Connections[0].Key, ConnID: 1, HasAPI: true, APIKey: 68, APIVersion: 1,
			Expected: rules.Value{Kind: rules.ValueMemberID, Text: hostile}, Seen: rules.Value{Kind: rules.ValueMemberID, Text: hostile + "2"}})
	}},
	{"finding not Kafka", true, func(a *Analysis) {
		a.Result.Findings = append(a.Result.Findings, rules.Finding{Rule: rules.StreamNotKafka, Severity: rules.Info,
			At: at(0, 17, 0.3), Conn: a.Result.Connections[0].Key, ConnID: 1,
			Seen: rules.Value{Kind: rules.ValueNotKafka, Text: hostile}, Stream: rules.Stream{Kind: rules.NotKafkaBytes}})
	}},
	{"input problem", false, func(a *Analysis) { a.Summary.Problems = []error{errors.New(hostile)} }},
}

// A capture's hostile string reaches no table, Markdown, CSV or live text
// line raw, wherever it is planted; JSON keeps it as sent, JSON-escaped.
func TestHostileStringsEscapedEverywhere(t *testing.T) {
	for _, field := range hostileFields {
		t.Run(field.name, func(t *testing.T) {
			a := quietAnalysis()
			field.plant(a)
			for _, format := range []string{"table", "markdown", "csv"} {
				for _, color := range []bool{false, true} {
					var out bytes.Buffer
					if err := WriteAnalysis(&out, a, AnalysisOptions{Format: format, Verbose: true, Color: color}); err != nil {
						t.Fatal(err)
					}
					s := out.String()
					if color {
						s = strings.NewReplacer(ansiReset, "", ansiError, "", ansiWarning, "", ansiInfo, "").Replace(s)
					}
					checkNoRawControls(t, format, s)
					// (The table shortens client IDs before their escapes.)
					if (format == "markdown" || format == "csv" && field.inCSV) && !strings.Contains(s, `\x1b`) {
						t.Errorf("%s: the escaped string is missing:\n%s", format, s)
					}
					if format == "markdown" && (strings.Contains(s, "|`") || !strings.Contains(s, "\\|\\`")) {
						t.Errorf("markdown: the pipe and backtick are not escaped:\n%s", s)
					}
					if format == "csv" {
						checkCSVCells(t, s)
					}
				}
			}
			for _, format := range []string{"json", "ndjson"} {
				out := render(t, a, AnalysisOptions{Format: format})
				for _, bad := range []string{"\x1b", "\x07", "\r"} {
					if bytes.Contains(out, []byte(bad)) {
						t.Errorf("%s: holds %q raw", format, bad)
					}
				}
				if format == "json" && !json.Valid(out) {
					t.Errorf("json is not valid")
				}
			}
			for i := range a.Result.Findings {
				for _, color := range []bool{false, true} {
					line := FormatFindingText(a.Files, &a.Result.Findings[i], color)
					line = strings.NewReplacer(ansiReset, "", ansiError, "", ansiWarning, "", ansiInfo, "").Replace(line)
					checkNoRawControls(t, "live line", line)
				}
			}
		})
	}
}

// checkCSVCells fails when a cell would start a spreadsheet formula.
func checkCSVCells(t *testing.T, s string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		for _, c := range r {
			if c != "" && strings.ContainsRune("=+@", rune(c[0])) || strings.HasPrefix(c, "-") && strings.Contains(c, "HYPERLINK") {
				t.Errorf("csv cell %q would be a formula", c)
			}
		}
	}
}

// The frames a hostile client ID (and any other string a record holds)
// reach the frames table and CSV escaped.
func TestHostileFramesEscaped(t *testing.T) {
	h := hostile
	recs := []FrameRecord{
		{File: "f", Frame: 1, Client: "c", Broker: "b", Direction: "request", ClientID: &h},
		{File: hostile, Frame: 2, Client: "c", Broker: "b", Direction: "response", APIName: hostile, InstanceID: &h,
			ErrorCodes: []ErrorCode{{Code: 1, Name: hostile}}},
	}
	for _, format := range []string{"table", "csv"} {
		var out bytes.Buffer
		w, err := NewFramesWriter(&out, FramesOptions{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			if err := w.Add(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(FramesSummary{}); err != nil {
			t.Fatal(err)
		}
		checkNoRawControls(t, "frames "+format, out.String())
		if format == "csv" {
			checkCSVCells(t, out.String())
			if !strings.Contains(out.String(), `'=HYPERLINK`) {
				t.Errorf("frames csv: the formula is not neutralised:\n%s", out.String())
			}
		}
	}
}

func checkNoRawControls(t *testing.T, what, s string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\r", "\u202e", "\xff"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s: output holds %q raw", what, bad)
		}
	}
}
