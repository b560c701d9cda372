package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kidscope/kidscope/internal/size"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/report/internal/textdoc"
	"github.com/kidscope/kidscope/rules"
)

// The table and markdown formats render the same document: a list of
// blocks (headings, paragraphs, key/value lists, tables) built once from
// the analysis, then written for a terminal or as GitHub-flavoured
// Markdown.

// termWidth is the terminal width the table format is laid out for: tables
// fit it when the values are short, and grow wider (still correct) when
// they are not.
const termWidth = 80

// docStyle is what differs between the terminal and the Markdown document.
type docStyle struct {
	md     bool
	form   UUIDForm
	abbrev abbreviations
	files  []string
	multi  bool // several inputs: frames are written INPUT:FRAME
	// dateInClock: the times do not all fall on one day.
	dateInClock bool
}

// frame names a frame in a table: "17", or "2:17" with several inputs.
func (st *docStyle) frame(file int, frame int64) string {
	if st.multi {
		return strconv.Itoa(file+1) + ":" + strconv.FormatInt(frame, 10)
	}
	return strconv.FormatInt(frame, 10)
}

func (st *docStyle) clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if st.dateInClock {
		return t.UTC().Format("01-02 15:04:05.000")
	}
	return t.UTC().Format("15:04:05.000")
}

// uuid is an ID as tables show it: the reserved ones by name, as the
// findings' values name them; the others whole in Markdown, else cut to
// the prefix unique within the report.
func (st *docStyle) uuid(u kafka.UUID) string {
	switch {
	case u.IsZero():
		return "ZERO"
	case u.IsOne():
		return "ONE"
	}
	s := st.form.format(u)
	if st.md {
		return s
	}
	return st.abbrev.short(s)
}

func (st *docStyle) clientID(s string) string {
	s = shown(s)
	if st.md {
		return s
	}
	return textdoc.Shorten(s, 14)
}

// wrap breaks text for a terminal cell; Markdown cells are not broken.
func (st *docStyle) wrap(s string, width int) []string {
	if st.md {
		return []string{s}
	}
	return textdoc.Wrap(s, width)
}

// labelled is "label     value" with the value wrapped under itself in a
// terminal (or, when a word of it would not fit there, under the label),
// "label: value" in Markdown.
func (st *docStyle) labelled(label, value string, width int) []string {
	if st.md {
		return []string{label + ": " + value}
	}
	const indent = 9
	for _, w := range strings.Fields(value) {
		if len([]rune(w)) > width-indent {
			out := []string{label}
			for _, l := range textdoc.Wrap(value, width-2) {
				out = append(out, "  "+l)
			}
			return out
		}
	}
	lines := textdoc.Wrap(value, width-indent)
	out := make([]string, len(lines))
	for i, l := range lines {
		if i == 0 {
			out[i] = label + strings.Repeat(" ", max(1, indent-len(label))) + l
		} else {
			out[i] = strings.Repeat(" ", indent) + l
		}
	}
	return out
}

func (st *docStyle) title(s string) string {
	if st.md {
		return s
	}
	return strings.ToUpper(s)
}

func newDocStyle(a *Analysis, opt AnalysisOptions, md bool) *docStyle {
	st := &docStyle{md: md, form: opt.UUID, files: a.Files, multi: len(a.Files) > 1}
	if !md {
		st.abbrev = newAbbreviations(a, opt.UUID)
	}
	first, last := spanOf(a)
	if !first.IsZero() && !last.IsZero() {
		y1, m1, d1 := first.UTC().Date()
		y2, m2, d2 := last.UTC().Date()
		st.dateInClock = y1 != y2 || m1 != m2 || d1 != d2
	}
	return st
}

// spanOf is the time span of the capture: its first and last packet, or
// the traffic the engine saw.
func spanOf(a *Analysis) (time.Time, time.Time) {
	if !a.Summary.First.IsZero() {
		return a.Summary.First, a.Summary.Last
	}
	return a.Result.Start, a.Result.End
}

// plural writes a count with the singular or plural words.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return commas(n) + " " + many
}

// severityLine is "3 errors, 2 warnings, 5 info" with coloured words.
func severityLine(c severityCounts) textdoc.Line {
	return textdoc.Line{
		sevSpan(plural(int64(c.Error), "error", "errors"), rules.Error, c.Error > 0),
		{Text: ", "},
		sevSpan(plural(int64(c.Warning), "warning", "warnings"), rules.Warning, c.Warning > 0),
		{Text: ", "},
		sevSpan(strconv.Itoa(c.Info)+" info", rules.Info, c.Info > 0),
	}
}

