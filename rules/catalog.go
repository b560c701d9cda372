package rules

import (
	"cmp"
	"path"
	"slices"
	"sort"
)

// Rule describes one rule of docs/design/rules.md: a row of the catalogue, declared
// once, by the checker that applies it, with every attribute the engine,
// the report, the docs and the sample scenarios read of it. Its texts are
// all users get: `kidscope rules ID` and docs/rules.md are made from them,
// and users do not have the design documents.
type Rule struct {
	ID       string
	Severity Severity
	// Group is the part of the catalogue the rule is listed in.
	Group   Group
	Profile string // "seed", "accepted", "both" or "" (profile-independent)
	// CrossConnection: the rule looks across connections, so an engine
	// that sees one host finds it for that host only, and kidscope fleet
	// finds it again over every host's observations.
	CrossConnection bool
	// Verdict says that the broker's answer to a request this rule finds
	// wrong tells whether the broker enforces KIP-1313 (docs/design/rules.md §5).
	Verdict bool
	// AtAnswer: its findings point at the broker's answer, not at the
	// request (docs/design/rules.md §1).
	AtAnswer bool
	// After places a rule that one checker applies among another
	// checker's rules of its group: right after the rule named. Without
	// it the catalogue lists a group's rules in the engine's checker
	// order, each checker's in the order it declares them.
	After string
	// Summary is one line, also each finding's message: changing it
	// changes analyze's output.
	Summary string
	// Detail is what fires: exactly when the rule fires, when it does not,
	// and what its findings show.
	Detail string
	// Why is why it matters: what breaks for the operator of the client or
	// the cluster when it fires.
	Why string
	// Fix is how to fix it, on the client and/or the broker (or in how the
	// capture is taken, for what the capture cannot show).
	Fix string
	// Caveat is a limit of what the capture shows, said with each finding
	// of the rule.
	Caveat string
	// Example names a sample scenario that shows it (samples/README.md).
	Example string
	// Precedence is the rule's place in the precedence list, from 1; 0:
	// the rule is outside it (each of its findings is reported). The
	// catalogue sets it: a declaration leaves it 0.
	Precedence int
}

// Group is a part of the catalogue: the rules of one section of docs/design/rules.md.
// Users see its title, never a section number.
type Group int8

const (
	GroupHeader     Group = iota + 1 // docs/design/rules.md §3
	GroupTelemetry                   // §4
	GroupBroker                      // §5
	GroupMembership                  // §6
	GroupInstances                   // §7
	GroupCapture                     // §8
)

// Title names the group for users.
func (g Group) Title() string {
	switch g {
	case GroupHeader:
		return "Header rules (KIP-1313)"
	case GroupTelemetry:
		return "Telemetry rules (KIP-714) and the broker's telemetry answers"
	case GroupBroker:
		return "Broker and client classification"
	case GroupMembership:
		return "Group membership rules (KIP-394, KIP-848/KIP-1082)"
	case GroupInstances:
		return "Across connections (client instance inventory)"
	case GroupCapture:
		return "What the capture cannot show"
	}
	return "Other rules"
}

// precedence is docs/design/rules.md §1's order: a request gets at most one finding of
// these rules, the first that applies, whose message names the others that
// also apply.
var precedence = []string{
	HeaderIDReserved, HeaderIDMissingFirst, HeaderIDChanged, HeaderIDDropped, HeaderIDLate,
	TelemetryPushReservedID, TelemetryBodyMismatch, TelemetryIDMissing, TelemetryIDNotReused,
	TelemetryPushAfterTerminate, TelemetryPushUnknownID, HeaderClientIDRepeated, HeaderIDRepeated,
}

// catalog is the rules the engine's checkers declare, in catalogue order,
// and byID indexes it. Both are built once and never changed.
var (
	catalog = assemble(New(Options{}).checkers, precedence)
	byID    = indexRules(catalog)
)

// assemble joins the checkers' declarations in catalogue order: by group,
// then in the checkers' order and each checker's own, a rule with After
// moved behind the rule it names; and sets each rule's place in order.
func assemble(checkers []checker, order []string) []Rule {
	var all, placed []Rule
	for _, k := range checkers {
		all = append(all, k.rules()...)
	}
	slices.SortStableFunc(all, func(a, b Rule) int { return cmp.Compare(a.Group, b.Group) })
	for _, r := range all {
		if r.After == "" {
			placed = append(placed, r)
		}
	}
	for _, r := range all {
		if r.After != "" {
			i := slices.IndexFunc(placed, func(p Rule) bool { return p.ID == r.After })
			placed = slices.Insert(placed, i+1, r)
		}
	}
	for i := range placed {
		placed[i].Precedence = slices.Index(order, placed[i].ID) + 1
	}
	return placed
}

