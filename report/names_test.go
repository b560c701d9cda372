package report

import (
	"testing"

	"github.com/kidscope/kidscope/rules"
)

// TestNamesCoverEveryValue: the rules number each enumerated type from
// its first value up, so every value from the first named one to the last
// has a name (a gap is a value the JSON report and the published records
// could not write), and each name reads back as its value.
func TestNamesCoverEveryValue(t *testing.T) {
	check := func(what string, n int, name func(int) (string, bool), value func(string) (int, bool), first int) {
		t.Helper()
		seen := 0
		for v := first; seen < n; v++ {
			s, ok := name(v)
			if !ok {
				t.Errorf("%s %d has no name, though %d of %d after it do", what, v, n-seen, n)
				return
			}
			if back, ok := value(s); !ok || back != v {
				t.Errorf("%s %d: name %q reads back as %d, %v", what, v, s, back, ok)
			}
			seen++
		}
	}
	check("value kind", ValueKindNames.Len(),
		func(v int) (string, bool) { return ValueKindNames.Name(rules.ValueKind(v)) },
		func(s string) (int, bool) { v, ok := ValueKindNames.Value(s); return int(v), ok }, int(rules.ValueNone)+1)
	check("role", RoleNames.Len(),
		func(v int) (string, bool) { return RoleNames.Name(rules.Role(v)) },
		func(s string) (int, bool) { v, ok := RoleNames.Value(s); return int(v), ok }, int(rules.RoleEstablished))
	check("answer state", AnswerStateNames.Len(),
		func(v int) (string, bool) { return AnswerStateNames.Name(rules.AnswerState(v)) },
		func(s string) (int, bool) { v, ok := AnswerStateNames.Value(s); return int(v), ok }, int(rules.NotAnswerable)+1)
	check("stream kind", StreamKindNames.Len(),
		func(v int) (string, bool) { return StreamKindNames.Name(rules.StreamKind(v)) },
		func(s string) (int, bool) { v, ok := StreamKindNames.Value(s); return int(v), ok }, int(rules.AboutRequest)+1)
	check("profile", ProfileNames.Len(),
		func(v int) (string, bool) { return ProfileNames.Name(rules.Profile(v)) },
		func(s string) (int, bool) { v, ok := ProfileNames.Value(s); return int(v), ok }, int(rules.ProfileNone)+1)
	for _, none := range []bool{
		func() bool { _, ok := ValueKindNames.Name(rules.ValueNone); return ok }(),
		func() bool { _, ok := AnswerStateNames.Name(rules.NotAnswerable); return ok }(),
		func() bool { _, ok := StreamKindNames.Name(rules.AboutRequest); return ok }(),
		func() bool { _, ok := ProfileNames.Name(rules.ProfileNone); return ok }(),
	} {
		if none {
			t.Error("a value that means none has a name")
		}
	}
}
