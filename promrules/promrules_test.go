package promrules

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// promtool returns promtool's path, or fails: the rules are untested
// without it (apt-get install prometheus; .ci/run installs it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: the rules' tests need it (apt-get install prometheus; .ci/run installs it)")
	}
	return p
}

// TestPromtool: promtool accepts the rules, and their unit tests pass:
// each alert fires on series that call for it and is silent on others.
func TestPromtool(t *testing.T) {
	tool := promtool(t)
	for _, args := range [][]string{{"check", "rules", "rules.yml"}, {"test", "rules", "rules_test.yml"}} {
		out, err := exec.Command(tool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestEveryAlertTested: each alert of rules.yml has a unit test that
// expects it to fire.
func TestEveryAlertTested(t *testing.T) {
	tests, err := os.ReadFile("rules_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, l := range strings.Split(string(Rules), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(l), "- alert: "); ok {
			alerts = append(alerts, name)
		}
	}
	if len(alerts) < 5 {
		t.Fatalf("%d alerts: %v", len(alerts), alerts)
	}
	for _, a := range alerts {
		if !strings.Contains(string(tests), "alertname: "+a+"\n        exp_alerts:\n          - exp_labels:") {
			t.Errorf("no test expects %s to fire", a)
		}
		if !strings.Contains(string(tests), "alertname: "+a+"\n        exp_alerts: []") {
			t.Errorf("no test expects %s to stay silent", a)
		}
	}
}

func TestMetricNames(t *testing.T) {
	got := MetricNames()
	for _, want := range []string{"kidscope_findings_total", "kidscope_kernel_drops_total", "kidscope_publish_dropped_total",
		"kidscope_fleet_agent_last_seen_timestamp_seconds", "kidscope_broker_kip1313_verdict"} {
		if !slices.Contains(got, want) {
			t.Errorf("MetricNames %v lacks %s", got, want)
		}
	}
	if slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, ":") }) {
		t.Errorf("a recording rule's name among the metrics: %v", got)
	}
}

// exprs reads each rule's name and expression from rules.yml (written in
// one layout: "- record:" or "- alert:", then "expr:", inline or as a
// block), the expression's whitespace collapsed.
func exprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(string(Rules), "\n")
	name := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if n, ok := strings.CutPrefix(l, "- record: "); ok {
			name = n
		} else if n, ok := strings.CutPrefix(l, "- alert: "); ok {
			name = n
		} else if e, ok := strings.CutPrefix(l, "expr: "); ok {
			if e == "|" {
				var parts []string
				indent := strings.Repeat(" ", len(lines[i])-len(strings.TrimLeft(lines[i], " "))+1)
				for i+1 < len(lines) && strings.HasPrefix(lines[i+1], indent) {
					i++
					parts = append(parts, strings.TrimSpace(lines[i]))
				}
				e = strings.Join(parts, " ")
			}
			out[name] = strings.Join(strings.Fields(e), " ")
		}
	}
	if len(out) != 9 {
		t.Fatalf("read %d rules from rules.yml: %v", len(out), out)
	}
	return out
}

// TestDocsExpressions: docs/metrics.md shows every rule with the
// expression rules.yml has.
func TestDocsExpressions(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range exprs(t) {
		if !strings.Contains(string(doc), "| `"+name+"` | `"+e+"` |") {
			t.Errorf("docs/metrics.md does not show %s as `%s`", name, e)
		}
	}
}