// buildDoc lays out the analysis in docs/design/cli.md's order: summary, findings,
// connections, instances, brokers, the old/new matrix.
func buildDoc(a *Analysis, opt AnalysisOptions, st *docStyle) []textdoc.Block {
	var doc []textdoc.Block
	doc = append(doc, summaryBlocks(a, st)...)
	doc = append(doc, agentBlocks(a, st)...)
	doc = append(doc, findingBlocks(a, opt, st)...)
	if !tablesKnown(a) {
		return append(doc, unreportedBlocks(st)...)
	}
	doc = append(doc, connectionBlocks(a, st)...)
	doc = append(doc, instanceBlocks(a, st)...)
	doc = append(doc, brokerBlocks(a, st)...)
	doc = append(doc, matrixBlocks(a, st)...)
	return doc
}

func summaryBlocks(a *Analysis, st *docStyle) []textdoc.Block {
	s := &a.Summary
	var kv []textdoc.Pair
	add := func(key string, values ...textdoc.Line) { kv = append(kv, textdoc.Pair{Key: key, Values: values}) }

	var inputs []textdoc.Line
	for i, f := range a.Files {
		if st.multi {
			inputs = append(inputs, textdoc.Plain(fmt.Sprintf("%d  %s", i+1, f)))
		} else {
			inputs = append(inputs, textdoc.Plain(f))
		}
	}
	if len(inputs) == 0 {
		inputs = append(inputs, textdoc.Plain("-"))
	}
	if st.multi {
		inputs = append(inputs, textdoc.Plain("(frames are written INPUT:FRAME, e.g. 2:17)"))
	}
	add("inputs", inputs...)
	if len(s.Comments) > 0 {
		var cs []textdoc.Line
		for _, c := range s.Comments {
			cs = append(cs, textdoc.Plain(shown(fileName(a.Files, c.File)+": "+c.Text)))
		}
		add("comments", cs...)
	}

	if line, ok := reportsLine(a); ok {
		add("reports", textdoc.Plain(line))
	}
	if !tablesKnown(a) {
		add("findings", severityLine(severityTotals(&a.Result)))
		return []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title("Summary"))}, {Kind: textdoc.KV, Pairs: kv}}
	}
	first, last := spanOf(a)
	switch {
	case first.IsZero():
		add("time span", textdoc.Plain("no packets"))
	default:
		f, l := first.UTC(), last.UTC()
		end := l.Format("2006-01-02 15:04:05.000")
		if !st.dateInClock {
			end = l.Format("15:04:05.000")
		}
		add("time span", textdoc.Plain(fmt.Sprintf("%s → %s UTC (%s)", f.Format("2006-01-02 15:04:05.000"), end,
			l.Sub(f).Round(time.Millisecond))))
	}
	packets := commas(s.Capture.Packets)
	if s.OutsideTime > 0 {
		packets += " (" + commas(s.OutsideTime) + " outside --from/--to, dropped before reassembly)"
	}
	add("packets", textdoc.Plain(packets))
	add("bytes", textdoc.Plain(fmt.Sprintf("%s (%s)", commas(s.Capture.Bytes), size.Human(s.Capture.Bytes))))
	conns := commas(s.Connections)
	if n := s.Reassembly.ConnectionsDropped; n > 0 {
		conns += fmt.Sprintf(" analysed; %s over --max-connections were not analysed", plural(n, "more", "more"))
	}
	add("connections", textdoc.Plain(conns))
	kafka := plural(s.Requests, "request", "requests")
	if s.NoResponse > 0 {
		kafka += " (" + strconv.FormatInt(s.NoResponse, 10) + " with acks = 0, which no broker answers)"
	}
	add("Kafka", textdoc.Plain(kafka+", "+plural(s.Responses, "response", "responses")))

	problems := []string{
		plural(s.Gaps, "gap", "gaps"), plural(s.Resyncs, "resync", "resyncs"),
		strconv.FormatInt(s.Malformed, 10) + " malformed",
		strconv.FormatInt(s.NotKafka, 10) + " not Kafka", strconv.FormatInt(s.Unanswered, 10) + " unanswered",
	}
	extra := func(n int64, one, many string) {
		if n > 0 {
			problems = append(problems, plural(n, one, many))
		}
	}
	extra(s.Unmatched, "unmatched response", "unmatched responses")
	extra(s.UnknownAPI, "unknown API key", "unknown API keys")
	extra(s.Truncated, "stream ending inside a message", "streams ending inside a message")
	extra(s.Capture.Cut, "packet cut by the snap length", "packets cut by the snap length")
	extra(s.Capture.Malformed, "malformed packet", "malformed packets")
	extra(s.BodiesSkippedBudget, "body not decoded: over --max-body-buffer", "bodies not decoded: over --max-body-buffer")
	extra(s.BodiesSkippedTooLarge, "body not decoded: too large", "bodies not decoded: too large")
	extra(s.Capture.OversizedFrames, "frame over the packet limit, skipped", "frames over the packet limit, skipped")
	extra(s.Capture.ExtraInterfaces, "pcapng interface over the limit, not kept", "pcapng interfaces over the limit, not kept")
	extra(s.Capture.ExtraInterfaceFrames, "frame on an interface not kept, skipped", "frames on interfaces not kept, skipped")
	extra(s.Reassembly.Reused, "connection ended by a new one on its 4-tuple", "connections ended by a new one on their 4-tuple")
	add("decode problems", textdoc.Plain(strings.Join(problems, ", ")))

	var inp []textdoc.Line
	for _, p := range s.Problems {
		inp = append(inp, textdoc.Plain(p.Error()))
	}
	if len(inp) == 0 {
		inp = append(inp, textdoc.Plain("none"))
	}
	add("input problems", inp...)
	if s.Interrupted {
		add("interrupted", textdoc.Plain("yes: the report covers what was read before the interruption"))
	}
	if a.Scope != nil {
		add("scope", textdoc.Plain(SafeText(a.Scope.Line())))
	}
	add("findings", severityLine(severityTotals(&a.Result)))
	return []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title("Summary"))}, {Kind: textdoc.KV, Pairs: kv}}
}

