package rules

import (
	"slices"
	"strings"
	"testing"
)

// rulesMD is every rule ID of RULES.md, in the order its tables list them
// (§3, §4, §6, §7, §8).
var rulesMD = []string{
	"header-id-changed", "header-id-dropped", "header-id-late", "header-id-missing-first", "header-id-reserved",
	"header-client-id-repeated", "header-id-repeated",
	"telemetry-body-mismatch", "telemetry-id-not-reused", "telemetry-push-reserved-id", "telemetry-push-after-terminating",
	"telemetry-id-missing", "telemetry-push-unknown-id", "broker-id-not-assigned", "broker-id-conflict",
	"broker-rejected-valid", "broker-id-reissued",
	"join-member-id-not-used", "join-member-id-required-old-version", "heartbeat-member-id-empty", "heartbeat-member-id-changed",
	"instance-id-shared", "instance-id-split",
	"stream-mid-start", "stream-gap", "stream-not-kafka", "stream-unanswered",
}

// precedenceMD is RULES.md §1's order: a request gets at most one finding
// from §3 and §4 together, the first of these that applies.
var precedenceMD = []string{
	"header-id-reserved", "header-id-missing-first", "header-id-changed", "header-id-dropped", "header-id-late",
	"telemetry-push-reserved-id", "telemetry-body-mismatch", "telemetry-id-missing", "telemetry-id-not-reused",
	"telemetry-push-after-terminating", "telemetry-push-unknown-id", "header-client-id-repeated", "header-id-repeated",
}

// TestCatalogFromCheckers: the catalogue assembled from the checkers has
// every rule of RULES.md once, in its order, with its precedence, and is
// what the engine's checkers own.
func TestCatalogFromCheckers(t *testing.T) {
	var ids []string
	for _, r := range Catalog() {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, rulesMD) {
		t.Errorf("catalogue\n %q\nwant RULES.md's\n %q", ids, rulesMD)
	}
	for _, r := range Catalog() {
		want := slices.Index(precedenceMD, r.ID) + 1
		if r.Precedence != want {
			t.Errorf("%s: precedence %d, want %d (RULES.md §1)", r.ID, r.Precedence, want)
		}
		if r.Verdict && r.Severity != Error {
			t.Errorf("%s decides a broker verdict but is a %s rule (RULES.md §5 counts error findings)", r.ID, r.Severity)
		}
		if got, ok := Lookup(r.ID); !ok || got.ID != r.ID {
			t.Errorf("Lookup(%s) = %v, %v", r.ID, got.ID, ok)
		}
	}
	var owned []string
	for _, k := range New(Options{}).checkers {
		for _, r := range k.rules() {
			if slices.Contains(owned, r.ID) {
				t.Errorf("%s is owned by two checkers", r.ID)
			}
			owned = append(owned, r.ID)
		}
	}
	slices.Sort(owned)
	sorted := slices.Sorted(slices.Values(rulesMD))
	if !slices.Equal(owned, sorted) {
		t.Errorf("the engine's checkers own\n %q\nwant\n %q", owned, sorted)
	}
}

// TestVerdictRules: the rules whose findings decide a broker verdict are
// RULES.md §5's: the header rules of severity error, and
// telemetry-body-mismatch.
func TestVerdictRules(t *testing.T) {
	var got []string
	for _, r := range Catalog() {
		if r.Verdict {
			got = append(got, r.ID)
		}
	}
	want := []string{HeaderIDChanged, HeaderIDDropped, HeaderIDLate, HeaderIDMissingFirst, HeaderIDReserved, TelemetryBodyMismatch}
	if !slices.Equal(got, want) {
		t.Errorf("verdict rules %q, want %q", got, want)
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
		if r.Section != "8" && !strings.Contains(r.Fix, "Client") && !strings.Contains(r.Fix, "Broker") {
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
	for _, bad := range []string{"RULES.md", "shared/", "§", "PROTOCOL.md"} {
		if strings.Contains(text, bad) {
			t.Errorf("%s: %q points at a document users do not have", what, bad)
		}
	}
}
