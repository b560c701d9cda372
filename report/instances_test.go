package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// A report with many client instances lists the ones that matter, up to
// instancesShown, and says how many more it keeps: the one with a finding
// first, then the ones with the most connections.
func TestInstancesCapped(t *testing.T) {
	const n = 3 * instancesShown
	var ins []rules.Instance
	for i := range n {
		var u kafka.UUID
		u[0], u[1], u[15] = byte(i>>8), byte(i), 7
		in := rules.Instance{ID: u, Connections: []int{i + 1}, ConnectionCount: 1}
		if i == n-2 {
			in.ConnectionCount, in.Connections = 9, []int{i + 1, 1000, 1001}
		}
		ins = append(ins, in)
	}
	a := &Analysis{Result: rules.Result{Instances: ins,
		Findings: []rules.Finding{{Rule: "header-id-changed", Severity: rules.Error, ConnID: n}}}}
	out := string(render(t, a, AnalysisOptions{Format: "table"}))
	section := out[strings.Index(out, "CLIENT INSTANCES"):]
	section = section[:strings.Index(section, "\nBROKERS (")]
	rows := 0
	for _, in := range ins {
		if strings.Contains(section, in.ID.String()[:minAbbrev]) {
			rows++
		}
	}
	if rows != instancesShown {
		t.Errorf("%d instances listed, want %d", rows, instancesShown)
	}
	want := fmt.Sprintf("%d more are kept", n-instancesShown)
	if !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
		t.Errorf("no note %q in\n%s", want, section)
	}
	withFinding, most := ins[n-1].ID.String()[:minAbbrev], ins[n-2].ID.String()[:minAbbrev]
	first := ins[0].ID.String()[:minAbbrev]
	iF, iM, i0 := strings.Index(section, withFinding), strings.Index(section, most), strings.Index(section, first)
	if iF < 0 || iM < 0 || i0 < 0 || !(iF < iM && iM < i0) {
		t.Errorf("order: with a finding at %d, most connections at %d, first seen at %d; want them in that order", iF, iM, i0)
	}
	js := string(render(t, a, AnalysisOptions{Format: "json"}))
	if got := strings.Count(js, `"connections_total"`); got != n {
		t.Errorf("JSON lists %d instances, want every one of %d", got, n)
	}
}
