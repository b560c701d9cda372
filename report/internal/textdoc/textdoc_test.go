package textdoc

import (
	"bytes"
	"strings"
	"testing"
)

// Wrapping keeps a styled span whole and styled on the line it lands on.
func TestWrapLineKeepsStyles(t *testing.T) {
	l := Line{{Text: "three words here "}, {Text: "two errors", Style: "error"}, {Text: " and the rest of it"}}
	got := WrapLine(l, 20)
	if len(got) < 2 {
		t.Fatalf("not wrapped: %q", got)
	}
	var styled []string
	for _, ln := range got {
		if n := len([]rune(ln.String())); n > 20 {
			t.Errorf("line %q is %d wide", ln.String(), n)
		}
		for _, s := range ln {
			if s.Style == "error" {
				styled = append(styled, s.Text)
			}
		}
	}
	if strings.Join(styled, " ") != "two errors" {
		t.Errorf("styled pieces %q, want the words of the styled span", styled)
	}
}

// The terminal writer paints styled spans and escapes every text; Markdown
// makes them strong and escapes what Markdown would read.
func TestWriters(t *testing.T) {
	doc := []Block{
		{Kind: Heading1, Text: Plain("SUMMARY")},
		{Kind: Para, Text: Line{{Text: "1 error", Style: "error"}, {Text: " in \x1b[31m*x*"}}},
		{Kind: Table, Grid: &Grid{Header: []string{"A", "B"}, Rows: [][][]string{{{"a|b"}, {"1", "2"}}}}},
	}
	var term bytes.Buffer
	if err := WriteTerminal(&term, doc, func(text, style string) string { return "<" + style + ">" + text + "</>" }); err != nil {
		t.Fatal(err)
	}
	out := term.String()
	for _, want := range []string{"<error>1 error</>", `\x1b[31m*x*`, "│ a|b │ 1 │"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("a raw escape reached the terminal")
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, "title", doc); err != nil {
		t.Fatal(err)
	}
	out = md.String()
	for _, want := range []string{"# title", "## SUMMARY", `**1 error** in \\x1b\[31m\*x\*`, `a\|b`, "1<br>2"} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain":             "plain",
		"a\x1bb":            `a\x1bb`,
		"rtl\u202eoverride": `rtl\u202eoverride`,
		"bad\xffbyte":       `bad\xffbyte`,
		"é":                 "é",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeCell("=1+1"); got != "'=1+1" {
		t.Errorf("EscapeCell = %q", got)
	}
}
