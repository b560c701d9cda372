package rules

// Filter is the user's choice of findings: which rules (nil Keep: every
// one), which to leave out, and the lowest severity shown. The engine
// checks every rule regardless, so that cross-request state and the
// severity counts do not depend on what is shown.
type Filter struct {
	Keep map[string]bool
	Skip map[string]bool
	Min  Severity
}

// Wants reports whether a finding passes the filter.
func (f *Filter) Wants(x *Finding) bool {
	return f.wantsRule(x.Rule, x.Severity)
}

// wantsRule reports whether the findings of a rule of severity sev pass.
func (f *Filter) wantsRule(rule string, sev Severity) bool {
	if f.Keep != nil && !f.Keep[rule] || f.Skip[rule] {
		return false
	}
	return sev >= f.Min
}

// Apply keeps the findings of res that pass, and the counts of their
// rules.
func (f *Filter) Apply(res *Result) {
	kept := res.Findings[:0]
	for _, x := range res.Findings {
		if f.Wants(&x) {
			kept = append(kept, x)
		}
	}
	res.Findings = kept
	for rule := range res.FindingsByRule {
		if r, _ := Lookup(rule); !f.wantsRule(rule, r.Severity) {
			delete(res.FindingsByRule, rule)
		}
	}
	for g := range res.FindingCounts {
		if r, _ := Lookup(g.Rule); !f.wantsRule(g.Rule, r.Severity) {
			delete(res.FindingCounts, g)
		}
	}
}

// Failing reports whether res holds a finding of severity at or above
// min among the findings the filter keeps, counting those the engine's
// cap left out of the list.
func (f *Filter) Failing(res *Result, min Severity) bool {
	for rule, n := range res.FindingsByRule {
		if r, _ := Lookup(rule); n > 0 && r.Severity >= min && f.wantsRule(rule, r.Severity) {
			return true
		}
	}
	for _, x := range res.Findings {
		if x.Severity >= min {
			return true
		}
	}
	return false
}
