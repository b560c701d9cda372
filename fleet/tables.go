package fleet

import (
	"bytes"
	"cmp"
	"net/netip"
	"slices"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// The fleet's totals and tables are the union of its agents' reports
// (agentreport.go): the connections of every agent run, each client
// instance over every agent that saw it, each broker's answers over every
// agent, and the totals summed. Only the telemetry IDs of an instance are
// the fleet's engine's, which saw every agent's telemetry exchanges, as
// one engine over the union of the captures would have.
//
// A broker's verdict depends only on what one connection shows: the rules
// whose findings judge a broker's answer (rules.Rule.Verdict) look at one
// connection, and no rule across connections outranks them (docs/design/rules.md §1;
// TestVerdictRulesOutrankRulesAcrossConnections), so that the answers an
// agent judged are those one engine over every agent's traffic judges.

// runKey is one run of one agent.
type runKey struct{ agent, run string }

// runReport is what the fleet read of one agent run's report: its rows,
// as the fleet numbers files and connections, and its summary (nil until
// read).
type runReport struct {
	summary   *result.Summary
	wantRows  int // the rows the summary says came before it
	conns     map[int]rules.Connection
	instances map[kafka.UUID]rules.Instance
	brokers   map[netip.AddrPort]rules.Broker
	unlisted  [2]int
	dropped   rules.Dropped
}

func (r *runReport) rows() int { return len(r.conns) + len(r.instances) + len(r.brokers) }

// report is the report of run k, made on first use.
func (m *Merger) report(k runKey) *runReport {
	rr := m.reports[k]
	if rr == nil {
		rr = &runReport{conns: map[int]rules.Connection{}, instances: map[kafka.UUID]rules.Instance{},
			brokers: map[netip.AddrPort]rules.Broker{}}
		m.reports[k] = rr
		m.reportOrder = append(m.reportOrder, k)
	}
	return rr
}

// addReport takes a record of an agent run's report. A row read again
// replaces the one read before; rows past MaxReportRows are counted, not
// kept.
func (m *Merger) addReport(r *Record) {
	k := runKey{r.Agent, r.Run}
	if _, known := m.reports[k]; !known && len(m.reports) >= m.opt.MaxAgents {
		m.counts.ReportRowsDropped++
		return
	}
	rr := m.report(k)
	d := &decoder{file: m.file(r.Agent, r.Run)}
	full := m.rows >= m.opt.MaxReportRows
	switch {
	case r.Summary != nil:
		s := d.summary(r.Summary, r.Agent)
		if d.err != nil {
			m.undecodable(d.err)
			return
		}
		w := r.Summary
		rr.summary, rr.wantRows = &s, w.ConnectionRows+w.InstanceRows+w.BrokerRows
		rr.unlisted = [2]int{w.UnlistedOld, w.UnlistedNew}
		rr.dropped = rules.Dropped{Connections: w.DroppedConnections, Instances: w.DroppedInstances,
			BrokerConnections: w.DroppedBrokerConnections}
		return
	case r.Connection != nil:
		c := d.connection(r.Connection, m.connID(connKey{r.Agent, r.Run, r.Connection.ID}))
		if d.err != nil {
			m.undecodable(d.err)
			return
		}
		if _, again := rr.conns[r.Connection.ID]; !again && full {
			m.counts.ReportRowsDropped++
			return
		}
		if _, again := rr.conns[r.Connection.ID]; !again {
			m.rows++
		}
		rr.conns[r.Connection.ID] = c
	case r.Instance != nil:
		in := d.instance(r.Instance, func(id int) int { return m.connID(connKey{r.Agent, r.Run, id}) })
		if d.err != nil {
			m.undecodable(d.err)
			return
		}
		if _, again := rr.instances[in.ID]; !again && full {
			m.counts.ReportRowsDropped++
			return
		}
		if _, again := rr.instances[in.ID]; !again {
			m.rows++
		}
		rr.instances[in.ID] = in
	case r.Broker != nil:
		b := d.broker(r.Broker)
		if d.err != nil {
			m.undecodable(d.err)
			return
		}
		if _, again := rr.brokers[b.Endpoint]; !again && full {
			m.counts.ReportRowsDropped++
			return
		}
		if _, again := rr.brokers[b.Endpoint]; !again {
			m.rows++
		}
		rr.brokers[b.Endpoint] = b
	}
}

// reported are the runs whose summary was read, in the order first seen.
func (m *Merger) reported() []*runReport {
	var out []*runReport
	for _, k := range m.reportOrder {
		if rr := m.reports[k]; rr.summary != nil {
			out = append(out, rr)
		}
	}
	return out
}

// Summary is the fleet's totals: the sum of the summaries of the agent
// runs that published theirs (FleetCounts.Reported of FleetCounts.Runs).
// Its Files are not set: they are Files().
func (m *Merger) Summary() result.Summary {
	var s result.Summary
	for _, rr := range m.reported() {
		a := rr.summary
		if !a.First.IsZero() {
			if s.First.IsZero() || a.First.Before(s.First) {
				s.First = a.First
			}
			if a.Last.After(s.Last) {
				s.Last = a.Last
			}
		}
		s.Capture.Packets += a.Capture.Packets
		s.Capture.Bytes += a.Capture.Bytes
		s.Capture.Cut += a.Capture.Cut
		s.Capture.Malformed += a.Capture.Malformed
		s.Capture.Filtered += a.Capture.Filtered
		s.Capture.KernelDrops += a.Capture.KernelDrops
		s.Capture.OversizedFrames += a.Capture.OversizedFrames
		s.Capture.ExtraInterfaces += a.Capture.ExtraInterfaces
		s.Capture.ExtraInterfaceFrames += a.Capture.ExtraInterfaceFrames
		s.Reassembly.Add(a.Reassembly)
		s.Connections += a.Connections
		s.OutsideTime += a.OutsideTime
		s.Gaps += a.Gaps
		s.NotKafka += a.NotKafka
		s.Truncated += a.Truncated
		c, ac := &s.Counters, &a.Counters
		c.Requests += ac.Requests
		c.Responses += ac.Responses
		c.Unmatched += ac.Unmatched
		c.Unanswered += ac.Unanswered
		c.Resyncs += ac.Resyncs
		c.Malformed += ac.Malformed
		c.UnknownAPI += ac.UnknownAPI
		c.BodiesSkippedTooLarge += ac.BodiesSkippedTooLarge
		c.BodiesSkippedBudget += ac.BodiesSkippedBudget
		c.NoResponse += ac.NoResponse
		s.Problems = append(s.Problems, a.Problems...)
		s.Comments = append(s.Comments, a.Comments...)
		s.Interrupted = s.Interrupted || a.Interrupted
	}
	return s
}

// tables fills res's connections, instances, brokers and matrix with the
// union of the agents' reports, and what their caps and the fleet's left
// out. engine are the instances of the fleet's engine, whose telemetry
// IDs are taken.
func (m *Merger) tables(res *rules.Result) {
	engine := map[kafka.UUID]*rules.Instance{}
	for i := range res.Instances {
		engine[res.Instances[i].ID] = &res.Instances[i]
	}
	res.Connections, res.Instances, res.Brokers, res.Matrix = nil, nil, nil, rules.Matrix{}
	res.Dropped.Connections, res.Dropped.Instances, res.Dropped.BrokerConnections = 0, 0, 0
	instances := map[kafka.UUID]*rules.Instance{}
	brokers := map[netip.AddrPort]*rules.Broker{}
	var unlisted [2]int
	for _, rr := range m.reported() {
		res.Dropped.Connections += rr.dropped.Connections
		res.Dropped.Instances += rr.dropped.Instances
		res.Dropped.BrokerConnections += rr.dropped.BrokerConnections
		unlisted[0] += rr.unlisted[0]
		unlisted[1] += rr.unlisted[1]
		for _, c := range rr.conns {
			res.Connections = append(res.Connections, c)
		}
		for _, in := range rr.instances {
			if u := instances[in.ID]; u != nil {
				mergeInstance(u, &in)
			} else {
				in := in
				instances[in.ID] = &in
			}
		}
		for _, b := range rr.brokers {
			if u := brokers[b.Endpoint]; u != nil {
				mergeBroker(u, &b, m.opt.Rules.MaxEvidence)
			} else {
				b := b
				brokers[b.Endpoint] = &b
			}
		}
	}
	slices.SortFunc(res.Connections, func(a, b rules.Connection) int { return a.ID - b.ID })
	if over := len(res.Connections) - m.opt.Rules.MaxConnections; over > 0 {
		// The most recent are kept, as an engine keeps them.
		slices.SortStableFunc(res.Connections, func(a, b rules.Connection) int { return a.Last.Time.Compare(b.Last.Time) })
		res.Connections = slices.Clone(res.Connections[over:])
		res.Dropped.Connections += int64(over)
		slices.SortFunc(res.Connections, func(a, b rules.Connection) int { return a.ID - b.ID })
	}
	for _, in := range instances {
		if e := engine[in.ID]; e != nil {
			in.TelemetryIDs = slices.Clone(e.TelemetryIDs)
		}
		res.Instances = append(res.Instances, *in)
	}
	slices.SortFunc(res.Instances, func(a, b rules.Instance) int {
		return cmp.Or(a.First.Time.Compare(b.First.Time), a.First.Compare(b.First), bytes.Compare(a.ID[:], b.ID[:]))
	})
	if over := len(res.Instances) - m.opt.Rules.MaxInstances; over > 0 {
		res.Instances = res.Instances[:m.opt.Rules.MaxInstances]
		res.Dropped.Instances += int64(over)
	}
	for _, b := range brokers {
		b.Verdict = rules.VerdictOf(b.Enforced, b.Ignored)
		res.Brokers = append(res.Brokers, *b)
	}
	slices.SortFunc(res.Brokers, func(a, b rules.Broker) int { return a.Endpoint.Compare(b.Endpoint) })
	if over := len(res.Brokers) - m.opt.Rules.MaxBrokers; over > 0 {
		for _, b := range res.Brokers[m.opt.Rules.MaxBrokers:] {
			res.Dropped.BrokerConnections += int64(b.Connections)
			unlisted[0] += b.Kinds[0]
			unlisted[1] += b.Kinds[1]
		}
		res.Brokers = res.Brokers[:m.opt.Rules.MaxBrokers]
	}
	res.Matrix = rules.MatrixOf(res.Brokers, unlisted)
}

// mergeInstance adds what another agent saw of the instance to u.
func mergeInstance(u, in *rules.Instance) {
	u.ClientIDs = union(u.ClientIDs, in.ClientIDs, cmp.Compare[string])
	u.Addresses = union(u.Addresses, in.Addresses, func(a, b netip.Addr) int { return a.Compare(b) })
	u.Brokers = union(u.Brokers, in.Brokers, func(a, b netip.AddrPort) int { return a.Compare(b) })
	u.Connections = union(u.Connections, in.Connections, cmp.Compare[int])
	u.TelemetryIDs = union(u.TelemetryIDs, in.TelemetryIDs, func(a, b kafka.UUID) int { return bytes.Compare(a[:], b[:]) })
	u.ConnectionCount += in.ConnectionCount
	if in.First.Time.Before(u.First.Time) {
		u.First = in.First
	}
	if in.Last.Time.After(u.Last.Time) {
		u.Last = in.Last
	}
}

// union is a and b, sorted, each value once, at most rules.MaxPerInstance.
func union[T comparable](a, b []T, compare func(T, T) int) []T {
	out := slices.Concat(a, b)
	slices.SortFunc(out, compare)
	out = slices.Compact(out)
	return out[:min(len(out), rules.MaxPerInstance)]
}

// mergeBroker adds what another agent saw of the broker to u, keeping the
// first maxEvidence frames of each verdict by time.
func mergeBroker(u, b *rules.Broker, maxEvidence int) {
	byTime := func(a, b kafka.FrameRef) int { return cmp.Or(a.Time.Compare(b.Time), a.Compare(b)) }
	u.EnforceFrames = slices.SortedStableFunc(slices.Values(slices.Concat(u.EnforceFrames, b.EnforceFrames)), byTime)
	u.EnforceFrames = u.EnforceFrames[:min(len(u.EnforceFrames), maxEvidence)]
	u.IgnoreFrames = slices.SortedStableFunc(slices.Values(slices.Concat(u.IgnoreFrames, b.IgnoreFrames)), byTime)
	u.IgnoreFrames = u.IgnoreFrames[:min(len(u.IgnoreFrames), maxEvidence)]
	u.Enforced += b.Enforced
	u.Ignored += b.Ignored
	u.Connections += b.Connections
	u.TLSNoKey += b.TLSNoKey
	u.Kinds[0] += b.Kinds[0]
	u.Kinds[1] += b.Kinds[1]
	if b.TelemetryKnown {
		// Offered by any agent's broker answer: the same endpoint, seen by
		// two agents, is one broker.
		u.Telemetry = u.Telemetry && u.TelemetryKnown || b.Telemetry
		u.TelemetryKnown = true
	}
}
