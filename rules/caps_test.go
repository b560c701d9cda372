package rules

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// retained counts the entries the engine holds for its report: the kept
// findings and their per-connection counts, the closed connections'
// rows, the brokers' evidence frames, the instances, and what open
// connections wait with.
func retained(e *Engine) (findings, groups, rows, evidence, waiting int) {
	for _, b := range e.brokers.brokers {
		evidence += len(b.enforce) + len(b.ignore)
	}
	evidence += len(e.brokers.unlisted.enforce) + len(e.brokers.unlisted.ignore)
	for _, c := range e.conns {
		waiting += len(c.undecided)
	}
	return len(e.tally.findings), len(e.tally.byGroup), len(e.closed), evidence, waiting
}

// TestViolationsStayBounded: a client whose every request violates a rule
// (and is rejected) for a hundred thousand requests and more, on one
// connection or spread over many that come and go, leaves the engine
// holding no more than its caps, while the counts stay true.
func TestViolationsStayBounded(t *testing.T) {
	// Far past every cap: what is kept must not grow with n.
	n := 120000
	if testing.Short() {
		n = 20000
	}
	opt := Options{MaxConnections: 100, MaxFindings: 1000, MaxEvidence: 50, MaxInstances: 10}
	cases := []struct {
		name  string
		conns int // connections open at once
		life  int // requests per connection before it closes (0: never)
	}{
		{"one connection", 1, 0},
		{"many open connections", 2000, 0},
		{"connections that come and go", 50, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &feeder{e: New(opt)}
			opened, closed := 0, 0
			open := map[int]int{} // conn → requests sent
			for i := 0; i < tc.conns; i++ {
				opened++
				f.open(opened)
				open[opened] = 0
			}
			for i := 0; i < n; i++ {
				id := closed + 1 + i%tc.conns
				if _, ok := open[id]; !ok {
					t.Fatalf("conn %d not open", id)
				}
				f.exchange(id, true)
				open[id]++
				if tc.life > 0 && open[id] >= tc.life && id == closed+1 {
					f.close(id)
					delete(open, id)
					closed++
					opened++
					f.open(opened)
					open[opened] = 0
				}
				if i%10000 == 0 {
					checkRetained(t, f.e, opt, tc.conns)
				}
			}
			checkRetained(t, f.e, opt, tc.conns)
			for id := range open {
				f.close(id)
			}
			res := f.e.Result()
			if got := res.FindingsByRule[HeaderIDChanged]; got != int64(n) {
				t.Errorf("header-id-changed counted %d, want %d", got, n)
			}
			if res.FindingsBySeverity[Error] != int64(n) || int64(len(res.Findings))+res.Dropped.Findings != res.FindingsBySeverity[Error]+res.FindingsBySeverity[Warning]+res.FindingsBySeverity[Info] {
				t.Errorf("findings: %d kept + %d dropped, by severity %v", len(res.Findings), res.Dropped.Findings, res.FindingsBySeverity)
			}
			var listedTotal int64
			for g, c := range res.FindingCounts {
				if g.Rule == HeaderIDChanged {
					listedTotal += c
				}
			}
			if tc.conns == 1 && listedTotal != int64(n) {
				t.Errorf("the one connection's header-id-changed counted %d, want %d", listedTotal, n)
			}
			if len(res.Brokers) != 1 || res.Brokers[0].Enforced != int64(n) || len(res.Brokers[0].EnforceFrames) != opt.MaxEvidence {
				t.Errorf("broker evidence: %d counted, %d kept; want %d and %d", res.Brokers[0].Enforced, len(res.Brokers[0].EnforceFrames), n, opt.MaxEvidence)
			}
			if want := opened; res.Brokers[0].Connections != want || res.Matrix.Cells[1][1] != want {
				t.Errorf("connections: brokers say %d, matrix %v; want %d", res.Brokers[0].Connections, res.Matrix.Cells, want)
			}
			if int64(len(res.Connections))+res.Dropped.Connections != int64(opened) {
				t.Errorf("connection rows %d + dropped %d, want %d", len(res.Connections), res.Dropped.Connections, opened)
			}
		})
	}
}

func checkRetained(t *testing.T, e *Engine, opt Options, open int) {
	t.Helper()
	findings, groups, rows, evidence, waiting := retained(e)
	if findings > opt.MaxFindings || groups > opt.MaxFindings || rows > opt.MaxConnections ||
		evidence > 2*opt.MaxEvidence || waiting > open*maxUndecided || len(e.inv.instances) > opt.MaxInstances {
		t.Fatalf("retained: %d findings, %d finding counts, %d rows, %d evidence frames, %d waiting, %d instances; caps %+v",
			findings, groups, rows, evidence, waiting, len(e.inv.instances), opt)
	}
}

