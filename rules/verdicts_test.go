package rules

import (
	"fmt"
	"testing"
)

// TestVerdictsWhileRunning: Verdicts, asked between events as live's
// metrics do, says what each broker's answers told so far (known
// verdicts only, by endpoint), and changes as they do.
func TestVerdictsWhileRunning(t *testing.T) {
	s := newScript(t, Options{})
	text := func() string {
		var out string
		for _, v := range s.e.Verdicts() {
			out += fmt.Sprintf("%s=%s ", v.Endpoint, v.Verdict)
		}
		return out
	}
	c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	c.ok(apiVersions, 3, with(idA), nil)
	c.ok(metadata, 12, with(idA), nil)
	if got := text(); got != "" {
		t.Errorf("before any answer to a violation: %q", got)
	}
	c.resp(c.req(gts, 0, with(idB), tele(idB)), 42, nil) // header-id-changed, rejected
	d := s.open(2, "10.0.0.1:5001", "10.0.0.8:9092", false)
	d.ok(apiVersions, 3, with(idA), nil)
	d.ok(metadata, 12, with(idA), nil)
	d.resp(d.req(gts, 0, with(idB), tele(idB)), 0, tele(zero)) // accepted
	if got, want := text(), "10.0.0.8:9092=ignores 10.0.0.9:9092=enforces "; got != want {
		t.Errorf("verdicts %q, want %q", got, want)
	}
	c.resp(c.req(gts, 0, with(idB), tele(idB)), 0, tele(zero)) // changed again, accepted this time
	if got, want := text(), "10.0.0.8:9092=ignores 10.0.0.9:9092=mixed "; got != want {
		t.Errorf("after the enforcing broker accepts one: %q, want %q", got, want)
	}
	res := s.done()
	for _, b := range res.Brokers {
		found := false
		for _, v := range s.e.Verdicts() {
			found = found || v.Endpoint == b.Endpoint && v.Verdict == b.Verdict
		}
		if !found {
			t.Errorf("Result says %s %s, Verdicts does not", b.Endpoint, b.Verdict)
		}
	}
}
