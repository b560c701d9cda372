package report

import (
	"bytes"
	"encoding/csv"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kidscope/kidscope/result"
)

// TestAgentsSection: kidscope fleet's AGENTS section, in every document
// format, lists the agents and what was skipped, with the names from the
// topic escaped; without agents nothing of it is written.
func TestAgentsSection(t *testing.T) {
	var brokers []netip.AddrPort
	for i := range 6 {
		brokers = append(brokers, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 9092))
	}
	a := &Analysis{Files: []string{"host-1:eth0"},
		Agents: []result.Agent{{Name: "host-1\x1b[2J\u202e", Source: "eth0", Version: "v1", Runs: 2, Brokers: brokers,
			Records: 1234, Published: 1300, Dropped: 66, LastSeen: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Stopped: true}},
		Fleet: &result.FleetCounts{Records: 1240, Unreadable: 3, Future: 1, Duplicates: 2}}
	for _, format := range []string{"table", "markdown", "json"} {
		var b bytes.Buffer
		if err := WriteAnalysis(&b, a, AnalysisOptions{Format: format}); err != nil {
			t.Fatal(err)
		}
		out := strings.Join(strings.Fields(b.String()), " ")
		// JSON keeps strings as sent, JSON-escaped (ESC is, RLO need not be).
		if strings.Contains(out, "\x1b[2J") || format != "json" && strings.Contains(out, "\u202e") {
			t.Errorf("%s: the agent's name is written raw", format)
		}
		want := []string{"host-1", "+2 more", "3 not kidscope's", "1 of a later schema", "2 findings made again"}
		if format == "json" {
			want = []string{`"agents"`, `"dropped": 66`, `"unreadable": 3`, `"future": 1`, `"stopped": true`}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", format, w, out)
			}
		}
	}
	var b bytes.Buffer
	if err := WriteAnalysis(&b, &Analysis{}, AnalysisOptions{Format: "table"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Agents") {
		t.Error("an analysis without agents has an agents section")
	}
}

