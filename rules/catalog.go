package rules

import (
	"path"
	"sort"
	"strconv"
)

// Rule describes one rule of RULES.md: a row of the catalogue, owned by
// the checker that applies it.
type Rule struct {
	ID       string
	Severity Severity
	Section  string // RULES.md section
	// Place is the rule's position among its section's rules in RULES.md,
	// from 1: the catalogue lists rules in the documents' order.
	Place   int
	Profile string // "seed", "accepted", "both" or "" (profile-independent)
	Summary string // one line
	Detail  string // the full text: when it fires and what it shows
	// Caveat is a limit of what the capture shows, said with each finding
	// of the rule.
	Caveat string
	// Example names a sample scenario that shows it (samples/README.md).
	Example string
	// Precedence is the rule's place in RULES.md §1's order, from 1: a
	// request gets at most one finding of the rules that have one, the
	// first that applies. 0: the rule is outside that order (each of its
	// findings is reported).
	Precedence int
	// Verdict says that the broker's answer to a request this rule finds
	// wrong tells whether the broker enforces KIP-1313 (RULES.md §5).
	Verdict bool
}

// catalog is the rows of the engine's checkers in RULES.md order, and
// byID indexes it. Both are built once and never changed.
var (
	catalog = assemble(New(Options{}).checkers)
	byID    = indexRules(catalog)
)

// assemble joins the checkers' rows and orders them as RULES.md does.
func assemble(checkers []checker) []Rule {
	var all []Rule
	for _, k := range checkers {
		all = append(all, k.rules()...)
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := sectionNumber(all[i].Section), sectionNumber(all[j].Section)
		if a != b {
			return a < b
		}
		return all[i].Place < all[j].Place
	})
	return all
}

func sectionNumber(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func indexRules(rs []Rule) map[string]Rule {
	m := make(map[string]Rule, len(rs))
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

// Catalog returns every rule, in RULES.md order.
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
