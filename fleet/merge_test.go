package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/fleet"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

// agents publishes, as records through JSON, what a run observes, each
// connection under an agent of its own. One engine observed them all, so
// the agents' findings of the rules across connections are right too: the
// Merger leaves them aside and finds them again by replaying, which is
// what this checks (cmd's TestFleetAcrossAgents runs an agent per
// connection).
type agents struct {
	file    string
	records [][]byte
	seq     map[string]uint64
}

func (a *agents) Event(*pipeline.Conn, *decode.Event) {}
func (a *agents) Closed(*pipeline.Conn)               {}

func (a *agents) agentOf(c kafka.Conn) string {
	return "conn-" + c.Client.String() + "-" + c.Broker.String()
}

func (a *agents) files(int) string { return a.file }

func (a *agents) add(agent string, r fleet.Record) {
	if a.seq == nil {
		a.seq = map[string]uint64{}
	}
	a.seq[agent]++
	r.Schema, r.Agent, r.Run, r.Seq = fleet.SchemaVersion, agent, "run-1", a.seq[agent]
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	a.records = append(a.records, b)
}

func (a *agents) Observed(o *rules.Observation) {
	a.add(a.agentOf(o.Conn), fleet.Record{Type: fleet.TypeObservation, Observation: fleet.EncodeObservation(o, a.files)})
}

func (a *agents) Found(f *rules.Finding, c kafka.Conn) {
	a.add(a.agentOf(c), fleet.Record{Type: fleet.TypeFinding, Finding: fleet.EncodeFinding(f, c, a.files)})
}

// key is a finding as both sides can name it (the fleet numbers files
// otherwise): its evidence, the broker's answer and the related frames
// with their roles.
func key(f rules.Finding) string {
	var related []string
	for _, r := range f.Related {
		role, _ := report.RoleNames.Name(r.Role)
		related = append(related, fmt.Sprintf("%d %s", r.Frame.Frame, role))
	}
	return fmt.Sprintf("%s frame %d %s %s→%s exp %+v seen %+v also %v answer %+v after gap %v related %v", f.Rule, f.At.Frame, f.At.Time.UTC().Format("15:04:05.000000"),
		f.Conn.Client, f.Conn.Broker, f.Expected, f.Seen, f.Also, f.Answer, f.AfterGap, related)
}