// TestBrokersCapped: past MaxBrokers, connections to more broker
// endpoints are counted but not listed, and the matrix still counts them.
func TestBrokersCapped(t *testing.T) {
	s := newScript(t, Options{MaxBrokers: 2})
	for i := 1; i <= 5; i++ {
		c := s.open(i, "10.0.0.1:5000", "10.0.9."+string(rune('0'+i))+":9092", false)
		c.ok(apiVersions, 3, none(), nil)
		c.close(false)
	}
	res := s.done()
	if len(res.Brokers) != 2 || res.Dropped.BrokerConnections != 3 {
		t.Errorf("brokers listed %d, connections to unlisted ones %d; want 2 and 3", len(res.Brokers), res.Dropped.BrokerConnections)
	}
	if res.Matrix.Cells[0][2] != 5 {
		t.Errorf("matrix %v: want the 5 old-client connections as unknown", res.Matrix.Cells)
	}
}

// TestInstanceConnectionCount: an instance used by more connections than
// its list keeps counts every one, once.
func TestInstanceConnectionCount(t *testing.T) {
	s := newScript(t, Options{})
	n := MaxPerInstance + 36
	for i := 1; i <= n; i++ {
		c := s.open(i, "10.0.0.1:5000", "10.0.0.9:9092", false)
		c.ok(apiVersions, 3, with(idA), nil)
		c.ok(metadata, 12, with(idA), nil)
		c.close(false)
	}
	res := s.done()
	if len(res.Instances) != 1 || res.Instances[0].ConnectionCount != int64(n) || len(res.Instances[0].Connections) != MaxPerInstance {
		t.Errorf("instances %d, first counts %d connections and lists %d; want %d and %d",
			len(res.Instances), res.Instances[0].ConnectionCount, len(res.Instances[0].Connections), n, MaxPerInstance)
	}
}

// TestFilterKeepsItsRulesCounts: the counts of the rules a filter leaves
// out go with their findings, and Failing counts what the cap left out
// of the list.
func TestFilterKeepsItsRulesCounts(t *testing.T) {
	res := Result{
		Findings:       []Finding{{Rule: HeaderIDChanged, Severity: Error, ConnID: 1}, {Rule: StreamGap, Severity: Info, ConnID: 1}},
		FindingsByRule: map[string]int64{HeaderIDChanged: 7, StreamGap: 3, InstanceIDShared: 2},
		FindingCounts:  map[FindingGroup]int64{{HeaderIDChanged, 1}: 7, {StreamGap, 1}: 3},
		Dropped:        Dropped{Findings: 10},
	}
	f := Filter{Skip: map[string]bool{HeaderIDChanged: true}}
	f.Apply(&res)
	if len(res.Findings) != 1 || len(res.FindingsByRule) != 2 || res.FindingsByRule[HeaderIDChanged] != 0 || len(res.FindingCounts) != 1 {
		t.Errorf("after the filter: %+v", res)
	}
	if !f.Failing(&res, Warning) {
		t.Error("the unlisted instance-id-shared warnings do not fail --fail-on warning")
	}
	if f.Failing(&res, Error) {
		t.Error("no error is left, yet Failing(error)")
	}
}

// TestKeptText: long capture strings are kept cut, equal exactly when the
// strings sent are, and naming their length; short ones whole.
func TestKeptText(t *testing.T) {
	long := strings.Repeat("é", 20000)
	other := long[:len(long)-2] + "e!"
	if kept("app") != "app" || kept("") != "" {
		t.Error("short strings are not kept whole")
	}
	k := kept(long)
	if len(k) > maxKeptText || !utf8.ValidString(k) || !strings.Contains(k, "[40000 bytes, sha256 ") {
		t.Errorf("kept(long) = %q (%d bytes)", k, len(k))
	}
	if kept(long) != k || kept(other) == k {
		t.Error("kept strings are not equal exactly when the strings are")
	}
	// The engine keeps the cut client ID in its rows.
	s := newScript(t, Options{})
	c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
	c.clientID = long
	c.ok(apiVersions, 3, none(), nil)
	res := s.done()
	if res.Connections[0].ClientID != k {
		t.Errorf("row client ID %d bytes", len(res.Connections[0].ClientID))
	}
}
