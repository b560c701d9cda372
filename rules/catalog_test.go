package rules

import (
	"slices"
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