func indexRules(rs []Rule) map[string]Rule {
	m := make(map[string]Rule, len(rs))
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

// Catalog returns every rule, in docs/design/rules.md order.
func Catalog() []Rule { return append([]Rule(nil), catalog...) }

// Lookup returns one rule.
func Lookup(id string) (Rule, bool) {
	r, ok := byID[id]
	return r, ok
}

// Select returns the IDs of the rules matching any of the patterns (IDs or
// path.Match globs such as telemetry-*), sorted; unknown patterns are
// returned as unmatched.
func Select(patterns []string) (ids []string, unmatched []string) {
	seen := map[string]bool{}
	for _, p := range patterns {
		hit := false
		for _, r := range catalog {
			if ok, _ := path.Match(p, r.ID); ok {
				hit = true
				if !seen[r.ID] {
					seen[r.ID] = true
					ids = append(ids, r.ID)
				}
			}
		}
		if !hit {
			unmatched = append(unmatched, p)
		}
	}
	sort.Strings(ids)
	return ids, unmatched
}

// Term is a word the rules' texts use, explained once for all of them.
type Term struct {
	Name string
	// Short is the meaning in a few words, for the catalogue's footer.
	Short string
	// Meaning is the full explanation.
	Meaning string
	// Profile marks the KIP-1313 profiles, which every rule with a
	// Profile is explained with.
	Profile bool
	// Words are the words whose use in a rule's text calls for the term,
	// matched as whole words (the profiles go with the rule's Profile
	// instead: "seed" also names the seed's telemetry table).
	Words []string
}

// Glossary returns the terms of the rules' texts, the profiles first. It
// is built on each call so that callers cannot change another's copy.
func Glossary() []Term {
	return []Term{
		{Name: "seed", Profile: true,
			Short: "KIP-1313 as first proposed: the ID in every flexible (v2) header",
			Meaning: "KIP-1313 as first proposed. Every request with a flexible (v2) request header may carry the client instance ID (tag 0). " +
				"The connection's first flexible-header request decides: if it carries an ID, every later flexible-header request must carry the same ID; " +
				"if it carries none, no later one may carry one. An explicit ZERO is the same as no ID. " +
				"Requests with a v1 header (SaslHandshake, OffsetDelete v0, every non-flexible version) are exempt."},
		{Name: "accepted", Profile: true,
			Short: "reworked KIP-1313 (Kafka 4.5): the ID once, in the first v3 header",
			Meaning: "The reworked KIP-1313, aimed at Kafka 4.5. Only requests that use request header v3 take part: " +
				"OffsetDelete v1+, GetTelemetrySubscriptions v1+, PushTelemetry v1+, the share-group state RPCs (keys 83, 84 and 86 v1+; 85 and 87 v2+), " +
				"what --header-v3 KEY:MINVERSION adds, and any flexible-header request that carries tag 0 (v3 and v2 headers are the same bytes). " +
				"The connection's first v3-header request must carry a non-reserved ID and the ClientId; later v3-header requests omit the ID and send a null ClientId. " +
				"An explicit ZERO is reserved. SaslHandshake and requests inside Envelope are exempt; v1 and v2-header requests before the first v3 one, such as ApiVersions, are not judged."},
		{Name: "auto", Profile: true,
			Short: "the default (--profile auto): each connection by the one it follows",
			Meaning: "--profile auto, the default, judges each connection by the profile its own traffic follows. " +
				"After the first request that carries a non-zero header ID, the next flexible-header request decides: it carries an ID: seed; " +
				"no ID and a null ClientId: accepted; no ID and a ClientId: seed (and that request is a seed violation). " +
				"A client that never sends an ID is an old client: no header rule applies, except that its first request mapped to header v3 is judged as accepted. " +
				"Where the capture never shows which, only header-id-reserved applies. --profile seed or accepted judges every connection by one profile. " +
				"The connections table shows the profile each connection was judged by."},
		{Name: "ZERO, ONE", Words: []string{"ZERO", "ONE"},
			Short:   "the reserved UUIDs: all zero, and fifteen zero bytes then 01",
			Meaning: "The reserved UUIDs of Kafka: ZERO is 16 zero bytes, ONE is fifteen zero bytes then 01. Neither may name a client."},
		{Name: "established ID", Words: []string{"established"},
			Short: "the ID a connection's first ID-relevant request set",
			Meaning: "The ID (or its absence) that a connection's first ID-relevant request set: under seed the first flexible-header request, " +
				"under accepted the first v3-header request. On a connection the capture joined mid-stream it is the first non-zero ID seen on it."},
		{Name: "mid-stream", Words: []string{"mid-stream"},
			Short: "a connection whose start the capture missed",
			Meaning: "A connection whose TCP handshake the capture did not see: it began before the capture, so its true first request is unknown " +
				"and the rules that need it (header-id-late, header-id-missing-first) are not applied to it."},
		{Name: "H, R, B", Words: []string{"H", "R", "B"},
			Short: "telemetry IDs: in the header, in the request body, returned by the broker",
			Meaning: "In the telemetry rules: H is the client instance ID in the request header, R the ClientInstanceId in a v0 request body, " +
				"B the ClientInstanceId the broker returns in its GetTelemetrySubscriptions answer."},
	}
}