// TestAgentsCSV: -o csv writes the agents after the findings, in the
// findings' columns (name in file, last seen in time, brokers in broker,
// the rest in words in message), one row each, then the fleet's row; the
// names from the topic are escaped and cannot start a formula. Without
// agents the CSV is what analyze writes, with no row of them.
func TestAgentsCSV(t *testing.T) {
	brokers := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:9092"), netip.MustParseAddrPort("[fd00::9]:9092")}
	agents := []result.Agent{
		{Name: "=cmd\x1b[2J", Source: "-eth0\u202e", Version: "v1", Runs: 2, Brokers: brokers, Records: 1234,
			Published: 1300, Dropped: 66, LastSeen: time.Date(2026, 12, 2, 10, 0, 0, 5e6, time.UTC), Stopped: true, Reported: 1},
		{Name: "host-2", Records: 0},
	}
	fleet := &result.FleetCounts{Records: 1240, Unreadable: 3, Future: 1, Duplicates: 2, Runs: 2, Reported: 1}
	plain := render(t, incidentAnalysis(), AnalysisOptions{Format: "csv"})
	with := incidentAnalysis()
	with.Agents, with.Fleet = agents, fleet
	out := render(t, with, AnalysisOptions{Format: "csv"})
	if !bytes.HasPrefix(out, plain) {
		t.Fatalf("the agents changed the findings' rows:\n%s", out)
	}
	if bytes.Contains(out, []byte("\x1b")) || bytes.Contains(out, []byte("\u202e")) {
		t.Error("an agent's string is written raw")
	}
	recs, err := csv.NewReader(bytes.NewReader(out[len(plain):])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(r []string, name string) string { return r[slices.Index(findingColumns, name)] }
	tests := []struct{ file, time, broker, message string }{
		{`'=cmd\x1b[2J`, "2026-12-02T10:00:00.005Z", "10.0.0.1:9092 [fd00::9]:9092",
			`agent (source -eth0\u202e, kidscope v1, 2 runs, stopped, no report): 1,234 records read; it last said it had published 1,300 and dropped 66`},
		{"host-2", "", "", "agent: 0 records read; it last said it had published 0 and dropped 0"},
		{"", "", "", "fleet: 1,240 records read from the topic; skipped: 3 not kidscope's, 1 of a later schema; " +
			"2 findings made again from records read twice, not repeated; reports of 1 of 2 agent runs read."},
	}
	if len(recs) != len(tests) {
		t.Fatalf("%d agents' rows, want %d:\n%s", len(recs), len(tests), out[len(plain):])
	}
	for i, w := range tests {
		r := recs[i]
		if len(r) != len(findingColumns) {
			t.Fatalf("row %d has %d columns, want %d", i, len(r), len(findingColumns))
		}
		got := struct{ file, time, broker, message string }{col(r, "file"), col(r, "time"), col(r, "broker"), col(r, "message")}
		if got != w {
			t.Errorf("row %d = %+v, want %+v", i, got, w)
		}
		for _, k := range []string{"rule", "severity", "frame", "count"} {
			if col(r, k) != "" {
				t.Errorf("row %d: %s = %q, want empty (no finding)", i, k, col(r, k))
			}
		}
	}
	// The header is the findings' alone, and an analysis without agents
	// (analyze) has no agents' row: its csv is the golden one.
	if first, _, _ := bytes.Cut(out, []byte("\n")); string(first) != strings.Join(findingColumns, ",") {
		t.Errorf("header = %q", first)
	}
	golden(t, "analysis_incident.csv.golden", plain)
	if empty := render(t, &Analysis{}, AnalysisOptions{Format: "csv"}); strings.Count(string(empty), "\n") != 1 {
		t.Errorf("csv of nothing = %q", empty)
	}
}

// TestFleetTablesFromReports: a fleet's totals and tables are its agents'
// reports. With none read they are left out of the table and markdown,
// never shown as zeros, and the summary says why; with some, it says of
// how many runs they are.
func TestFleetTablesFromReports(t *testing.T) {
	for _, tc := range []struct {
		runs, reported int64
		tables         bool
		want           string
	}{
		{3, 0, false, "none of 3 agent runs has published its totals and tables"},
		{3, 2, true, "the totals and tables are those of 2 of 3 agent runs"},
		{3, 3, true, ""},
	} {
		a := incidentAnalysis()
		a.Agents = []result.Agent{{Name: "host-1", Runs: 3, Reported: int(tc.reported)}}
		a.Fleet = &result.FleetCounts{Records: 10, Runs: tc.runs, Reported: tc.reported}
		for _, format := range []string{"table", "markdown"} {
			out := strings.Join(strings.Fields(string(render(t, a, AnalysisOptions{Format: format}))), " ")
			lower := strings.ToLower(out)
			for _, section := range []string{"time span", "packets", "connections (", "client instances (", "brokers (", "old/new client"} {
				if strings.Contains(lower, section) != tc.tables {
					t.Errorf("%d of %d reported, %s: %q shown %v, want %v", tc.reported, tc.runs, format, section, !tc.tables, tc.tables)
				}
			}
			if tc.want != "" && !strings.Contains(out, tc.want) {
				t.Errorf("%d of %d reported, %s: no %q in\n%s", tc.reported, tc.runs, format, tc.want, out)
			}
			if tc.want == "" && strings.Contains(out, "the totals and tables are") {
				t.Errorf("every run reported, %s: a reports line", format)
			}
			if !tc.tables && !strings.Contains(out, "no agent's report was read") {
				t.Errorf("%s: the tables left out, unsaid", format)
			}
			if (tc.reported < tc.runs) != strings.Contains(out, "no report") {
				t.Errorf("%d of %d reported, %s: the agent's row says 'no report' %v", tc.reported, tc.runs, format, !(tc.reported < tc.runs))
			}
		}
	}
}

// TestAgentsTableWidth: the AGENTS table fits 80 columns with long agent
// names and sources and IPv4 brokers, and breaks names only after their
// separators: each cell's lines, joined, give the name back, and no line
// ends inside a part between two separators.
func TestAgentsTableWidth(t *testing.T) {
	source := "samples/captures/tel-push-after-terminating.pcapng,samples/captures/inst-shared.pcapng"
	a := &Analysis{Files: []string{"x"}, Fleet: &result.FleetCounts{Records: 10, Runs: 1, Reported: 1},
		Agents: []result.Agent{{Name: "tel-push-after-terminating", Source: source, Runs: 1, Reported: 1, Stopped: true,
			Brokers: []netip.AddrPort{netip.MustParseAddrPort("192.168.100.200:19092")}, Records: 1234567, Dropped: 1234567,
			LastSeen: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}}}
	out := string(render(t, a, AnalysisOptions{Format: "table"}))
	_, agents, _ := strings.Cut(out, "AGENTS (1)\n")
	agents, _, _ = strings.Cut(agents, "└")
	var cells []string
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("%d columns: %s", n, l)
		}
	}
	for _, l := range strings.Split(agents, "\n") {
		if f := strings.Split(l, "│"); len(f) == 6 {
			cells = append(cells, strings.TrimSpace(f[1]))
		}
	}
	// The first column: the header's two lines, the name, the state, then
	// the source.
	state := slices.Index(cells, "(stopped)")
	if len(cells) < 5 || cells[0] != "AGENT" || state < 3 {
		t.Fatalf("first column %q in\n%s", cells, out)
	}
	for _, c := range []struct {
		what  string
		lines []string
		want  string
	}{{"name", cells[2:state], a.Agents[0].Name}, {"source", cells[state+1:], source}} {
		if got := strings.Join(c.lines, ""); got != c.want {
			t.Errorf("%s in lines %q, joined %q", c.what, c.lines, got)
		}
		for _, l := range c.lines[:len(c.lines)-1] {
			if !strings.ContainsAny(l[len(l)-1:], "/-_.,:") {
				t.Errorf("a line of the %s ends inside a word: %q", c.what, l)
			}
		}
	}
}

// TestNames: names from the topic break after separators, are escaped,
// and a part longer than the width is cut with an ellipsis.
func TestNames(t *testing.T) {
	st := &docStyle{}
	for _, tc := range []struct {
		in    string
		width int
		want  []string
	}{
		{"host-1", 26, []string{"host-1"}},
		{"samples/captures/tel-push-after-terminating.pcapng", 26, []string{"samples/captures/tel-push-", "after-terminating.pcapng"}},
		{"a-very-long-agent-name-without-an-end", 10, []string{"a-very-", "long-", "agent-", "name-", "without-", "an-end"}},
		{"abcdefghijklmnopqrstuvwxyz/x", 10, []string{"abcdefghi…", "x"}},
		{"evil\x1b[2J-host", 26, []string{`evil\x1b[2J-host`}},
		{"", 26, []string{""}},
	} {
		if got := st.names(tc.in, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("names(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}