// findingGroup is one table row: the findings of one rule on one
// connection.
type findingGroup struct {
	first *rules.Finding
	n     int // listed
	// total counts the group's findings made, listed or not (the answers
	// are of the listed ones).
	total   int
	differ  bool // some have other expected or seen values than the first
	answers []string
	counts  map[string]int
}

type groupKey struct {
	rule string
	conn int
	key  kafka.Endpoints
}

// groupFindings groups the findings of one severity by rule and
// connection, in the order of their first finding.
func groupFindings(res *rules.Result, sev rules.Severity) []*findingGroup {
	fs := res.Findings
	var out []*findingGroup
	byKey := map[groupKey]*findingGroup{}
	for i := range fs {
		f := &fs[i]
		if f.Severity != sev {
			continue
		}
		k := groupKey{f.Rule, f.ConnID, f.Conn}
		g := byKey[k]
		if g == nil {
			g = &findingGroup{first: f, counts: map[string]int{}}
			byKey[k] = g
			out = append(out, g)
		}
		g.n++
		if valueText(f.Expected, kafkaUUID) != valueText(g.first.Expected, kafkaUUID) ||
			valueText(f.Seen, kafkaUUID) != valueText(g.first.Seen, kafkaUUID) {
			g.differ = true
		}
		if f.HasAPI {
			a := answerText(f)
			if g.counts[a] == 0 {
				g.answers = append(g.answers, a)
			}
			g.counts[a]++
		}
	}
	for _, g := range out {
		g.total = groupTotal(res, g.first.Rule, g.first.ConnID, g.n)
	}
	return out
}

var severityTitles = map[rules.Severity]string{rules.Error: "Errors", rules.Warning: "Warnings", rules.Info: "Info"}

