package report

import (
	"slices"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// TestScopeApply: the rows of the connections in scope are kept, a
// finding whose connection left the table (its cap) is judged by its own
// endpoints, different flags must all hold, and the counts follow.
func TestScopeApply(t *testing.T) {
	u1, u2 := kafka.UUID{1: 1}, kafka.UUID{2: 2}
	c1 := kafka.Endpoints{Client: ap("10.0.0.1:5000"), Broker: ap("10.0.0.9:9092")}
	c2 := kafka.Endpoints{Client: ap("10.0.0.2:5000"), Broker: ap("10.0.0.9:9092")}
	c3 := kafka.Endpoints{Client: ap("10.0.0.1:6000"), Broker: ap("10.0.0.8:9092")}
	res := rules.Result{
		Connections: []rules.Connection{
			{ID: 1, Key: c1, InstanceID: u1, HasInstanceID: true},
			{ID: 2, Key: c2, InstanceID: u2, HasInstanceID: true},
		},
		Findings: []rules.Finding{
			{Rule: "header-id-changed", Severity: rules.Error, ConnID: 1, Conn: c1},
			{Rule: "header-id-changed", Severity: rules.Error, ConnID: 2, Conn: c2},
			{Rule: "member-id-empty", Severity: rules.Warning, ConnID: 3, Conn: c3}, // its row was dropped
		},
		Instances: []rules.Instance{{ID: u1, Connections: []int{1, 3}}, {ID: u2, Connections: []int{2}}},
		Brokers:   []rules.Broker{{Endpoint: c1.Broker}, {Endpoint: c3.Broker}},
		FindingCounts: map[rules.FindingGroup]int64{
			{Rule: "header-id-changed", ConnID: 1}: 5, {Rule: "header-id-changed", ConnID: 2}: 1, {Rule: "member-id-empty", ConnID: 3}: 1,
		},
		FindingsByRule: map[string]int64{"header-id-changed": 6, "member-id-empty": 1},
	}
	client1, _ := ParseAddr("10.0.0.1")
	port6000, _ := ParseAddr("10.0.0.1:6000")
	broker9, _ := ParseAddr("10.0.0.9:9092")
	for _, c := range []struct {
		name      string
		s         Scope
		findings  []int // ConnIDs
		conns     []int
		instances int
		brokers   int
		byRule    int64
	}{
		{"client by address", Scope{Clients: []Addr{client1}}, []int{1, 3}, []int{1}, 1, 2, 6},
		{"client by port", Scope{Clients: []Addr{port6000}}, []int{3}, nil, 1, 1, 1},
		{"broker", Scope{Brokers: []Addr{broker9}}, []int{1, 2}, []int{1, 2}, 2, 1, 6},
		{"client and broker", Scope{Clients: []Addr{client1}, Brokers: []Addr{broker9}}, []int{1}, []int{1}, 1, 1, 5},
		{"instance", Scope{Instances: []kafka.UUID{u1}}, []int{1, 3}, []int{1}, 1, 2, 6},
		{"connection", Scope{Connections: []int{2}}, []int{2}, []int{2}, 1, 1, 1},
		{"nothing", Scope{Connections: []int{7}}, nil, nil, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, note := c.s.Apply(&res, UUIDKafka)
			var fs, cs []int
			for _, f := range out.Findings {
				fs = append(fs, f.ConnID)
			}
			for _, r := range out.Connections {
				cs = append(cs, r.ID)
			}
			var byRule int64
			for _, n := range out.FindingsByRule {
				byRule += n
			}
			if !slices.Equal(fs, c.findings) || !slices.Equal(cs, c.conns) || len(out.Instances) != c.instances || len(out.Brokers) != c.brokers || byRule != c.byRule {
				t.Errorf("findings %v conns %v instances %d brokers %d by rule %d; want %v %v %d %d %d",
					fs, cs, len(out.Instances), len(out.Brokers), byRule, c.findings, c.conns, c.instances, c.brokers, c.byRule)
			}
			if note.Findings != len(fs) || note.FindingsTotal != 3 || note.ConnectionsTotal != 2 || note.Text == "" {
				t.Errorf("note %+v", note)
			}
		})
	}
	if len(res.Findings) != 3 || len(res.Connections) != 2 {
		t.Error("Apply changed its input")
	}
}
