package report

import (
	"strings"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// Two IDs whose text shares its first ten characters must not print alike:
// each gets the shortest prefix no other ID of the report has.
func TestAbbreviationsUnique(t *testing.T) {
	a := parseID(t, "BAAAAwQFBgcICQoLDA0ODw")
	b := parseID(t, "BAAAAwQFBgdICQoLDA0ODw") // the same first 10 characters
	c := parseID(t, "f2J1yUWxQ3-7pK1m2n3o4w")
	an := &Analysis{Result: rules.Result{
		Instances: []rules.Instance{{ID: a}, {ID: b}, {ID: c}},
		Findings: []rules.Finding{{Rule: "header-id-changed", Severity: rules.Error, HasAPI: true,
			Expected: id(a), Seen: id(b)}},
	}}
	ab := newAbbreviations(an, UUIDKafka)
	cases := []struct {
		u    kafka.UUID
		want string
	}{
		{a, "BAAAAwQFBgc…"},
		{b, "BAAAAwQFBgd…"},
		{c, "f2J1yUWx…"},
	}
	for _, tc := range cases {
		if got := ab.short(tc.u.String()); got != tc.want {
			t.Errorf("short(%s) = %q, want %q", tc.u, got, tc.want)
		}
	}
	out := string(render(t, an, AnalysisOptions{Format: "table", Verbose: true}))
	if !strings.Contains(out, "BAAAAwQFBgc…") || !strings.Contains(out, "BAAAAwQFBgd…") {
		t.Errorf("the table does not tell the two IDs apart:\n%s", out)
	}
}

// An ID whose unique prefix would leave one character out is shown whole,
// and the reserved IDs by name, as the findings' values name them.
func TestShortIDEdges(t *testing.T) {
	long := parseID(t, "BAAAAwQFBgcICQoLDA0ODw")
	twin := parseID(t, "BAAAAwQFBgcICQoLDA0ODA")
	an := &Analysis{Result: rules.Result{Instances: []rules.Instance{{ID: long}, {ID: twin}}}}
	st := newDocStyle(an, AnalysisOptions{}, false)
	if got := st.uuid(long); got != long.String() {
		t.Errorf("uuid(%s) = %q, want it whole", long, got)
	}
	if got := st.uuid(kafka.UUID{}); got != "ZERO" {
		t.Errorf("uuid(ZERO) = %q", got)
	}
	if got := st.uuid(kafka.UUID{15: 1}); got != "ONE" {
		t.Errorf("uuid(ONE) = %q", got)
	}
}

func parseID(t *testing.T, s string) kafka.UUID {
	t.Helper()
	u, err := kafka.ParseUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