func findingBlocks(a *Analysis, opt AnalysisOptions, st *docStyle) []textdoc.Block {
	res := &a.Result
	fs := res.Findings
	counts := severityTotals(res)
	blocks := []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title("Findings"))}}
	if counts.total() == 0 {
		return append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain("No findings.")})
	}
	blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: append(severityLine(counts),
		textdoc.Span{Text: "; a row per rule and connection: first frame, ×N"})})
	sevs := []rules.Severity{rules.Error, rules.Warning, rules.Info}
	groups := make([][]*findingGroup, len(sevs))
	var shown []*findingGroup
	inRows := 0 // findings the rows count, listed or not
	for i, sev := range sevs {
		groups[i] = groupFindings(res, sev)
		if sev != rules.Info || opt.Verbose {
			shown = append(shown, groups[i]...)
		}
		for _, g := range groups[i] {
			inRows += g.total
		}
	}
	if unlisted := counts.total() - len(fs); unlisted > 0 {
		text := fmt.Sprintf("%s not listed: the report keeps the first %s made (JSON: summary.dropped_findings). The counts here are of every finding",
			plural(int64(unlisted), "finding", "findings"), commas(int64(len(fs))))
		if noRow := counts.total() - inRows; noRow > 0 {
			text += fmt.Sprintf("; %s of rules and connections with no row", plural(int64(noRow), "is", "are"))
		}
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain(text + ".")})
	}
	lay := newFindingLayout(shown, st)
	for i, sev := range sevs {
		gs := groups[i]
		n := 0
		for _, g := range gs {
			n += g.total
		}
		if len(gs) == 0 {
			if total := counts.of(sev); total > 0 {
				blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Line{
					sevSpan(fmt.Sprintf("%s: %s, none listed.", severityTitles[sev], plural(int64(total), "finding", "findings")), sev, true),
				}})
			}
			continue
		}
		if total := counts.of(sev); total > n {
			n = total
		}
		if sev == rules.Info && !opt.Verbose {
			blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Line{
				sevSpan(plural(int64(n), "info finding", "info findings"), rules.Info, true),
				{Text: fmt.Sprintf(" (%s) hidden; -v shows them.", plural(int64(len(gs)), "row", "rows"))},
			}})
			continue
		}
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Heading2, Text: textdoc.Line{
			sevSpan(severityTitles[sev], sev, true),
			{Text: fmt.Sprintf(": %s in %s", plural(int64(n), "finding", "findings"), plural(int64(len(gs)), "row", "rows"))},
		}})
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Table, Grid: lay.grid(gs)})
	}
	return blocks
}

// findingLayout gives every findings table the same columns: rule and
// connection, frames, and the detail in the width left of termWidth.
type findingLayout struct {
	st         *docStyle
	w1, w2, w3 int
}

func (st *docStyle) findingCells(g *findingGroup) (c1, c2 []string) {
	f := g.first
	c1 = []string{f.Rule, f.Conn.Client.String(), "→ " + f.Conn.Broker.String()}
	c2 = []string{st.frame(f.At.File, f.At.Frame)}
	if g.total > 1 {
		c2 = append(c2, "×"+commas(int64(g.total)))
	}
	if len(f.Related) > 0 {
		rel := make([]string, len(f.Related))
		for i, r := range f.Related {
			rel[i] = st.frame(r.Frame.File, r.Frame.Frame)
		}
		c2 = append(c2, st.wrap("related "+strings.Join(rel, ", "), 8)...)
	}
	return c1, c2
}

func newFindingLayout(groups []*findingGroup, st *docStyle) *findingLayout {
	l := &findingLayout{st: st, w1: 10, w2: 5} // the headers
	for _, g := range groups {
		c1, c2 := st.findingCells(g)
		l.w1, l.w2 = max(l.w1, maxLen(c1)), max(l.w2, maxLen(c2))
	}
	l.w3 = max(26, termWidth-10-l.w1-l.w2)
	return l
}

func (l *findingLayout) grid(groups []*findingGroup) *textdoc.Grid {
	st, width := l.st, l.w3
	g := &textdoc.Grid{Header: []string{textdoc.PadRight("RULE", l.w1) + "\nCONNECTION", textdoc.PadRight("FRAME", l.w2), textdoc.PadRight("DETAIL", width)}}
	if st.md {
		g.Header = []string{"Rule / connection", "Frame", "Detail"}
	}
	for _, gr := range groups {
		f := gr.first
		c1, c2 := st.findingCells(gr)
		var c3 []string
		if !f.HasAPI {
			// stream-* and other findings about no one request: their
			// message says it all.
			c3 = st.wrap(findingMessage(f), width)
			g.Rows = append(g.Rows, [][]string{c1, c2, c3})
			continue
		}
		c3 = append(c3, st.wrap(apiText(f), width)...)
		if expected, seen := valueText(f.Expected, st.uuid), valueText(f.Seen, st.uuid); expected != "" || seen != "" {
			c3 = append(c3, st.labelled("expected", orDash(expected), width)...)
			c3 = append(c3, st.labelled("seen", orDash(seen), width)...)
			if gr.differ {
				c3 = append(c3, st.wrap("(values of the first; the others differ: -o json lists each)", width)...)
			}
		}
		label, ans := "answer", gr.answers[0]
		if len(gr.answers) > 1 {
			label = "answers"
			parts := make([]string, len(gr.answers))
			for j, a := range gr.answers {
				parts[j] = a + " ×" + strconv.Itoa(gr.counts[a])
			}
			ans = strings.Join(parts, ", ")
		}
		c3 = append(c3, st.labelled(label, ans, width)...)
		if gr.total > gr.n {
			c3 = append(c3, st.wrap(fmt.Sprintf("(the answers of the %s listed; %s more not listed)", commas(int64(gr.n)), commas(int64(gr.total-gr.n))), width)...)
		}
		if len(f.Also) > 0 {
			c3 = append(c3, st.labelled("also", strings.Join(f.Also, ", "), width)...)
		}
		if f.AfterGap {
			c3 = append(c3, st.wrap("bytes of this connection were lost before it", width)...)
		}
		g.Rows = append(g.Rows, [][]string{c1, c2, c3})
	}
	return g
}

