package rules

import "maps"

// A Tally keeps the first findings up to a cap and counts every one: by
// severity, by rule, and by rule and connection for the groups it lists
// (those with a kept finding). An engine keeps its findings in one; a
// caller that gathers findings from several engines (kidscope fleet) keeps
// them in one of its own, so that its report counts as an engine's does.
type Tally struct {
	max        int
	findings   []Finding
	dropped    int64
	bySeverity [3]int64
	byRule     map[string]int64
	byGroup    map[FindingGroup]int64
}

// NewTally returns a tally that keeps at most max findings.
func NewTally(max int) *Tally {
	return &Tally{max: max, byRule: map[string]int64{}, byGroup: map[FindingGroup]int64{}}
}

// Add counts f, and keeps it while there is room. It returns where f is
// kept, for Repeat (-1: not kept).
func (t *Tally) Add(f Finding) int {
	t.bySeverity[f.Severity]++
	t.byRule[f.Rule]++
	g := FindingGroup{f.Rule, f.ConnID}
	if len(t.findings) < t.max {
		t.findings = append(t.findings, f)
		t.byGroup[g]++
		return len(t.findings) - 1
	}
	t.dropped++
	if _, listed := t.byGroup[g]; listed {
		t.byGroup[g]++
	}
	return -1
}

// Repeat counts one more event in the Count of the finding kept at i (a
// finding made once for several requests); nothing when it is not kept.
func (t *Tally) Repeat(i int) {
	if i >= 0 && i < len(t.findings) {
		t.findings[i].Count++
	}
}

// Fill sets res's findings (a copy, in the order added) and their counts.
func (t *Tally) Fill(res *Result) {
	res.Findings = append([]Finding(nil), t.findings...)
	res.Dropped.Findings = t.dropped
	res.FindingsBySeverity = t.bySeverity
	res.FindingsByRule = maps.Clone(t.byRule)
	res.FindingCounts = maps.Clone(t.byGroup)
}
