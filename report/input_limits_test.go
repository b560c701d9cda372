package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInputLimitCounters: the counters of input read past for being over
// a limit are in the table's summary and the JSON's (there at zero too, as
// every summary field is).
func TestInputLimitCounters(t *testing.T) {
	a := quietAnalysis()
	a.Summary.Capture.OversizedFrames = 2
	a.Summary.Capture.ExtraInterfaces = 1
	a.Summary.Capture.ExtraInterfaceFrames = 7
	table := string(render(t, a, AnalysisOptions{Format: "table"}))
	for _, want := range []string{
		"2 frames over the packet limit, skipped",
		"1 pcapng interface over the limit, not kept",
		"7 frames on interfaces not kept, skipped",
	} {
		if !strings.Contains(strings.Join(strings.Fields(table), " "), want) {
			t.Errorf("the table does not say %q", want)
		}
	}
	for _, c := range []struct {
		a    *Analysis
		want map[string]any
	}{
		{a, map[string]any{"oversized_frames": float64(2), "extra_interfaces": float64(1), "extra_interface_frames": float64(7)}},
		{quietAnalysis(), map[string]any{"oversized_frames": float64(0), "extra_interfaces": float64(0), "extra_interface_frames": float64(0)}},
	} {
		var doc struct{ Summary map[string]any }
		if err := json.Unmarshal(render(t, c.a, AnalysisOptions{Format: "json"}), &doc); err != nil {
			t.Fatal(err)
		}
		for k, v := range c.want {
			if doc.Summary[k] != v {
				t.Errorf("summary.%s = %v, want %v", k, doc.Summary[k], v)
			}
		}
	}
}
