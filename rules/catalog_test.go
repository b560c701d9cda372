package rules

import (
	"slices"
	"strings"
	"testing"
)

// TestCatalogFromCheckers: the catalogue is the engine's checkers'
// declarations, each rule once, grouped, with the precedence list's
// places; the precedence list names rules of the header and telemetry
// groups (docs/design/rules.md §1 orders §3 and §4), each once; After names a rule of
// the same group.
func TestCatalogFromCheckers(t *testing.T) {
	cat := Catalog()
	var declared []string
	for _, k := range New(Options{}).checkers {
		for _, r := range k.rules() {
			if slices.Contains(declared, r.ID) {
				t.Errorf("%s is declared twice", r.ID)
			}
			declared = append(declared, r.ID)
			if r.Precedence != 0 {
				t.Errorf("%s declares a precedence: the precedence list sets it", r.ID)
			}
		}
	}
	if len(cat) != len(declared) {
		t.Errorf("catalogue of %d rules, %d declared", len(cat), len(declared))
	}
	for i, r := range cat {
		if i > 0 && r.Group < cat[i-1].Group {
			t.Errorf("%s (group %d) after %s (group %d)", r.ID, r.Group, cat[i-1].ID, cat[i-1].Group)
		}
		if got, ok := Lookup(r.ID); !ok || got.ID != r.ID {
			t.Errorf("Lookup(%s) = %v, %v", r.ID, got.ID, ok)
		}
		if want := slices.Index(precedence, r.ID) + 1; r.Precedence != want || Ranked(r.ID) != (want > 0) {
			t.Errorf("%s: precedence %d, want %d", r.ID, r.Precedence, want)
		}
		if r.Precedence > 0 && r.Group != GroupHeader && r.Group != GroupTelemetry {
			t.Errorf("%s is ranked but is neither a header nor a telemetry rule", r.ID)
		}
		if r.Precedence > 0 && r.AtAnswer {
			t.Errorf("%s is ranked but its findings are about answers, not requests", r.ID)
		}
		if r.After != "" {
			if a, ok := Lookup(r.After); !ok || a.Group != r.Group || cat[i-1].ID != r.After {
				t.Errorf("%s: After %q is not the rule before it in its group", r.ID, r.After)
			}
		}
		if CrossConnection(r.ID) != r.CrossConnection {
			t.Errorf("CrossConnection(%s) = %v", r.ID, CrossConnection(r.ID))
		}
	}
	seen := map[string]bool{}
	for _, id := range precedence {
		if _, ok := Lookup(id); !ok || seen[id] {
			t.Errorf("precedence list: %q unknown or twice", id)
		}
		seen[id] = true
	}
}

// TestVerdictRules: the rules whose findings decide a broker verdict are
// docs/design/rules.md §5's: the header rules of severity error, and
// telemetry-body-mismatch.
func TestVerdictRules(t *testing.T) {
	for _, r := range Catalog() {
		want := r.Group == GroupHeader && r.Severity == Error || r.ID == TelemetryBodyMismatch
		if r.Verdict != want {
			t.Errorf("%s: Verdict %v, want %v", r.ID, r.Verdict, want)
		}
	}
}

// TestRuleTexts: every rule explains itself (what fires, why it matters,
// how to fix it, an example), in words of its own rather than one text
// shared by several, and points nobody at the design documents, which
// users do not have.
func TestRuleTexts(t *testing.T) {
	why, fix := map[string]string{}, map[string]string{}
	for _, r := range Catalog() {
		for name, text := range map[string]string{"Summary": r.Summary, "Detail": r.Detail, "Why": r.Why, "Fix": r.Fix, "Example": r.Example} {
			if strings.TrimSpace(text) == "" {
				t.Errorf("%s: no %s", r.ID, name)
			}
		}
		if other, ok := why[r.Why]; ok {
			t.Errorf("%s and %s say the same of why they matter", r.ID, other)
		}
		if other, ok := fix[r.Fix]; ok {
			t.Errorf("%s and %s say the same of how to fix them", r.ID, other)
		}
		why[r.Why], fix[r.Fix] = r.ID, r.ID
		// The rules about the capture are fixed in how it is taken; every
		// other one says which side, client or broker, fixes it.
		if r.Group != GroupCapture && !strings.Contains(r.Fix, "Client") && !strings.Contains(r.Fix, "Broker") {
			t.Errorf("%s: the fix names neither the client nor the broker: %s", r.ID, r.Fix)
		}
		checkUserText(t, r.ID, r.Summary+" "+r.Detail+" "+r.Why+" "+r.Fix+" "+r.Caveat)
	}
	names := map[string]bool{}
	profiles := 0
	for _, g := range Glossary() {
		if names[g.Name] || g.Name == "" || g.Short == "" || g.Meaning == "" {
			t.Errorf("glossary term %q: empty or twice", g.Name)
		}
		names[g.Name] = true
		if g.Profile {
			profiles++
		} else if len(g.Words) == 0 {
			t.Errorf("glossary term %q: no words call for it", g.Name)
		}
		checkUserText(t, g.Name, g.Short+" "+g.Meaning)
	}
	if !names["seed"] || !names["accepted"] || profiles != 3 {
		t.Errorf("glossary %v does not explain the profiles seed, accepted and auto", names)
	}
}

func checkUserText(t *testing.T, what, text string) {
	t.Helper()
	for _, bad := range []string{"docs/design/rules.md", "shared/", "§", "docs/design/protocol.md"} {
		if strings.Contains(text, bad) {
			t.Errorf("%s: %q points at a document users do not have", what, bad)
		}
	}
}