// padRight pads s with spaces to width: a header padded so sets the
// column's width in a terminal table.
func maxLen(lines []string) int {
	n := 0
	for _, l := range lines {
		n = max(n, len([]rune(l)))
	}
	return n
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func connectionBlocks(a *Analysis, st *docStyle) []textdoc.Block {
	cs := a.Result.Connections
	dropped := a.Result.Dropped.Connections
	title := fmt.Sprintf("Connections (%s)", commas(int64(len(cs))))
	if dropped > 0 {
		title = fmt.Sprintf("Connections (%s of %s)", commas(int64(len(cs))), commas(int64(len(cs))+dropped))
	}
	blocks := []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title(title))}}
	if dropped > 0 {
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain(fmt.Sprintf(
			"%s not listed: the table keeps the %s most recently closed (JSON: summary.dropped_connections); the findings, brokers and matrix count every connection.",
			plural(dropped, "connection", "connections"), commas(int64(len(cs)))))})
	}
	if len(cs) == 0 {
		return append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain("No connections.")})
	}
	g := &textdoc.Grid{Header: []string{"#", "CLIENT\n→ BROKER", "CLIENT ID\nINSTANCE ID", "REQ/RESP", "GAPS", "PROFILE\nKIND"}}
	if st.md {
		g.Header = []string{"#", "Client → broker (tcp.stream)", "Client ID / instance ID", "Requests / responses", "Gaps", "Profile / kind"}
	}
	for i := range cs {
		c := &cs[i]
		cid := "(none)"
		if c.HasClient {
			cid = st.clientID(c.ClientID)
			if c.ClientID == "" {
				cid = `""`
			}
		}
		inst := "-"
		if c.HasInstanceID {
			inst = st.uuid(c.InstanceID)
		}
		kind := []string{dash(c.Profile.String())}
		if c.NotKafka != "" {
			kind = append(kind, st.wrap("not Kafka: "+c.NotKafka, 16)...)
		} else if c.Requests > 0 {
			if c.NewClient {
				kind = append(kind, "new client")
			} else {
				kind = append(kind, "old client")
			}
		}
		if c.MidStream {
			kind = append(kind, "mid-stream")
		}
		if c.TLS != "" {
			kind = append(kind, st.wrap(c.TLS, 16)...)
		}
		ends := []string{c.Key.Client.String(), "→ " + c.Key.Broker.String()}
		if c.HasTCPStream {
			// Wireshark's number: tcp.stream eq N shows the connection.
			ends = append(ends, "tcp.stream "+strconv.Itoa(c.TCPStream))
		}
		g.Rows = append(g.Rows, [][]string{
			{strconv.Itoa(c.ID)},
			ends,
			{cid, inst},
			{commas(c.Requests) + "/" + commas(c.Responses)},
			{strconv.Itoa(c.Gaps)},
			kind,
		})
	}
	return append(blocks, textdoc.Block{Kind: textdoc.Table, Grid: g},
		textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain("tcp.stream: Wireshark's number of the connection (filter tcp.stream eq N); new client: sends client instance IDs in request headers (KIP-1313); old client: does not; mid-stream: the capture missed the connection's start.")})
}