// TestMergerEqualsOneEngine: for every bundled sample and real-client
// capture, the fleet's findings over the records of one agent per connection
// equal those of one engine that saw the whole capture.
func TestMergerEqualsOneEngine(t *testing.T) {
	var files []string
	for _, g := range []string{"../samples/captures/*.pcapng", "../testdata/real/*.pcap"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 50 {
		t.Fatalf("found %d captures", len(files))
	}
	crossSeen := 0
	for _, file := range files {
		ports := reassembly.DefaultPorts()
		if strings.Contains(file, "testdata/real") {
			ports = reassembly.Ports{Auto: true}
		}
		base := pipeline.Options{Files: []string{file}, Reassembly: reassembly.Options{Ports: ports}, Rules: &pipeline.Check{}}
		whole, err := pipeline.Run(context.Background(), base, nil)
		if err != nil {
			t.Fatal(err)
		}
		ag := &agents{file: filepath.Base(file)}
		if _, err := pipeline.Run(context.Background(), base, ag); err != nil {
			t.Fatal(err)
		}
		m := fleet.NewMerger(fleet.Options{})
		for _, b := range ag.records {
			r, err := fleet.Decode(b)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			m.Add(r, false)
		}
		m.Flush()
		var want, got []string
		for _, f := range whole.Rules.Findings {
			want = append(want, key(f))
			if rules.CrossConnection(f.Rule) {
				crossSeen++
			}
		}
		for _, f := range m.Result().Findings {
			got = append(got, key(f))
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s: the fleet found\n  %s\none engine found\n  %s", filepath.Base(file), strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	t.Logf("%d captures, %d findings of rules across connections", len(files), crossSeen)
	if crossSeen == 0 {
		t.Error("no capture has a finding of a rule across connections: the test shows nothing")
	}
}

// TestReportsReadTwice: a fleet member that reads a partition again (a
// rebalance) reads the agents' reports again: the tables and totals are
// the same as read once, and a run whose report was not read (its rows
// but not its summary) counts as not reported and shows nothing.
func TestReportsReadTwice(t *testing.T) {
	var records [][]byte
	for i, name := range []string{"inst-shared", "broker-mixed", "stream-lost-segment"} {
		file := filepath.Join("..", "samples", "captures", name+".pcapng")
		ag := &agents{file: filepath.Base(file)}
		run, err := pipeline.Run(context.Background(), pipeline.Options{Files: []string{file},
			Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}, Rules: &pipeline.Check{}}, ag)
		if err != nil {
			t.Fatal(err)
		}
		reportRecs := fleet.EncodeReport(&run.Summary, &run.Rules, ag.files)
		if i == 2 {
			reportRecs = reportRecs[:len(reportRecs)-1] // its summary not read
		}
		for _, r := range reportRecs {
			ag.add("agent-"+name, r)
		}
		records = append(records, ag.records...)
	}
	read := func(times int) (*fleet.Merger, rules.Result) {
		m := fleet.NewMerger(fleet.Options{})
		for i := range times {
			for _, b := range records {
				r, err := fleet.Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				m.Add(r, i > 0)
			}
		}
		m.Flush()
		return m, m.Result()
	}
	m1, once := read(1)
	m2, twice := read(2)
	for _, s := range []struct {
		name      string
		got, want any
	}{
		{"connections", twice.Connections, once.Connections}, {"instances", twice.Instances, once.Instances},
		{"brokers", twice.Brokers, once.Brokers}, {"matrix", twice.Matrix, once.Matrix},
		{"summary", m2.Summary(), m1.Summary()}, {"dropped", twice.Dropped, once.Dropped},
	} {
		if !reflect.DeepEqual(s.got, s.want) {
			t.Errorf("%s read twice:\n%+v\nread once:\n%+v", s.name, s.got, s.want)
		}
	}
	if c := m2.Counts(); c.Reported != 2 {
		t.Errorf("%d runs reported of %d, want 2 (the third's summary was not read)", c.Reported, c.Runs)
	}
	if s := m1.Summary(); s.Capture.Packets == 0 || len(once.Connections) == 0 || len(once.Brokers) == 0 {
		t.Errorf("nothing read: %d packets, %d connections, %d brokers", s.Capture.Packets, len(once.Connections), len(once.Brokers))
	}
}

// idAgents are agents (one per connection, as agents) that also note the
// ID of each finding they publish, as their own report gives it: of the
// agent, its run and its file.
type idAgents struct {
	agents
	ids map[string]string // key → ID
}

func (a *idAgents) Found(f *rules.Finding, c kafka.Conn) {
	a.agents.Found(f, c)
	if a.ids == nil {
		a.ids = map[string]string{}
	}
	a.ids[a.agentOf(c)+" "+key(*f)] = report.FindingID(report.Origin{Agent: a.agentOf(c), Run: "run-1", File: a.file}, f)
}

// fleetIDs are the IDs of findings the fleet made, by agent and key.
func fleetIDs(t *testing.T, m *fleet.Merger, fs []rules.Finding, into map[string]string) {
	t.Helper()
	origins := m.Origins()
	for i := range fs {
		f := &fs[i]
		o := origins[f.At.File]
		k := o.Agent + " " + o.File + " " + key(*f)
		id := report.FindingID(o, f)
		if prev, ok := into[k]; ok && prev != id {
			t.Errorf("%s: IDs %s and %s", k, prev, id)
		}
		into[k] = id
	}
}

// TestFleetFindingIDs: for every bundled sample and real-client capture
// published by one agent per connection, each finding the fleet reports
// has the ID its agent gave it (the fleet's agent:file names and its
// numbering of files and connections are not in it), those of the rules
// across connections that the fleet makes itself included; and no two
// findings of a report share an ID, nor two of analyze's.
func TestFleetFindingIDs(t *testing.T) {
	var files []string
	for _, g := range []string{"../samples/captures/*.pcapng", "../testdata/real/*.pcap"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	checked, cross := 0, 0
	for _, file := range files {
		ports := reassembly.DefaultPorts()
		if strings.Contains(file, "testdata/real") {
			ports = reassembly.Ports{Auto: true}
		}
		base := pipeline.Options{Files: []string{file}, Reassembly: reassembly.Options{Ports: ports}, Rules: &pipeline.Check{}}
		ag := &idAgents{agents: agents{file: filepath.Base(file)}}
		whole, err := pipeline.Run(context.Background(), base, ag)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for i := range whole.Rules.Findings {
			f := &whole.Rules.Findings[i]
			id := report.FindingID(report.Origin{File: file}, f)
			if prev, ok := seen[id]; ok {
				t.Errorf("%s: %s and %s have one ID", file, prev, key(*f))
			}
			seen[id] = key(*f)
		}
		m := fleet.NewMerger(fleet.Options{})
		for _, b := range ag.records {
			r, err := fleet.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			m.Add(r, false)
		}
		m.Flush()
		res := m.Result()
		origins := m.Origins()
		seen = map[string]string{}
		for i := range res.Findings {
			f := &res.Findings[i]
			o := origins[f.At.File]
			id := report.FindingID(o, f)
			if prev, ok := seen[id]; ok {
				t.Errorf("%s: the fleet's %s and %s have one ID", file, prev, key(*f))
			}
			seen[id] = key(*f)
			want, ok := ag.ids[o.Agent+" "+key(*f)]
			if !ok {
				t.Errorf("%s: the fleet's %s of %s: no agent made it", file, key(*f), o.Agent)
				continue
			}
			if id != want {
				t.Errorf("%s: the fleet's %s has ID %s, its agent's %s", file, key(*f), id, want)
			}
			checked++
			if rules.CrossConnection(f.Rule) {
				cross++
			}
		}
	}
	if checked < 50 || cross == 0 {
		t.Errorf("%d findings checked, %d of the rules across connections: the test shows little", checked, cross)
	}
}

// TestFleetRepeatHasItsID is the at-least-once window: a fleet member
// read a partition, reported its findings and stopped before it committed
// the second half of it; the member that takes the partition over reads
// the first half again (to rebuild the state) and the second half as new,
// and reports those findings again. Each has the ID it had the first
// time, though the new member also holds another partition, whose agents
// shift its numbering of files and connections: a consumer drops the
// repeats by ID. No two different findings share one.
func TestFleetRepeatHasItsID(t *testing.T) {
	var p0, p1 [][]byte // two partitions: the captures' agents, alternately
	for i, name := range []string{"tel-push-after-terminating", "inst-shared", "tel-assigned-not-reused", "inst-split",
		"tel-broker-reissues-id", "grp-join-rejoin-wrong", "hdr-seed-changed", "broker-mixed"} {
		file := filepath.Join("..", "samples", "captures", name+".pcapng")
		ag := &agents{file: filepath.Base(file)}
		if _, err := pipeline.Run(context.Background(), pipeline.Options{Files: []string{file},
			Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}, Rules: &pipeline.Check{}}, ag); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			p0 = append(p0, ag.records...)
		} else {
			p1 = append(p1, ag.records...)
		}
	}
	read := func(m *fleet.Merger, recs [][]byte, again func(i int) bool, emitted map[string]string) {
		for i, b := range recs {
			r, err := fleet.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			fleetIDs(t, m, m.Add(r, again(i)), emitted)
		}
	}
	// The first member holds p0, reports everything, and stops.
	first := fleet.NewMerger(fleet.Options{})
	firstIDs := map[string]string{}
	read(first, p0, func(int) bool { return false }, firstIDs)
	fleetIDs(t, first, first.Flush(), firstIDs)

	// The second had p1 committed before, takes p0 over committed to
	// half, and reads both from their start.
	second := fleet.NewMerger(fleet.Options{})
	secondIDs := map[string]string{}
	half := len(p0) / 2
	read(second, p1, func(int) bool { return true }, secondIDs)
	read(second, p0, func(i int) bool { return i < half }, secondIDs)
	fleetIDs(t, second, second.Flush(), secondIDs)

	repeated, renumbered := 0, 0
	for k, id := range secondIDs {
		if want, ok := firstIDs[k]; ok {
			repeated++
			if id != want {
				t.Errorf("%s: reported again with ID %s, first with %s", k, id, want)
			}
		}
	}
	if repeated == 0 {
		t.Fatal("the second member reported no finding again: the test shows nothing")
	}
	for i, f := range second.Files() {
		if i < len(first.Files()) && first.Files()[i] != f {
			renumbered++
		}
	}
	if renumbered == 0 {
		t.Errorf("the second member numbered the files as the first: the test shows no renumbering")
	}
	byID := map[string]string{}
	for _, ids := range []map[string]string{firstIDs, secondIDs} {
		for k, id := range ids {
			if prev, ok := byID[id]; ok && prev != k {
				t.Errorf("%s and %s have one ID %s", prev, k, id)
			}
			byID[id] = k
		}
	}
	t.Logf("%d findings first, %d reported again, %d files renumbered", len(firstIDs), repeated, renumbered)
}
