package report

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kidscope/kidscope/report/internal/textdoc"

	"github.com/kidscope/kidscope/result"
)

// The AGENTS section of kidscope fleet's report: who published the records
// the fleet read, and what it skipped of them. Agents' names and sources
// come from the topic, which anyone who may write it controls: they are
// escaped like a capture's strings (line.render, shownCell, JSON).

// agentBrokersShown is how many broker endpoints an agent's row lists.
const agentBrokersShown = 4

// agentColumn is the width of the agent and source column: with an IPv4
// broker, counts in the millions and a time of day, the table is 79
// columns wide.
const agentColumn = 24

// names is a name from the topic (an agent's, its files'), shown escaped
// in lines of at most width characters: broken after its separators (/ \
// - _ . , : and spaces) but never inside a part between two of them; a
// part longer than width is cut, with an ellipsis at its end. Markdown
// takes it whole.
func (st *docStyle) names(s string, width int) []string {
	if st.md {
		return []string{shown(s)}
	}
	var parts []string
	start := 0
	for i, r := range s {
		if strings.ContainsRune("/\\-_.,: ", r) {
			parts = append(parts, s[start:i+utf8.RuneLen(r)])
			start = i + utf8.RuneLen(r)
		}
	}
	if start < len(s) {
		parts = append(parts, s[start:])
	}
	var lines []string
	cur := ""
	for _, p := range parts {
		p = shown(p)
		if cur != "" && utf8.RuneCountInString(cur+p) > width {
			lines = append(lines, strings.TrimRight(cur, " "))
			cur = ""
		}
		if utf8.RuneCountInString(p) > width {
			p = textdoc.Shorten(p, width)
		}
		cur += p
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, strings.TrimRight(cur, " "))
	}
	return lines
}

func agentBlocks(a *Analysis, st *docStyle) []textdoc.Block {
	if a.Agents == nil && a.Fleet == nil {
		return nil
	}
	blocks := []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title(fmt.Sprintf("Agents (%s)", commas(int64(len(a.Agents))))))}}
	if len(a.Agents) > 0 {
		// Four columns, so that the table fits 80 columns with IPv4
		// brokers: the agent over its source, the records read over those
		// it dropped. Names and sources break after their separators,
		// never inside a word.
		g := &textdoc.Grid{Header: []string{"AGENT\nSOURCE", "BROKERS", "RECORDS\nDROPPED", "LAST SEEN"}}
		if st.md {
			g.Header = []string{"Agent / source", "Brokers seen", "Records read / dropped by the agent", "Last seen"}
		}
		for i := range a.Agents {
			ag := &a.Agents[i]
			agent := st.names(ag.Name, agentColumn)
			var state []string
			if ag.Runs > 1 {
				state = append(state, fmt.Sprintf("%d runs", ag.Runs))
			}
			if ag.Stopped {
				state = append(state, "stopped")
			}
			if ag.Reported < ag.Runs {
				state = append(state, "no report")
			}
			if len(state) > 0 {
				agent = append(agent, "("+strings.Join(state, ", ")+")")
			}
			source := st.names(ag.Source, agentColumn)
			if st.md {
				agent = []string{strings.Join(agent, " ") + " / " + strings.Join(source, "")}
			} else {
				agent = append(agent, source...)
			}
			g.Rows = append(g.Rows, [][]string{agent, agentBrokers(ag), {commas(ag.Records), commas(ag.Dropped)},
				{st.clock(ag.LastSeen)}})
		}
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Table, Grid: g})
	}
	if c := a.Fleet; c != nil {
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain(fleetText(c))})
	}
	return blocks
}

// The totals and tables of kidscope fleet's report (time span, packets,
// connections…, CONNECTIONS, CLIENT INSTANCES, BROKERS, the matrix) are
// the union of the reports its agents publish when a run stops: they say
// of how many runs they are, and are left out, never shown as zeros, when
// no report was read.

// tablesKnown reports whether the analysis has totals and tables: always
// but in a fleet's report that read no agent's report.
func tablesKnown(a *Analysis) bool { return a.Fleet == nil || a.Fleet.Reported > 0 }

// reportsLine says of how many agent runs a fleet's totals and tables are,
// when not of all.
func reportsLine(a *Analysis) (string, bool) {
	c := a.Fleet
	switch {
	case c == nil || c.Reported == c.Runs && c.ReportRowsMissing == 0:
		return "", false
	case c.Reported == 0:
		return fmt.Sprintf("none of %s has published its totals and tables (an agent does when it stops): they are left out",
			plural(c.Runs, "agent run", "agent runs")), true
	}
	text := fmt.Sprintf("the totals and tables are those of %s of %s, which published them when they stopped",
		commas(c.Reported), plural(c.Runs, "agent run", "agent runs"))
	if c.Reported == c.Runs {
		text = "the totals and tables are those the agents published when they stopped"
	}
	if c.ReportRowsMissing > 0 {
		text += fmt.Sprintf("; %s of them not read (dropped by the agent, or on partitions not read)", plural(c.ReportRowsMissing, "row", "rows"))
	}
	return text, true
}

// unreportedBlocks stand for the tables a fleet's report leaves out.
func unreportedBlocks(st *docStyle) []textdoc.Block {
	return []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title("Connections, client instances, brokers"))},
		{Kind: textdoc.Para, Text: textdoc.Plain("Not known: they come from the reports the agents publish when they stop, " +
			"and no agent's report was read (see AGENTS).")}}
}

