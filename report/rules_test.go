package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/kidscope/kidscope/rules"
)

// sampleRules are fixed, so the golden files do not follow edits of the
// real catalogue's wording.
var sampleRules = []rules.Rule{
	{ID: "header-id-changed", Severity: rules.Error, Section: "3", Profile: "both",
		Summary: "a later request carries a non-zero instance ID different from the connection's established one",
		Detail:  "Every request of a connection that carries a header client instance ID (tag 0) must carry the ID the connection established with its first ID-relevant request.",
		Example: "seed-changed"},
	{ID: "join-member-id-required-old-version", Severity: rules.Warning, Section: "6",
		Summary: "MEMBER_ID_REQUIRED sent in answer to JoinGroup v0–v3", Example: "join-old-version"},
	{ID: "stream-gap", Severity: rules.Info, Section: "8", Summary: "bytes are missing; the Kafka framing was resynchronised"},
}

func TestWriteCatalogGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCatalog(&buf, sampleRules); err != nil {
		t.Fatal(err)
	}
	golden(t, "rules_catalog.golden", buf.Bytes())
	buf.Reset()
	if err := WriteRule(&buf, sampleRules[0]); err != nil {
		t.Fatal(err)
	}
	golden(t, "rules_rule.golden", buf.Bytes())
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
	}
	for i, l := range strings.Split(out, "\n") {
		if w := twwidth.Width(l); w > termWidth {
			t.Errorf("catalogue line %d is %d columns wide: %s", i+1, w, l)
		}
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Error("ANSI escape in the catalogue")
	}
}

func TestWriteRule(t *testing.T) {
	for _, r := range rules.Catalog() {
		var buf bytes.Buffer
		if err := WriteRule(&buf, r); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, want := range []string{r.ID + "\n", "severity  " + r.Severity.String(), "section   §" + r.Section} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", r.ID, want, out)
			}
		}
		if strings.Contains(out, "RULES.md") || strings.Contains(out, "shared/spec") {
			t.Errorf("%s: points at a design document users do not have:\n%s", r.ID, out)
		}
		if r.Example != "" && !strings.Contains(out, "kidscope analyze DIR/"+r.Example+".pcapng") {
			t.Errorf("%s: no example command in\n%s", r.ID, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if twwidth.Width(l) > termWidth {
				t.Errorf("%s: line wider than %d: %s", r.ID, termWidth, l)
			}
		}
	}
}
