package fleet_test

import (
	"testing"

	"github.com/kidscope/kidscope/rules"
)

// TestVerdictRulesOutrankRulesAcrossConnections: the fleet takes each
// broker's verdict from its agents (tables.go), which judged the answers
// to requests whose finding was of a rule with Verdict. That is the
// verdict of one engine over every agent's traffic only while such a
// finding cannot be outranked by one of a rule across connections (which
// an agent may not make, or make wrongly, seeing one host): every rule
// with Verdict looks at one connection and comes before every ranked rule
// across connections in docs/design/rules.md §1.
func TestVerdictRulesOutrankRulesAcrossConnections(t *testing.T) {
	lastVerdict, firstCross := 0, 0
	var verdicts, cross int
	for _, r := range rules.Catalog() {
		switch {
		case r.Verdict && rules.CrossConnection(r.ID):
			t.Errorf("%s judges a broker's answer and looks across connections", r.ID)
		case r.Verdict:
			verdicts++
			lastVerdict = max(lastVerdict, r.Precedence)
		case rules.CrossConnection(r.ID) && rules.Ranked(r.ID):
			cross++
			if firstCross == 0 || r.Precedence < firstCross {
				firstCross = r.Precedence
			}
		}
	}
	if verdicts == 0 || cross == 0 {
		t.Fatalf("%d rules with Verdict, %d ranked across connections: the catalogue changed, see what this test guards", verdicts, cross)
	}
	if firstCross <= lastVerdict {
		t.Errorf("a ranked rule across connections (precedence %d) outranks a rule with Verdict (precedence %d): "+
			"the fleet's broker verdicts, taken from its agents, are no longer one engine's", firstCross, lastVerdict)
	}
}
