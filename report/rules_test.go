package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/report/internal/textdoc"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/kidscope/kidscope/rules"
)

// sampleRules are fixed, so the golden files do not follow edits of the
// real catalogue's wording. The last one's texts hold every character
// Markdown could read as markup.
var sampleRules = []rules.Rule{
	{ID: "header-id-changed", Severity: rules.Error, Group: rules.GroupHeader, Profile: "both",
		Summary: "a later request carries a non-zero instance ID different from the connection's established one",
		Detail:  "Every request of a connection that carries a header client instance ID (tag 0) must carry the ID the connection established with its first ID-relevant request.",
		Why:     "A broker that enforces KIP-1313 rejects the request with INVALID_REQUEST.",
		Fix:     "Client: send one ID on every request of the connection. Broker: nothing to change.",
		Example: "seed-changed"},
	{ID: "join-member-id-required-old-version", Severity: rules.Warning, Group: rules.GroupMembership,
		Summary: "MEMBER_ID_REQUIRED sent in answer to JoinGroup v0–v3", Example: "join-old-version",
		Why: "Old clients do not know the code.", Fix: "Broker: send it to v4+ only.", Caveat: "the capture may have started after it"},
	{ID: "stream-gap", Severity: rules.Info, Group: rules.GroupCapture, Summary: "bytes are *missing* | <b>resynced</b> `x` [l](u) _y_ #z &amp;",
		Detail: "A ONE in NONE: *not* emphasis\\ | pipe", Fix: "Capture with -s 0."},
}

var sampleExamples = map[string]RuleExample{
	"header-id-changed": {Scenario: "seed-changed", Description: "a *seed* client | changes `its` ID", File: "seed-changed.pcapng",
		Finding: "error header-id-changed DIR/seed-changed.pcapng:10 10.0.1.10:51044 → 10.0.0.2:9092: ``` fenced; broker answer: INVALID_REQUEST"},
	"join-member-id-required-old-version": {Scenario: "join-old-version", File: "join-old-version.pcap", Flags: []string{"-v", "-p", "29092"}},
}

func sampleExample(id string) *RuleExample {
	if e, ok := sampleExamples[id]; ok {
		return &e
	}
	return nil
}

func TestWriteCatalogGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCatalog(&buf, sampleRules); err != nil {
		t.Fatal(err)
	}
	golden(t, "rules_catalog.golden", buf.Bytes())
	for i, name := range []string{"rules_rule.golden", "rules_rule_noprofile.golden", "rules_rule_noexample.golden"} {
		buf.Reset()
		if err := WriteRule(&buf, sampleRules[i], sampleExample(sampleRules[i].ID)); err != nil {
			t.Fatal(err)
		}
		golden(t, name, buf.Bytes())
	}
	buf.Reset()
	if err := WriteRulesMarkdown(&buf, sampleRules, sampleExamples); err != nil {
		t.Fatal(err)
	}
	golden(t, "rules_markdown.golden", buf.Bytes())
}

func TestWriteCatalog(t *testing.T) {
	var buf bytes.Buffer
	cat := rules.Catalog()
	if err := WriteCatalog(&buf, cat); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, r := range cat {
		if !strings.Contains(out, "│ "+r.ID+" ") {
			t.Errorf("catalogue has no row for %s", r.ID)
		}
		if !strings.Contains(out, ruleKind(r)) {
			t.Errorf("catalogue has no %q", ruleKind(r))
		}
		if !strings.Contains("\n"+out, "\n"+r.Group.Title()+"\n") {
			t.Errorf("catalogue has no heading %q for %s", r.Group.Title(), r.ID)
		}
	}
	for _, p := range []string{"\n  seed  ", "\n  accepted  ", "\n  auto  "} {
		if !strings.Contains(out, p) {
			t.Errorf("catalogue does not say what %q means", strings.TrimSpace(p))
		}
	}
	checkPlainText(t, "catalogue", out)
}

// checkPlainText: a terminal text fits 80 columns, holds no escape, and
// sends nobody to a design document users do not have (nor to its section
// numbers).
func checkPlainText(t *testing.T, what, out string) {
	t.Helper()
	for i, l := range strings.Split(out, "\n") {
		if w := twwidth.Width(l); w > termWidth {
			t.Errorf("%s: line %d is %d columns wide: %s", what, i+1, w, l)
		}
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("%s: ANSI escape", what)
	}
	for _, bad := range []string{"docs/design/rules.md", "shared/", "§"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: %q points at a document users do not have", what, bad)
		}
	}
}