func instanceBlocks(a *Analysis, st *docStyle) []textdoc.Block {
	ins := a.Result.Instances
	dropped := a.Result.Dropped.Instances
	title := fmt.Sprintf("Client instances (%s)", commas(int64(len(ins))))
	if dropped > 0 {
		title = fmt.Sprintf("Client instances (%s; %s dropped)", commas(int64(len(ins))), commas(dropped))
	}
	blocks := []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title(title))}}
	if dropped > 0 {
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain(fmt.Sprintf(
			"%s not listed: the inventory keeps the %s most recently seen and drops the least recently seen (JSON: summary.dropped_instances; an instance seen again after it was dropped counts again).",
			plural(dropped, "client instance", "client instances"), commas(int64(len(ins)))))})
	}
	if len(ins) == 0 && dropped == 0 {
		return append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain("No client instance IDs in request headers.")})
	}
	listed := instancesToShow(&a.Result)
	if len(listed) < len(ins) {
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain(fmt.Sprintf(
			"The %s that matter most are listed: those with findings first (worst first), then those with the most connections; %s more are kept (-o json lists every one).",
			commas(int64(len(listed))), commas(int64(len(ins)-len(listed)))))})
	}
	ins = listed
	g := &textdoc.Grid{Header: []string{"INSTANCE", "CLIENT IDS", "ADDRESSES", "BROKERS", "CONNS", "SEEN"}}
	if st.md {
		g.Header = []string{"Instance ID", "Client IDs", "Client addresses", "Brokers", "Connections", "First / last seen"}
	}
	for i := range ins {
		in := &ins[i]
		id := []string{st.uuid(in.ID)}
		if len(in.TelemetryIDs) > 0 {
			id = append(id, "telemetry")
			for _, t := range in.TelemetryIDs {
				id = append(id, st.uuid(t))
			}
		}
		var cids, addrs, brokers, conns []string
		for _, c := range in.ClientIDs {
			c = shown(c)
			if !st.md {
				c = textdoc.Shorten(c, 12)
			}
			cids = append(cids, c)
		}
		for _, ad := range in.Addresses {
			addrs = append(addrs, ad.String())
		}
		for _, b := range in.Brokers {
			brokers = append(brokers, b.String())
		}
		for _, c := range in.Connections {
			conns = append(conns, strconv.Itoa(c))
		}
		connsCell := st.wrap(strings.Join(conns, ", "), 6)
		if n := in.ConnectionCount; n > int64(len(in.Connections)) {
			connsCell = append(connsCell, st.wrap(fmt.Sprintf("(first %d of %s)", len(in.Connections), commas(n)), 6)...)
		}
		cids, addrs, brokers = listedFirst(cids, st), listedFirst(addrs, st), listedFirst(brokers, st)
		seen := []string{"from " + st.frame(in.First.File, in.First.Frame), st.clock(in.First.Time),
			"to " + st.frame(in.Last.File, in.Last.Frame), st.clock(in.Last.Time)}
		if st.md {
			seen = []string{st.frame(in.First.File, in.First.Frame) + " " + st.clock(in.First.Time),
				st.frame(in.Last.File, in.Last.Frame) + " " + st.clock(in.Last.Time)}
		}
		g.Rows = append(g.Rows, [][]string{id, orNone(cids), orNone(addrs), orNone(brokers), connsCell, seen})
	}
	return append(blocks, textdoc.Block{Kind: textdoc.Table, Grid: g})
}

// listedFirst notes under a list of an instance that stopped at
// rules.MaxPerInstance that more values may have been left out.
func listedFirst(list []string, st *docStyle) []string {
	if len(list) < rules.MaxPerInstance {
		return list
	}
	return append(list, st.wrap(fmt.Sprintf("(the first %d; more not kept)", rules.MaxPerInstance), 12)...)
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"-"}
	}
	return s
}

