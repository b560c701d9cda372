package report

import (
	"cmp"
	"slices"

	"github.com/kidscope/kidscope/rules"
)

// instancesShown is how many client instances the table, Markdown and HTML
// list: a live capture of a busy broker keeps thousands, and a row is
// several lines. JSON, NDJSON and CSV list every one kept.
const instancesShown = 50

// instancesToShow orders a report's client instances by how much they
// matter to a reader — those with findings first, worst severity and most
// findings first, then by connections — and keeps the first
// instancesShown. The order is stable, so instances that tie stay in the
// order they were first seen.
func instancesToShow(res *rules.Result) []rules.Instance {
	type weight struct {
		worst    int // 0 none, then 1 + severity
		findings int
	}
	byConn := map[int]*weight{}
	for i := range res.Findings {
		f := &res.Findings[i]
		w := byConn[f.ConnID]
		if w == nil {
			w = &weight{}
			byConn[f.ConnID] = w
		}
		w.worst = max(w.worst, 1+int(f.Severity))
		w.findings++
	}
	type ranked struct {
		in rules.Instance
		w  weight
	}
	list := make([]ranked, len(res.Instances))
	for i, in := range res.Instances {
		list[i].in = in
		for _, c := range in.Connections {
			if w := byConn[c]; w != nil {
				list[i].w.worst = max(list[i].w.worst, w.worst)
				list[i].w.findings += w.findings
			}
		}
	}
	slices.SortStableFunc(list, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.w.worst, a.w.worst), cmp.Compare(b.w.findings, a.w.findings),
			cmp.Compare(b.in.ConnectionCount, a.in.ConnectionCount))
	})
	out := make([]rules.Instance, 0, min(len(list), instancesShown))
	for _, r := range list[:min(len(list), instancesShown)] {
		out = append(out, r.in)
	}
	return out
}