func TestWriteRule(t *testing.T) {
	for _, r := range rules.Catalog() {
		var buf bytes.Buffer
		ex := &RuleExample{Scenario: r.Example, File: r.Example + ".pcapng", Finding: r.Severity.String() + " " + r.ID + " DIR/" + r.Example + ".pcapng:1"}
		if err := WriteRule(&buf, r, ex); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, want := range []string{r.ID + "\n", "severity  " + r.Severity.String(), "group     " + r.Group.Title(),
			"\nWhat fires\n", "\nWhy it matters\n", "\nHow to fix it\n",
			"kidscope analyze DIR/" + r.Example + ".pcapng\n",
			"\n    " + strings.Join(textdoc.Wrap(ex.Finding, termWidth-4), "\n    ") + "\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", r.ID, want, out)
			}
		}
		if got := strings.Contains(out, "\nProfiles\n"); got != (r.Profile != "") {
			t.Errorf("%s: profile %q, explains the profiles: %v", r.ID, r.Profile, got)
		}
		checkPlainText(t, r.ID, out)
	}
}

// TestWordsExplained: a rule's text gets the glossary's words it uses,
// matched as whole words, and only those.
func TestWordsExplained(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"answered NONE", false},
		{"a header carries ONE", true},
		{"(ONE)", true},
		{"ONEs", false},
		{"the ZERO-ish", false},
		{"R = ZERO", true},
	} {
		if got := usesAny(c.text, []string{"ZERO", "ONE"}); got != c.want {
			t.Errorf("usesAny(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	var buf bytes.Buffer
	if err := WriteRule(&buf, sampleRules[2], nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nWords\n  ZERO, ONE  ") {
		t.Errorf("a rule that says ONE does not explain it:\n%s", buf.String())
	}
	buf.Reset()
	if err := WriteRule(&buf, sampleRules[1], nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "\nWords\n") {
		t.Errorf("a rule that uses no glossary word explains some:\n%s", buf.String())
	}
}

// TestRulesMarkdownEscaped: in the Markdown form every text of a rule is
// literal (escaped, or in a code span or fence longer than any backtick
// run it holds), and each rule has the heading its index row links to.
func TestRulesMarkdownEscaped(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteRulesMarkdown(&buf, sampleRules, sampleExamples); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`bytes are \*missing\* \| \<b\>resynced\</b\> \` + "`x\\` \\[l\\](u) \\_y\\_ \\#z \\&amp;",
		`\*not\* emphasis\\ \| pipe`,
		"\n````text\nerror header-id-changed", "fenced; broker answer: INVALID_REQUEST\n````\n",
		"| [`stream-gap`](#stream-gap) |", "\n### `stream-gap`\n",
		"a \\*seed\\* client \\| changes \\`its\\` ID",
		"kidscope analyze -v -p 29092 DIR/join-old-version.pcap\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, bad := range []string{"docs/design/rules.md", "shared/", "§"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q points at a document users do not have", bad)
		}
	}
}

func TestMdPara(t *testing.T) {
	for in, want := range map[string]string{
		"--profile auto": `\--profile auto`, "+ x": `\+ x`, "=== x": `\=== x`,
		"1. one": `1\. one`, "12) x": `12\) x`, "1.5 s": `1\.5 s`, "v1. x": "v1. x", "": "",
	} {
		if got := mdPara(in); got != want {
			t.Errorf("mdPara(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every letter or name a group's summaries use (H, R, B, ZERO, ...) is
// defined under that group's table, not left for the reader to guess.
func TestCatalogDefinesItsWords(t *testing.T) {
	rs := rules.Catalog()
	var buf bytes.Buffer
	if err := WriteCatalog(&buf, rs); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	groups := groupRules(rs)
	for i, g := range groups {
		start := strings.Index(out, g[0].Group.Title())
		end := strings.Index(out, "\nProfiles:")
		if i+1 < len(groups) {
			end = strings.Index(out, groups[i+1][0].Group.Title())
		}
		section := out[start:end]
		for _, term := range rules.Glossary() {
			if term.Profile {
				continue
			}
			for _, r := range g {
				if usesAny(r.Summary, term.Words) && !strings.Contains(section, "  "+term.Name+" ") {
					t.Errorf("%s uses %s, but its group does not define it", r.ID, term.Name)
				}
			}
		}
	}
}
