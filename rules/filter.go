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
	if f.Keep != nil && !f.Keep[x.Rule] || f.Skip[x.Rule] {
		return false
	}
	return x.Severity >= f.Min
}

// Apply keeps the findings of res that pass.
func (f *Filter) Apply(res *Result) {
	kept := res.Findings[:0]
	for _, x := range res.Findings {
		if f.Wants(&x) {
			kept = append(kept, x)
		}
	}
	res.Findings = kept
}

// Failing reports whether res holds a finding of severity at or above
// min among the findings the filter keeps, counting those the engine's
// cap left out of the list when every rule is kept.
func (f *Filter) Failing(res *Result, min Severity) bool {
	if res.Dropped.Findings > 0 && f.Keep == nil && f.Skip == nil {
		for s := min; s <= Error; s++ {
			if res.FindingsBySeverity[s] > 0 {
				return true
			}
		}
	}
	for _, x := range res.Findings {
		if x.Severity >= min {
			return true
		}
	}
	return false
}
