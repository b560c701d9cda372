package report

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kidscope/kidscope/result"
)

// TestAgentsSection: kidscope fleet's AGENTS section, in every document
// format, lists the agents and what was skipped, with the names from the
// topic escaped; without agents nothing of it is written.
func TestAgentsSection(t *testing.T) {
	var brokers []netip.AddrPort
	for i := range 6 {
		brokers = append(brokers, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 9092))
	}
	a := &Analysis{Files: []string{"host-1:eth0"},
		Agents: []result.Agent{{Name: "host-1\x1b[2J\u202e", Source: "eth0", Version: "v1", Runs: 2, Brokers: brokers,
			Records: 1234, Published: 1300, Dropped: 66, LastSeen: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Stopped: true}},
		Fleet: &result.FleetCounts{Records: 1240, Unreadable: 3, Future: 1, Duplicates: 2}}
	for _, format := range []string{"table", "markdown", "json"} {
		var b bytes.Buffer
		if err := WriteAnalysis(&b, a, AnalysisOptions{Format: format}); err != nil {
			t.Fatal(err)
		}
		out := strings.Join(strings.Fields(b.String()), " ")
		// JSON keeps strings as sent, JSON-escaped (ESC is, RLO need not be).
		if strings.Contains(out, "\x1b[2J") || format != "json" && strings.Contains(out, "\u202e") {
			t.Errorf("%s: the agent's name is written raw", format)
		}
		want := []string{"host-1", "+2 more", "3 not kidscope's", "1 of a later schema", "2 findings made again"}
		if format == "json" {
			want = []string{`"agents"`, `"dropped": 66`, `"unreadable": 3`, `"future": 1`, `"stopped": true`}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", format, w, out)
			}
		}
	}
	var b bytes.Buffer
	if err := WriteAnalysis(&b, &Analysis{}, AnalysisOptions{Format: "table"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Agents") {
		t.Error("an analysis without agents has an agents section")
	}
}
