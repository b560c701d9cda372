package pipeline

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/rules"
)

// findingRecorder is a FindingSink that keeps what it hears.
type findingRecorder struct {
	nopSink
	rules  []string
	frames []int64
}

func (r *findingRecorder) Finding(f *rules.Finding) {
	r.rules = append(r.rules, f.Rule)
	r.frames = append(r.frames, f.At.Frame)
}

// The rules stage runs inside the pipeline: a FindingSink hears, as they
// are made, exactly the findings the Result keeps, with the filter applied
// to both, and with one worker or several.
func TestRunChecksRules(t *testing.T) {
	file := filepath.Join("..", "samples", "captures", "hdr-acc-changed.pcapng")
	cases := []struct {
		name   string
		filter rules.Filter
		want   []string
	}{
		{"every rule", rules.Filter{}, []string{rules.HeaderIDChanged, rules.StreamUnanswered}},
		{"min warning", rules.Filter{Min: rules.Warning}, []string{rules.HeaderIDChanged}},
		{"skip", rules.Filter{Skip: map[string]bool{rules.HeaderIDChanged: true}}, []string{rules.StreamUnanswered}},
		{"keep", rules.Filter{Keep: map[string]bool{rules.StreamUnanswered: true}}, []string{rules.StreamUnanswered}},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 3} {
			rec := &findingRecorder{}
			res, err := Run(context.Background(), Options{Files: []string{file}, Workers: workers,
				Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()},
				Rules:      &Check{Filter: c.filter}}, rec)
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			var keptFrames []int64
			for _, f := range res.Rules.Findings {
				kept = append(kept, f.Rule)
				keptFrames = append(keptFrames, f.At.Frame)
			}
			if !slices.Equal(kept, c.want) {
				t.Errorf("%s, %d workers: result has %v, want %v", c.name, workers, kept, c.want)
			}
			if !slices.Equal(rec.rules, kept) || !slices.Equal(rec.frames, keptFrames) {
				t.Errorf("%s, %d workers: the sink heard %v at %v, the result has %v at %v", c.name, workers, rec.rules, rec.frames, kept, keptFrames)
			}
			if res.Connections != 1 || len(res.Rules.Connections) != 1 {
				t.Errorf("%s: %d connections in the summary, %d in the rules' result", c.name, res.Connections, len(res.Rules.Connections))
			}
		}
	}
	// Without Options.Rules nothing is checked.
	res, err := Run(context.Background(), Options{Files: []string{file}, Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rules.Findings) != 0 || res.Requests == 0 {
		t.Errorf("without Rules: %d findings, %d requests", len(res.Rules.Findings), res.Requests)
	}
}
