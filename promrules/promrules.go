package promrules

import (
	_ "embed"
	"regexp"
	"slices"
)

// Rules is the rule file, YAML as Prometheus's rule_files take it.
//
//go:embed rules.yml
var Rules []byte

// metricName matches kidscope's metric names; the recording rules' own
// names (kidscope:…) have a colon and do not match.
var metricName = regexp.MustCompile(`\bkidscope_[a-z0-9_]+\b`)

// MetricNames lists, sorted, every kidscope metric the rules name.
func MetricNames() []string {
	var names []string
	for _, m := range metricName.FindAll(Rules, -1) {
		if n := string(m); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
