package fleet

import (
	"container/heap"
	"errors"
	"slices"
	"time"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// Options configure a Merger. Zero values take the defaults.
type Options struct {
	// Rules are the caps of the fleet's engine (Replay is set).
	Rules rules.Options
	// MaxPending bounds the records held to be put in time order (default
	// 200,000); past it the oldest is replayed early, and counted.
	MaxPending int
	// MaxAgents bounds the agents listed (default 10,000); the records of
	// others are replayed but their agent is not listed.
	MaxAgents int
	// MaxReportRows bounds the rows of the agents' reports kept (default
	// 200,000); past it they are counted.
	MaxReportRows int
}

// agent is what the fleet knows of one agent.
type agent struct {
	result.Agent
	runs map[string]bool
}

const maxBrokersPerAgent = 64

// Merger puts every agent's records in time order, replays the
// observations into one engine that checks the rules across connections
// over the whole fleet, and keeps the findings the fleet reports: those of
// the rules across connections from its own engine, and the agents' own
// findings of every other rule. It is pure: records in, findings out.
type Merger struct {
	opt     Options
	engine  *rules.Engine
	pending pendingHeap
	files   []string
	// origins are the files' agents, runs and names, which the findings'
	// IDs are made of (report.FindingID): files are presentation, and
	// numbered in the order this member read them.
	origins []report.Origin
	fileIdx map[fileKey]int
	conns   map[connKey]fleetConn
	ids     map[connKey]int // the fleet's numbers of the agents' connections
	// reports are the agent runs' reports, in the order first seen.
	reports     map[runKey]*runReport
	reportOrder []runKey
	rows        int // report rows kept
	agents      map[string]*agent
	order       []string // agents in the order first seen
	// replayed are the requests the engine replayed, whose ranked findings
	// (docs/design/rules.md §1) it decides: an agent's ranked finding on one of them
	// is not taken.
	replayed generations[frameKey]
	emitted  generations[findingKey]
	kept     *rules.Tally // the findings the fleet reports
	counts   result.FleetCounts
	seq      uint64
	messages int64     // records of Kafka messages and findings (Messages)
	next     int       // the last connection number given
	newest   time.Time // the newest record's time
	again    bool      // the record being replayed was read again
	// out are the findings of the current call.
	out []rules.Finding
}

type fileKey struct{ agent, run, file string }

type connKey struct {
	agent, run string
	id         int
}

// fleetConn is an agent's connection as the fleet numbered it; opened
// says the engine was given its opening.
type fleetConn struct {
	kafka.Conn
	opened bool
}

type frameKey struct {
	file  int
	frame int64
}

type findingKey struct {
	file     int
	frame    int64
	rule     string
	expected rules.Value
	seen     rules.Value
}

// NewMerger returns a merger.
func NewMerger(opt Options) *Merger {
	if opt.MaxPending <= 0 {
		opt.MaxPending = 200000
	}
	if opt.MaxAgents <= 0 {
		opt.MaxAgents = 10000
	}
	if opt.MaxReportRows <= 0 {
		opt.MaxReportRows = 200000
	}
	// The engine's defaults, which the fleet's tables keep too.
	for _, c := range []struct {
		v   *int
		def int
	}{{&opt.Rules.MaxFindings, 50000}, {&opt.Rules.MaxConnections, 20000}, {&opt.Rules.MaxInstances, 20000},
		{&opt.Rules.MaxBrokers, 1000}, {&opt.Rules.MaxEvidence, 1000}} {
		if *c.v <= 0 {
			*c.v = c.def
		}
	}
	ro := opt.Rules
	ro.Replay, ro.Observe = true, false
	return &Merger{opt: opt, engine: rules.New(ro), fileIdx: map[fileKey]int{}, conns: map[connKey]fleetConn{}, ids: map[connKey]int{},
		reports: map[runKey]*runReport{},
		agents:  map[string]*agent{}, replayed: newGenerations[frameKey](100000), emitted: newGenerations[findingKey](100000),
		kept: rules.NewTally(opt.Rules.MaxFindings)}
}

// Unreadable counts a record that could not be decoded; future says it
// was of a later schema.
func (m *Merger) Unreadable(future bool) {
	m.counts.Records++
	if future {
		m.counts.Future++
	} else {
		m.counts.Unreadable++
	}
}

// Add takes a record to be replayed in time order. It returns the
// findings it completed (valid until the next call): none, unless the
// records held were over MaxPending. A record read again (again) rebuilds
// the state: the findings it causes were reported when it was first read,
// so they are kept for the report and marked as emitted, but not returned.
func (m *Merger) Add(r *Record, again bool) []rules.Finding {
	m.out = m.out[:0]
	m.counts.Records++
	a := m.agent(r.Agent)
	if a != nil {
		a.Records++
		if !a.runs[r.Run] {
			a.runs[r.Run] = true
			a.Runs++
		}
	}
	switch r.Type {
	case TypeConnection, TypeInstance, TypeBroker, TypeSummary:
		m.addReport(r)
		return m.out
	}
	if r.Type == TypeAgent {
		if a != nil {
			h := r.Hello
			a.Source, a.Version, a.Published, a.Dropped, a.Stopped = h.Source, h.Version, h.Published, h.Dropped, h.Stopping
			if h.Time.After(a.LastSeen) {
				a.LastSeen = h.Time
			}
		}
		return m.out
	}
	if r.Finding != nil || r.Observation != nil && (r.Observation.Kind == "request" || r.Observation.Kind == "response") {
		m.messages++
	}
	at := r.time()
	if at.After(m.newest) {
		m.newest = at
	}
	if a != nil && at.After(a.LastSeen) {
		a.LastSeen = at
	}
	m.seq++
	heap.Push(&m.pending, pendingRecord{r: r, at: at, seq: m.seq, again: again})
	for m.pending.Len() > m.opt.MaxPending {
		m.counts.Late++
		m.replay(heap.Pop(&m.pending).(pendingRecord))
	}
	return m.out
}

// Release replays the records held whose time is not after upTo, in time
// order, and returns the findings they completed (valid until the next
// call).
func (m *Merger) Release(upTo time.Time) []rules.Finding {
	m.out = m.out[:0]
	for m.pending.Len() > 0 && !m.pending[0].at.After(upTo) {
		m.replay(heap.Pop(&m.pending).(pendingRecord))
	}
	return m.out
}

// Flush replays every record held.
func (m *Merger) Flush() []rules.Finding {
	m.out = m.out[:0]
	for m.pending.Len() > 0 {
		m.replay(heap.Pop(&m.pending).(pendingRecord))
	}
	return m.out
}

// Messages counts the records of Kafka messages (observed requests and
// responses) and of the agents' findings added.
func (m *Merger) Messages() int64 { return m.messages }

// Newest is the time of the newest record added.
func (m *Merger) Newest() time.Time { return m.newest }

// Pending is how many records wait to be replayed, and the time of the
// oldest.
func (m *Merger) Pending() (int, time.Time) {
	if m.pending.Len() == 0 {
		return 0, time.Time{}
	}
	return m.pending.Len(), m.pending[0].at
}

func (r *Record) time() time.Time {
	switch {
	case r.Observation != nil:
		return r.Observation.At.Time
	case r.Finding != nil:
		return r.Finding.At.Time
	}
	return time.Time{}
}

func (m *Merger) agent(name string) *agent {
	if a, ok := m.agents[name]; ok {
		return a
	}
	if len(m.agents) >= m.opt.MaxAgents {
		return nil
	}
	a := &agent{Agent: result.Agent{Name: name}, runs: map[string]bool{}}
	m.agents[name] = a
	m.order = append(m.order, name)
	return a
}

// file is the fleet's index of an agent's file.
func (m *Merger) file(agent, run string) func(string) int {
	return func(name string) int {
		k := fileKey{agent, run, name}
		if i, ok := m.fileIdx[k]; ok {
			return i
		}
		i := len(m.files)
		m.fileIdx[k] = i
		m.files = append(m.files, agent+":"+name)
		m.origins = append(m.origins, report.Origin{Agent: agent, Run: run, File: name})
		return i
	}
}

// conn is the fleet's connection for an agent's, numbered in the order
// the fleet first saw them.
func (m *Merger) conn(d *decoder, r *Record, w WireConn) fleetConn {
	k := connKey{r.Agent, r.Run, w.ID}
	c, ok := m.conns[k]
	if !ok {
		c = fleetConn{Conn: d.conn(w, m.connID(k))}
		m.conns[k] = c
	}
	return c
}

// connID is the fleet's number of an agent's connection, given in the
// order the fleet first read of it.
func (m *Merger) connID(k connKey) int {
	id, ok := m.ids[k]
	if !ok {
		m.next++
		id = m.next
		m.ids[k] = id
	}
	return id
}

func (m *Merger) replay(p pendingRecord) {
	r := p.r
	m.again = p.again
	d := &decoder{file: m.file(r.Agent, r.Run)}
	switch {
	case r.Observation != nil:
		w := r.Observation
		k := connKey{r.Agent, r.Run, w.Conn.ID}
		c := m.conn(d, r, w.Conn)
		o := d.observation(w, c.ID)
		if d.err != nil {
			m.undecodable(d.err)
			return
		}
		switch {
		case o.Kind == rules.ObservedOpen:
			if c.opened {
				return // read twice
			}
			c.opened = true
			m.conns[k] = c
			if a := m.agents[r.Agent]; a != nil && len(a.Brokers) < maxBrokersPerAgent && !slices.Contains(a.Brokers, o.Conn.Broker) {
				a.Brokers = append(a.Brokers, o.Conn.Broker)
			}
		case !c.opened:
			return // its opening was lost, or it was closed and read again
		case o.Kind == rules.ObservedClose:
			// Forgotten: what is read of it again is not replayed.
			c.opened = false
			m.conns[k] = c
		case o.Kind == rules.ObservedRequest:
			m.replayed.add(frameKey{o.Event.At.File, o.Event.At.Frame})
		}
		for _, f := range m.engine.Replay(&o) {
			if rules.CrossConnection(f.Rule) || rules.Ranked(f.Rule) {
				m.take(f)
			}
		}
	case r.Finding != nil:
		w := r.Finding
		f := d.finding(w, m.conn(d, r, w.Conn).Conn)
		if d.err != nil {
			m.undecodable(d.err)
			return
		}
		if rules.CrossConnection(f.Rule) {
			return // the fleet's engine finds these over every agent
		}
		if rules.Ranked(f.Rule) && m.replayed.has(frameKey{f.At.File, f.At.Frame}) {
			return // decided by the fleet's engine, with every agent in view
		}
		m.take(f)
	}
}

// undecodable counts a record whose contents could not be read: of a
// later schema (a name this kidscope does not know), or not kidscope's.
func (m *Merger) undecodable(err error) {
	if errors.Is(err, ErrFutureSchema) {
		m.counts.Future++
	} else {
		m.counts.Unreadable++
	}
}

// take keeps a finding for the report and the caller, once.
func (m *Merger) take(f rules.Finding) {
	k := findingKey{f.At.File, f.At.Frame, f.Rule, f.Expected, f.Seen}
	if m.emitted.has(k) {
		m.counts.Duplicates++
		return
	}
	m.emitted.add(k)
	f.Related = slices.Clone(f.Related) // the engine's, valid until its next call
	m.kept.Add(f)
	if !m.again {
		m.out = append(m.out, f)
	}
}

// Files names the fleet's files: agent:file (the interface, or the file
// the agent wrote), index by index.
func (m *Merger) Files() []string { return slices.Clone(m.files) }

// Origins are what the fleet's files stand for in the findings' IDs
// (report.Analysis.Origins), index by index: the agent, its run and its
// name of the file. A finding has one ID whichever member reads it, and
// in whatever order, once or again.
func (m *Merger) Origins() []report.Origin { return slices.Clone(m.origins) }

// Agents lists the agents in the order first seen.
func (m *Merger) Agents() []result.Agent {
	var out []result.Agent
	for _, n := range m.order {
		a := m.agents[n].Agent
		a.Brokers = slices.Clone(a.Brokers)
		for run := range m.agents[n].runs {
			if rr := m.reports[runKey{n, run}]; rr != nil && rr.summary != nil {
				a.Reported++
			}
		}
		out = append(out, a)
	}
	return out
}

// Counts returns what the fleet read, skipped or put aside, and how many
// agent runs' reports it read.
func (m *Merger) Counts() result.FleetCounts {
	c := m.counts
	for _, a := range m.agents {
		c.Runs += int64(a.Runs)
	}
	for _, rr := range m.reported() {
		c.Reported++
		c.ReportRowsMissing += int64(max(rr.wantRows-rr.rows(), 0))
	}
	return c
}

// Result is what the fleet found: its findings, and the tables of its
// agents' reports (tables.go). Call it after Flush.
func (m *Merger) Result() rules.Result {
	res := m.engine.Result()
	m.tables(&res)
	m.kept.Fill(&res)
	slices.SortStableFunc(res.Findings, func(a, b rules.Finding) int {
		if c := a.At.Time.Compare(b.At.Time); c != 0 {
			return c
		}
		return a.At.Compare(b.At)
	})
	return res
}

// pendingRecord is a record waiting to be replayed: ordered by time, then
// by arrival (an agent's records of one frame time in the order made).
type pendingRecord struct {
	r   *Record
	at  time.Time
	seq uint64
	// again: read again to rebuild the state (Add).
	again bool
}

type pendingHeap []pendingRecord

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if c := h[i].at.Compare(h[j].at); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(pendingRecord)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = pendingRecord{}
	*h = old[:len(old)-1]
	return x
}

// generations is a set that forgets its oldest entries beyond a size: two
// generations, the older dropped whole when the newer fills.
type generations[K comparable] struct {
	cur, prev map[K]struct{}
	size      int
}

func newGenerations[K comparable](size int) generations[K] {
	return generations[K]{cur: map[K]struct{}{}, size: size}
}

func (g *generations[K]) has(k K) bool {
	if _, ok := g.cur[k]; ok {
		return true
	}
	_, ok := g.prev[k]
	return ok
}

func (g *generations[K]) add(k K) {
	if len(g.cur) >= g.size {
		g.prev, g.cur = g.cur, make(map[K]struct{}, g.size/4)
	}
	g.cur[k] = struct{}{}
}
