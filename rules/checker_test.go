package rules

import (
	"reflect"
	"slices"
	"testing"

	"github.com/kidscope/kidscope/kafka"
)

// typed is the evidence of one finding, as a checker's table test states
// it.
type typed struct {
	rule     string
	at       int64
	expected Value
	seen     Value
	related  []Related
	answer   Answer
	also     []string
	stream   Stream
	count    int64
}

func typedOf(f Finding) typed {
	return typed{rule: f.Rule, at: f.At.Frame, expected: f.Expected, seen: f.Seen, related: f.Related,
		answer: f.Answer, also: f.Also, stream: f.Stream, count: f.Count}
}

// checkerCase is an event sequence and the typed findings that the rules
// of one checker make of it.
type checkerCase struct {
	name string
	opt  Options
	run  func(s *script)
	want []typed
}

// testChecker runs each case and compares the findings of the checker's
// rules, in order, evidence included.
func testChecker(t *testing.T, k checker, cases []checkerCase) {
	t.Helper()
	var own []string
	for _, r := range k.rules() {
		own = append(own, r.ID)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t, tc.opt)
			tc.run(s)
			var got []typed
			for _, f := range s.done().Findings {
				if slices.Contains(own, f.Rule) {
					got = append(got, typedOf(f))
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d findings, want %d:\n got  %+v\nwant %+v", len(got), len(tc.want), got, tc.want)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], tc.want[i]) {
					t.Errorf("finding %d:\n got  %+v\nwant %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func rel(frame int64, role Role) Related { return Related{kafka.FrameRef{Frame: frame}, role} }

func answered(code int16) Answer { return Answer{State: Answered, Codes: []int16{code}} }

func idValue(id [16]byte) Value { return Value{Kind: ValueID, ID: id} }

func named(id [16]byte) Value { return Value{Kind: ValueIDNamed, ID: id} }
