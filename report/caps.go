package report

import (
	"strconv"

	"github.com/kidscope/kidscope/rules"
)

// What the caps of a run left out, as every format says it: the engine
// keeps the first findings and evidence frames, the most recent
// connections and instances, and counts the rest; the people's formats
// say how many were left out next to what they list, and count with the
// true numbers.

// commas writes n with thousands separators: 299,999.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	if len(s) <= 3 {
		if neg {
			return "-" + s
		}
		return s
	}
	b := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		b = append(b, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// severityTotals counts every finding made of the rules the filter kept,
// listed or not; a Result without the engine's counts (built by hand)
// counts its list.
func severityTotals(res *rules.Result) severityCounts {
	c := countSeverities(res.Findings)
	if res.FindingsByRule == nil {
		return c
	}
	var t severityCounts
	for rule, n := range res.FindingsByRule {
		r, _ := rules.Lookup(rule)
		switch r.Severity {
		case rules.Error:
			t.Error += int(n)
		case rules.Warning:
			t.Warning += int(n)
		default:
			t.Info += int(n)
		}
	}
	// Never fewer than listed.
	return severityCounts{Error: max(c.Error, t.Error), Warning: max(c.Warning, t.Warning), Info: max(c.Info, t.Info)}
}

func (c severityCounts) of(s rules.Severity) int {
	switch s {
	case rules.Error:
		return c.Error
	case rules.Warning:
		return c.Warning
	}
	return c.Info
}

func (c severityCounts) total() int { return c.Error + c.Warning + c.Info }

// groupTotal is how many findings of a rule on a connection were made:
// the engine's count, or what is listed.
func groupTotal(res *rules.Result, rule string, conn, listed int) int {
	return max(listed, int(res.FindingCounts[rules.FindingGroup{Rule: rule, ConnID: conn}]))
}