// fleetText says what the fleet read and skipped of the topic's records,
// in the AGENTS section's paragraph and the CSV's fleet row.
func fleetText(c *result.FleetCounts) string {
	text := fmt.Sprintf("%s read from the topic", plural(c.Records, "record", "records"))
	var skipped []string
	if c.Unreadable > 0 {
		skipped = append(skipped, fmt.Sprintf("%s not kidscope's", commas(c.Unreadable)))
	}
	if c.Future > 0 {
		skipped = append(skipped, fmt.Sprintf("%s of a later schema", commas(c.Future)))
	}
	if len(skipped) > 0 {
		text += "; skipped: " + strings.Join(skipped, ", ")
	}
	if c.Late > 0 {
		text += fmt.Sprintf("; %s checked before older ones (the ordering buffer was full)", commas(c.Late))
	}
	if c.Duplicates > 0 {
		text += fmt.Sprintf("; %s made again from records read twice, not repeated", plural(c.Duplicates, "finding", "findings"))
	}
	text += fmt.Sprintf("; reports of %s of %s read", commas(c.Reported), plural(c.Runs, "agent run", "agent runs"))
	if c.ReportRowsDropped > 0 {
		text += fmt.Sprintf(" (%s past the fleet's bound not kept)", plural(c.ReportRowsDropped, "row", "rows"))
	}
	return text + "."
}

// agentRows are the csv rows of the AGENTS section, after the findings' and
// the unlisted ones, in the same columns, the way those rows are: one per
// agent (its name in file, its newest record's time in time, every broker
// it saw in broker, the rest in words in message), then one that says what
// the fleet read and skipped (in message). Their frame, rule and count are
// empty: they are no findings and count none. Without agents and fleet
// counts (analyze) there are none.
func agentRows(a *Analysis) [][]string {
	if a.Agents == nil && a.Fleet == nil {
		return nil
	}
	row := func(file, at, brokers, msg string) []string {
		r := make([]string, len(findingColumns))
		r[csvFile], r[csvTime], r[csvBroker], r[csvMessage] = shownCell(file), at, brokers, shownCell(msg)
		return r
	}
	var rows [][]string
	for i := range a.Agents {
		ag := &a.Agents[i]
		var about []string
		if ag.Source != "" {
			about = append(about, "source "+ag.Source)
		}
		if ag.Version != "" {
			about = append(about, "kidscope "+ag.Version)
		}
		if ag.Runs > 1 {
			about = append(about, fmt.Sprintf("%d runs", ag.Runs))
		}
		if ag.Stopped {
			about = append(about, "stopped")
		}
		if ag.Reported < ag.Runs {
			about = append(about, "no report")
		}
		msg := "agent"
		if len(about) > 0 {
			msg += " (" + strings.Join(about, ", ") + ")"
		}
		msg += fmt.Sprintf(": %s read; it last said it had published %s and dropped %s",
			plural(ag.Records, "record", "records"), commas(ag.Published), commas(ag.Dropped))
		rows = append(rows, row(ag.Name, optStr(timeText(ag.LastSeen)), strings.Join(brokerTexts(ag), " "), msg))
	}
	if c := a.Fleet; c != nil {
		rows = append(rows, row("", "", "", "fleet: "+fleetText(c)))
	}
	return rows
}

// brokerTexts are the agent's broker endpoints as text, all of them.
func brokerTexts(ag *result.Agent) []string {
	out := make([]string, len(ag.Brokers))
	for i, b := range ag.Brokers {
		out[i] = b.String()
	}
	return out
}

// agentBrokers are the broker lines of an agent's row in a table: the
// first agentBrokersShown, and how many more.
func agentBrokers(ag *result.Agent) []string {
	out := brokerTexts(ag)
	if len(out) > agentBrokersShown {
		out = append(out[:agentBrokersShown], fmt.Sprintf("+%d more", len(ag.Brokers)-agentBrokersShown))
	}
	if len(out) == 0 {
		out = []string{"-"}
	}
	return out
}

type agentJSON struct {
	Name      string   `json:"name"`
	Source    string   `json:"source"`
	Version   string   `json:"version"`
	Runs      int      `json:"runs"`
	Brokers   []string `json:"brokers"`
	Records   int64    `json:"records"`
	Published int64    `json:"published"`
	Dropped   int64    `json:"dropped"`
	LastSeen  *string  `json:"last_seen"`
	Stopped   bool     `json:"stopped"`
	Reported  int      `json:"reported_runs"`
}

type fleetJSON struct {
	Records    int64 `json:"records"`
	Unreadable int64 `json:"unreadable"`
	Future     int64 `json:"future"`
	Late       int64 `json:"late"`
	Duplicates int64 `json:"duplicates"`
	// The summary's totals, connections, instances, brokers and matrix
	// are those of the reported runs' reports.
	Runs              int64 `json:"runs"`
	Reported          int64 `json:"reported_runs"`
	ReportRowsMissing int64 `json:"report_rows_missing"`
	ReportRowsDropped int64 `json:"report_rows_dropped"`
}

func newAgentsJSON(a *Analysis) ([]agentJSON, *fleetJSON) {
	if a.Agents == nil && a.Fleet == nil {
		return nil, nil
	}
	out := []agentJSON{}
	for _, ag := range a.Agents {
		out = append(out, agentJSON{Name: ag.Name, Source: ag.Source, Version: ag.Version, Runs: ag.Runs, Brokers: brokerTexts(&ag),
			Records: ag.Records, Published: ag.Published, Dropped: ag.Dropped, LastSeen: timeText(ag.LastSeen), Stopped: ag.Stopped,
			Reported: ag.Reported})
	}
	var f *fleetJSON
	if c := a.Fleet; c != nil {
		f = &fleetJSON{Records: c.Records, Unreadable: c.Unreadable, Future: c.Future, Late: c.Late, Duplicates: c.Duplicates,
			Runs: c.Runs, Reported: c.Reported, ReportRowsMissing: c.ReportRowsMissing, ReportRowsDropped: c.ReportRowsDropped}
	}
	return out, f
}
