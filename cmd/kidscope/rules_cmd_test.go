package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

var update = flag.Bool("update", false, "rewrite docs/rules.md, docs/man and the expected outputs of the testscripts under testdata/script")

// goldenFile compares got with the file at path, or rewrites it with
// -update.
func goldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/kidscope -run 'Rule|Doc' -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date (go test ./cmd/kidscope -run 'Rule|Doc' -update rewrites it after review)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// TestRulesExplainEveryRule: `kidscope rules ID` of every rule says what
// fires, why it matters and how to fix it, explains the profiles when the
// rule has one, shows its example with the commands and the finding, and
// sends nobody to a document users do not have.
func TestRulesExplainEveryRule(t *testing.T) {
	for _, r := range rules.Catalog() {
		out, stderr, code := runKidscope(t, "rules", r.ID)
		if code != 0 || stderr != "" {
			t.Fatalf("rules %s: exit %d, stderr %q", r.ID, code, stderr)
		}
		flags := ""
		if r.Severity == rules.Info {
			flags = "-v "
		}
		want := []string{r.ID + "\n", "  severity  " + r.Severity.String() + "\n", "\nWhat fires\n", "\nWhy it matters\n", "\nHow to fix it\n",
			"\nExample\n", "    kidscope samples DIR\n", "    kidscope analyze " + flags + "DIR/" + r.Example + ".pcapng\n",
			"It reports, among its findings:\n    " + r.Severity.String() + " " + r.ID}
		if _, finding, _ := strings.Cut(out, "It reports"); !strings.Contains(finding, " DIR/"+r.Example+".pcapng:") {
			t.Errorf("rules %s: the example finding does not name DIR/%s.pcapng:\n%s", r.ID, r.Example, out)
		}
		if r.Profile != "" {
			want = append(want, "\nProfiles\n  seed  ", "\n  accepted  ", "\n  auto  ")
		} else if strings.Contains(out, "\nProfiles\n") {
			t.Errorf("%s: profile-independent, but explains the profiles", r.ID)
		}
		if r.Caveat != "" {
			want = append(want, "\nCaveat\n")
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("rules %s: no %q in\n%s", r.ID, w, out)
			}
		}
		for _, bad := range []string{"docs/design/rules.md", "shared/", "§"} {
			if strings.Contains(out, bad) {
				t.Errorf("rules %s: %q points at a document users do not have:\n%s", r.ID, bad, out)
			}
		}
	}
}

// TestRuleExamplesAreScenarios: the example `kidscope rules ID` names is a
// committed scenario whose expectations hold that rule, and analysing it
// as the command does reports a finding of the rule.
func TestRuleExamplesAreScenarios(t *testing.T) {
	for _, r := range rules.Catalog() {
		raw, err := os.ReadFile(filepath.Join("../../samples/captures", r.Example+".expect.json"))
		if err != nil {
			t.Errorf("%s: example %q: %v", r.ID, r.Example, err)
			continue
		}
		var exp expectation
		if err := json.Unmarshal(raw, &exp); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range exp.Findings {
			found = found || f.Rule == r.ID
		}
		if !found {
			t.Errorf("%s: example %q does not show it", r.ID, r.Example)
		}
		ex, err := ruleExample(context.Background(), r)
		if err != nil {
			t.Errorf("%s: %v", r.ID, err)
			continue
		}
		if ex.File != exp.File {
			t.Errorf("%s: example file %q, the scenario writes %q", r.ID, ex.File, exp.File)
		}
		if !strings.HasPrefix(ex.Finding, r.Severity.String()+" "+r.ID+" DIR/"+exp.File+":") {
			t.Errorf("%s: example finding %q", r.ID, ex.Finding)
		}
	}
}

// TestRulesDocCurrent: docs/rules.md is what the catalogue and the
// examples make now; -update rewrites it.
func TestRulesDocCurrent(t *testing.T) {
	exs := map[string]report.RuleExample{}
	for _, r := range rules.Catalog() {
		ex, err := ruleExample(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if ex != nil {
			exs[r.ID] = *ex
		}
	}
	var buf bytes.Buffer
	if err := report.WriteRulesMarkdown(&buf, rules.Catalog(), exs); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, filepath.Join("..", "..", "docs", "rules.md"), buf.Bytes())
	for _, r := range rules.Catalog() {
		if !strings.Contains(buf.String(), "\n### `"+r.ID+"`\n") {
			t.Errorf("docs/rules.md has no section for %s", r.ID)
		}
	}
}