func brokerBlocks(a *Analysis, st *docStyle) []textdoc.Block {
	bs := a.Result.Brokers
	blocks := []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title(fmt.Sprintf("Brokers (%s)", commas(int64(len(bs))))))}}
	if n := a.Result.Dropped.BrokerConnections; n > 0 {
		blocks = append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain(fmt.Sprintf(
			"%s to broker endpoints past the first %s not listed (JSON: summary.dropped_broker_connections); the matrix counts them as unknown.",
			plural(n, "connection", "connections"), commas(int64(len(bs)))))})
	}
	if len(bs) == 0 {
		return append(blocks, textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain("No brokers.")})
	}
	g := &textdoc.Grid{Header: []string{"BROKER", "KIP-1313", "CONNS", "EVIDENCE FRAMES"}}
	if st.md {
		g.Header = []string{"Broker", "KIP-1313", "Connections", "Evidence frames"}
	}
	for i := range bs {
		b := &bs[i]
		var enf, ign []string
		for _, e := range brokerEvidence(b) {
			if e.verdict == rules.VerdictEnforces {
				enf = append(enf, st.frame(e.at.File, e.at.Frame))
			} else {
				ign = append(ign, st.frame(e.at.File, e.at.Frame))
			}
		}
		var ev []string
		if len(enf) > 0 {
			ev = append(ev, st.labelled("enforces", evidenceText(enf, b.Enforced), 36)...)
		}
		if len(ign) > 0 {
			ev = append(ev, st.labelled("ignores", evidenceText(ign, b.Ignored), 36)...)
		}
		conns := []string{commas(int64(b.Connections))}
		if b.TLSNoKey > 0 {
			conns = append(conns, commas(int64(b.TLSNoKey))+" TLS (no key)")
		}
		g.Rows = append(g.Rows, [][]string{{b.Endpoint.String()}, {b.Verdict.String()}, conns, orNone(ev)})
	}
	return append(blocks, textdoc.Block{Kind: textdoc.Table, Grid: g},
		textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain("enforces: answered INVALID_REQUEST to a request that breaks KIP-1313, or closed the connection on it; ignores: answered it with error code 0 (a pre-KIP-1313 broker); mixed: both; unknown: no such request was answered.")})
}

// shownEvidence is how many evidence frames of a verdict a broker's row
// shows; -o json lists every frame kept.
const shownEvidence = 8

// evidenceText lists the first frames of a verdict's evidence, saying how
// many the broker kept and how many there were (total).
func evidenceText(frames []string, total int64) string {
	kept := int64(len(frames))
	total = max(total, kept)
	s := strings.Join(frames[:min(len(frames), shownEvidence)], ", ")
	switch {
	case kept < total:
		s += fmt.Sprintf(" … (evidence frames: first %s of %s kept, -o json lists them)", commas(kept), commas(total))
	case kept > shownEvidence:
		s += fmt.Sprintf(" … (%s evidence frames, -o json lists them)", commas(kept))
	}
	return s
}

func matrixBlocks(a *Analysis, st *docStyle) []textdoc.Block {
	m := &a.Result.Matrix
	blocks := []textdoc.Block{{Kind: textdoc.Heading1, Text: textdoc.Plain(st.title("Old/new client × old/new broker (connections)"))}}
	g := &textdoc.Grid{Header: []string{"", "OLD BROKER\n(IGNORES)", "NEW BROKER\n(ENFORCES)", "UNKNOWN"}}
	if st.md {
		g.Header = []string{"", "Old broker (ignores)", "New broker (enforces)", "Unknown"}
	}
	for i, name := range []string{"old client", "new client"} {
		r := m.Cells[i]
		g.Rows = append(g.Rows, [][]string{{name}, {commas(int64(r[0]))}, {commas(int64(r[1]))}, {commas(int64(r[2]))}})
	}
	return append(blocks, textdoc.Block{Kind: textdoc.Table, Grid: g},
		textdoc.Block{Kind: textdoc.Para, Text: textdoc.Plain("Every Kafka connection that sent a request, listed in the connections table or not; unknown counts brokers whose verdict is unknown or mixed.")})
}

// paintSeverity colours the severity words of a terminal table: a span's
// style is its severity's name.
func paintSeverity(color bool) textdoc.Painter {
	if !color {
		return nil
	}
	return func(text, style string) string {
		switch style {
		case rules.Error.String():
			return paint(text, rules.Error, true)
		case rules.Warning.String():
			return paint(text, rules.Warning, true)
		}
		return paint(text, rules.Info, true)
	}
}

// sevSpan is text styled by severity sev when on.
func sevSpan(text string, sev rules.Severity, on bool) textdoc.Span {
	if !on {
		return textdoc.Span{Text: text}
	}
	return textdoc.Span{Text: text, Style: sev.String()}
}

func writeAnalysisTable(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	st := newDocStyle(a, opt, false)
	return textdoc.WriteTerminal(w, buildDoc(a, opt, st), paintSeverity(opt.Color))
}

func writeAnalysisMarkdown(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	st := newDocStyle(a, opt, true)
	return textdoc.WriteMarkdown(w, "kidscope analyze", buildDoc(a, opt, st))
}
