package report

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// Addr is a --client or --broker value: an address, with or without a
// port. Without one it matches every port of the address.
type Addr struct {
	Addr netip.Addr
	Port uint16 // 0: any
}

// ParseAddr reads "10.0.0.1", "10.0.0.1:9092", "::1" or "[::1]:9092".
func ParseAddr(s string) (Addr, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return Addr{}, fmt.Errorf("%q: port 0 matches no connection; leave the port out to match every port", s)
		}
		return Addr{Addr: ap.Addr().Unmap(), Port: ap.Port()}, nil
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		return Addr{}, fmt.Errorf("%q: want an IP address, with or without a port (10.0.0.1, 10.0.0.1:9092, [::1]:9092)", s)
	}
	return Addr{Addr: a.Unmap()}, nil
}

func (a Addr) String() string {
	if a.Port == 0 {
		return a.Addr.String()
	}
	return netip.AddrPortFrom(a.Addr, a.Port).String()
}

// Matches reports whether ap is this address (and port, when given).
func (a Addr) Matches(ap netip.AddrPort) bool {
	return ap.Addr().Unmap() == a.Addr && (a.Port == 0 || ap.Port() == a.Port)
}

// Scope is what --instance, --client, --broker and --connection keep of
// an analysis. It is applied to the rules' Result after the rules ran on
// every connection: the findings that look across connections (the
// instance inventory's, the brokers' verdicts) stay those of the whole
// capture, and the scope only chooses which of them are shown. Values of
// one flag are alternatives; different flags must all hold.
type Scope struct {
	Instances   []kafka.UUID
	Clients     []Addr
	Brokers     []Addr
	Connections []int
}

// Any reports whether the scope narrows anything.
func (s *Scope) Any() bool {
	return len(s.Instances)+len(s.Clients)+len(s.Brokers)+len(s.Connections) > 0
}

// String is the scope as the summary says it, in the flags' words.
func (s *Scope) String(form UUIDForm) string {
	var parts []string
	add := func(flag string, vals []string) {
		if len(vals) > 0 {
			parts = append(parts, flag+" "+strings.Join(vals, ","))
		}
	}
	var ids []string
	for _, u := range s.Instances {
		ids = append(ids, form.format(u))
	}
	add("--instance", ids)
	addrs := func(list []Addr) []string {
		var out []string
		for _, a := range list {
			out = append(out, a.String())
		}
		return out
	}
	add("--client", addrs(s.Clients))
	add("--broker", addrs(s.Brokers))
	var conns []string
	for _, n := range s.Connections {
		conns = append(conns, fmt.Sprint(n))
	}
	add("--connection", conns)
	return strings.Join(parts, " ")
}

func anyAddr(list []Addr, ap netip.AddrPort) bool {
	return slices.ContainsFunc(list, func(a Addr) bool { return a.Matches(ap) })
}

// ScopeNote is what the summary says of a scoped report: the scope and
// how much of the whole it shows.
type ScopeNote struct {
	Text string
	// Findings and Connections are the rows shown, of the totals listed
	// before the scope was applied.
	Findings, FindingsTotal       int
	Connections, ConnectionsTotal int
}

// connection reports whether a connection (by number, endpoints and
// instance IDs used on it) is in the scope.
func (s *Scope) connection(id int, key kafka.Endpoints, instances map[int][]kafka.UUID) bool {
	if len(s.Connections) > 0 && !slices.Contains(s.Connections, id) {
		return false
	}
	if len(s.Clients) > 0 && !anyAddr(s.Clients, key.Client) {
		return false
	}
	if len(s.Brokers) > 0 && !anyAddr(s.Brokers, key.Broker) {
		return false
	}
	if len(s.Instances) > 0 && !slices.ContainsFunc(instances[id], func(u kafka.UUID) bool { return slices.Contains(s.Instances, u) }) {
		return false
	}
	return true
}

// Apply returns the part of res in the scope, and the note that says so:
// the findings on connections in the scope, those connections' rows, the
// instances used on them (or named by --instance) and the brokers they
// went to (or named by --broker). The matrix stays the whole capture's.
// Counts that cover findings not listed (FindingCounts, FindingsByRule)
// are narrowed to the scope's connections.
func (s *Scope) Apply(res *rules.Result, form UUIDForm) (rules.Result, ScopeNote) {
	note := ScopeNote{Text: s.String(form), FindingsTotal: len(res.Findings), ConnectionsTotal: len(res.Connections)}
	// Which instance IDs each connection used: its established one, and
	// every instance that lists it.
	used := map[int][]kafka.UUID{}
	for i := range res.Connections {
		if c := &res.Connections[i]; c.HasInstanceID {
			used[c.ID] = append(used[c.ID], c.InstanceID)
		}
	}
	for i := range res.Instances {
		in := &res.Instances[i]
		for _, id := range in.Connections {
			if !slices.Contains(used[id], in.ID) {
				used[id] = append(used[id], in.ID)
			}
		}
	}
	out := *res
	out.Findings, out.Connections, out.Instances, out.Brokers = nil, nil, nil, nil
	inScope := map[int]bool{}
	brokers := map[netip.AddrPort]bool{}
	for i := range res.Connections {
		c := &res.Connections[i]
		if s.connection(c.ID, c.Key, used) {
			inScope[c.ID] = true
			brokers[c.Key.Broker] = true
			out.Connections = append(out.Connections, *c)
		}
	}
	for i := range res.Findings {
		f := &res.Findings[i]
		// A finding's connection may have left the connections table
		// (its cap): the finding carries its endpoints, judged alike.
		if inScope[f.ConnID] || s.connection(f.ConnID, f.Conn, used) {
			inScope[f.ConnID] = true
			brokers[f.Conn.Broker] = true
			out.Findings = append(out.Findings, *f)
		}
	}
	for i := range res.Instances {
		in := &res.Instances[i]
		keep := slices.ContainsFunc(in.Connections, func(id int) bool { return inScope[id] })
		if len(s.Instances) > 0 {
			keep = slices.Contains(s.Instances, in.ID) && (keep || len(s.Clients)+len(s.Brokers)+len(s.Connections) == 0)
		}
		if keep {
			out.Instances = append(out.Instances, *in)
		}
	}
	for i := range res.Brokers {
		b := &res.Brokers[i]
		if brokers[b.Endpoint] || len(s.Brokers) > 0 && anyAddr(s.Brokers, b.Endpoint) && len(s.Clients)+len(s.Instances)+len(s.Connections) == 0 {
			out.Brokers = append(out.Brokers, *b)
		}
	}
	out.FindingCounts = map[rules.FindingGroup]int64{}
	var made int64
	byRule := map[string]int64{}
	for g, n := range res.FindingCounts {
		if inScope[g.ConnID] {
			out.FindingCounts[g] = n
			byRule[g.Rule] += n
			made += n
		}
	}
	if res.FindingsByRule != nil {
		out.FindingsByRule = byRule
	}
	var sev [3]int64
	for i := range out.Findings {
		sev[out.Findings[i].Severity]++
	}
	out.FindingsBySeverity = sev
	out.Dropped.Findings = max(made-int64(len(out.Findings)), 0)
	note.Findings, note.Connections = len(out.Findings), len(out.Connections)
	return out, note
}

// Line is the summary's scope line.
func (n *ScopeNote) Line() string {
	return fmt.Sprintf("%s: %d of %d findings shown, %d of %d connections", n.Text,
		n.Findings, n.FindingsTotal, n.Connections, n.ConnectionsTotal)
}
