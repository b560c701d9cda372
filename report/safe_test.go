package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/rules"
)

// hostile is a client ID that would clear the screen, retitle the
// terminal, return the cursor, ring the bell, reverse the text after it,
// carry a byte that is not UTF-8, and start a spreadsheet formula.
const hostile = "=HYPERLINK(\"x\")\x1b[2J\x1b]0;pwned\x07\rA\u202eB\xff"

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

// A hostile client ID reaches no table, Markdown, text or CSV output raw.
func TestHostileClientIDEscapedEverywhere(t *testing.T) {
	a := quietAnalysis()
	a.Result.Connections[0].ClientID = hostile
	a.Result.Findings = append(a.Result.Findings, rules.Finding{Rule: rules.HeaderClientIDRepeated, Severity: rules.Warning,
		At: at(0, 15, 0.3), Conn: a.Result.Connections[0].Key, ConnID: 1,
		Expected: rules.Value{Kind: rules.ValueNullClientID}, Seen: rules.Value{Kind: rules.ValueClientID, Text: hostile}})
	for _, format := range []string{"table", "markdown", "csv"} {
		var out bytes.Buffer
		if err := WriteAnalysis(&out, a, AnalysisOptions{Format: format, Verbose: true}); err != nil {
			t.Fatal(err)
		}
		checkNoRawControls(t, format, out.String())
		// (The table shortens client IDs before their escapes.)
		if format != "table" && !strings.Contains(out.String(), `\x1b`) {
			t.Errorf("%s: the escaped client ID is missing", format)
		}
	}
	rec := FrameRecord{File: "f", Frame: 1, Client: "c", Broker: "b", Direction: "request", ClientID: new(string)}
	*rec.ClientID = hostile
	for _, format := range []string{"table", "csv"} {
		var out bytes.Buffer
		w, err := NewFramesWriter(&out, format)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(&rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(FramesSummary{}); err != nil {
			t.Fatal(err)
		}
		checkNoRawControls(t, "frames "+format, out.String())
		if format == "csv" && !strings.Contains(out.String(), `'=HYPERLINK`) {
			t.Errorf("frames csv: the formula is not neutralised:\n%s", out.String())
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
