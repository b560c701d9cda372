package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/kidscope/kidscope/kafka"
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

// span is a piece of text; sev colours it in a terminal when colored.
type span struct {
	text    string
	sev     rules.Severity
	colored bool
}

type line []span

func plain(s string) line { return line{{text: s}} }

func (l line) String() string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s.text)
	}
	return b.String()
}

type kvPair struct {
	key    string
	values []line
}

type grid struct {
	header []string
	rows   [][][]string // row, cell, lines
}

type blockKind int

const (
	blockHeading1 blockKind = iota
	blockHeading2
	blockPara
	blockKV
	blockGrid
)

type block struct {
	kind blockKind
	text line
	kv   []kvPair
	grid *grid
}

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
	return shorten(s, 14)
}

// wrap breaks text for a terminal cell; Markdown cells are not broken.
func (st *docStyle) wrap(s string, width int) []string {
	if st.md {
		return []string{s}
	}
	return wrap(s, width)
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
			for _, l := range wrap(value, width-2) {
				out = append(out, "  "+l)
			}
			return out
		}
	}
	lines := wrap(value, width-indent)
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

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// severityLine is "3 errors, 2 warnings, 5 info" with coloured words.
func severityLine(c severityCounts) line {
	return line{
		{text: plural(int64(c.Error), "error", "errors"), sev: rules.Error, colored: c.Error > 0},
		{text: ", "},
		{text: plural(int64(c.Warning), "warning", "warnings"), sev: rules.Warning, colored: c.Warning > 0},
		{text: ", "},
		{text: strconv.Itoa(c.Info) + " info", sev: rules.Info, colored: c.Info > 0},
	}
}

// buildDoc lays out the analysis in docs/design/cli.md's order: summary, findings,
// connections, instances, brokers, the old/new matrix.
func buildDoc(a *Analysis, opt AnalysisOptions, st *docStyle) []block {
	var doc []block
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

func summaryBlocks(a *Analysis, st *docStyle) []block {
	s := &a.Summary
	var kv []kvPair
	add := func(key string, values ...line) { kv = append(kv, kvPair{key, values}) }

	var inputs []line
	for i, f := range a.Files {
		if st.multi {
			inputs = append(inputs, plain(fmt.Sprintf("%d  %s", i+1, f)))
		} else {
			inputs = append(inputs, plain(f))
		}
	}
	if len(inputs) == 0 {
		inputs = append(inputs, plain("-"))
	}
	if st.multi {
		inputs = append(inputs, plain("(frames are written INPUT:FRAME, e.g. 2:17)"))
	}
	add("inputs", inputs...)
	if len(s.Comments) > 0 {
		var cs []line
		for _, c := range s.Comments {
			cs = append(cs, plain(shown(fileName(a.Files, c.File)+": "+c.Text)))
		}
		add("comments", cs...)
	}

	if line, ok := reportsLine(a); ok {
		add("reports", plain(line))
	}
	if !tablesKnown(a) {
		add("findings", severityLine(severityTotals(&a.Result)))
		return []block{{kind: blockHeading1, text: plain(st.title("Summary"))}, {kind: blockKV, kv: kv}}
	}
	first, last := spanOf(a)
	switch {
	case first.IsZero():
		add("time span", plain("no packets"))
	default:
		f, l := first.UTC(), last.UTC()
		end := l.Format("2006-01-02 15:04:05.000")
		if !st.dateInClock {
			end = l.Format("15:04:05.000")
		}
		add("time span", plain(fmt.Sprintf("%s → %s UTC (%s)", f.Format("2006-01-02 15:04:05.000"), end,
			l.Sub(f).Round(time.Millisecond))))
	}
	packets := commas(s.Capture.Packets)
	if s.OutsideTime > 0 {
		packets += " (" + commas(s.OutsideTime) + " outside --from/--to, dropped before reassembly)"
	}
	add("packets", plain(packets))
	add("bytes", plain(fmt.Sprintf("%s (%s)", commas(s.Capture.Bytes), humanBytes(s.Capture.Bytes))))
	conns := commas(s.Connections)
	if n := s.Reassembly.ConnectionsDropped; n > 0 {
		conns += fmt.Sprintf(" analysed; %s over --max-connections were not analysed", plural(n, "more", "more"))
	}
	add("connections", plain(conns))
	kafka := plural(s.Requests, "request", "requests")
	if s.NoResponse > 0 {
		kafka += " (" + strconv.FormatInt(s.NoResponse, 10) + " with acks = 0, which no broker answers)"
	}
	add("Kafka", plain(kafka+", "+plural(s.Responses, "response", "responses")))

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
	add("decode problems", plain(strings.Join(problems, ", ")))

	var inp []line
	for _, p := range s.Problems {
		inp = append(inp, plain(p.Error()))
	}
	if len(inp) == 0 {
		inp = append(inp, plain("none"))
	}
	add("input problems", inp...)
	if s.Interrupted {
		add("interrupted", plain("yes: the report covers what was read before the interruption"))
	}
	if a.Scope != nil {
		add("scope", plain(SafeText(a.Scope.Line())))
	}
	add("findings", severityLine(severityTotals(&a.Result)))
	return []block{{kind: blockHeading1, text: plain(st.title("Summary"))}, {kind: blockKV, kv: kv}}
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

func findingBlocks(a *Analysis, opt AnalysisOptions, st *docStyle) []block {
	res := &a.Result
	fs := res.Findings
	counts := severityTotals(res)
	blocks := []block{{kind: blockHeading1, text: plain(st.title("Findings"))}}
	if counts.total() == 0 {
		return append(blocks, block{kind: blockPara, text: plain("No findings.")})
	}
	blocks = append(blocks, block{kind: blockPara, text: append(severityLine(counts),
		span{text: "; a row per rule and connection: first frame, ×N"})})
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
		blocks = append(blocks, block{kind: blockPara, text: plain(text + ".")})
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
				blocks = append(blocks, block{kind: blockPara, text: line{
					{text: fmt.Sprintf("%s: %s, none listed.", severityTitles[sev], plural(int64(total), "finding", "findings")), sev: sev, colored: true},
				}})
			}
			continue
		}
		if total := counts.of(sev); total > n {
			n = total
		}
		if sev == rules.Info && !opt.Verbose {
			blocks = append(blocks, block{kind: blockPara, text: line{
				{text: plural(int64(n), "info finding", "info findings"), sev: rules.Info, colored: true},
				{text: fmt.Sprintf(" (%s) hidden; -v shows them.", plural(int64(len(gs)), "row", "rows"))},
			}})
			continue
		}
		blocks = append(blocks, block{kind: blockHeading2, text: line{
			{text: severityTitles[sev], sev: sev, colored: true},
			{text: fmt.Sprintf(": %s in %s", plural(int64(n), "finding", "findings"), plural(int64(len(gs)), "row", "rows"))},
		}})
		blocks = append(blocks, block{kind: blockGrid, grid: lay.grid(gs)})
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

func (l *findingLayout) grid(groups []*findingGroup) *grid {
	st, width := l.st, l.w3
	g := &grid{header: []string{padRight("RULE", l.w1) + "\nCONNECTION", padRight("FRAME", l.w2), padRight("DETAIL", width)}}
	if st.md {
		g.header = []string{"Rule / connection", "Frame", "Detail"}
	}
	for _, gr := range groups {
		f := gr.first
		c1, c2 := st.findingCells(gr)
		var c3 []string
		if !f.HasAPI {
			// stream-* and other findings about no one request: their
			// message says it all.
			c3 = st.wrap(findingMessage(f), width)
			g.rows = append(g.rows, [][]string{c1, c2, c3})
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
		g.rows = append(g.rows, [][]string{c1, c2, c3})
	}
	return g
}

// padRight pads s with spaces to width: a header padded so sets the
// column's width in a terminal table.
func padRight(s string, width int) string {
	if n := len([]rune(s)); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

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

func connectionBlocks(a *Analysis, st *docStyle) []block {
	cs := a.Result.Connections
	dropped := a.Result.Dropped.Connections
	title := fmt.Sprintf("Connections (%s)", commas(int64(len(cs))))
	if dropped > 0 {
		title = fmt.Sprintf("Connections (%s of %s)", commas(int64(len(cs))), commas(int64(len(cs))+dropped))
	}
	blocks := []block{{kind: blockHeading1, text: plain(st.title(title))}}
	if dropped > 0 {
		blocks = append(blocks, block{kind: blockPara, text: plain(fmt.Sprintf(
			"%s not listed: the table keeps the %s most recently closed (JSON: summary.dropped_connections); the findings, brokers and matrix count every connection.",
			plural(dropped, "connection", "connections"), commas(int64(len(cs)))))})
	}
	if len(cs) == 0 {
		return append(blocks, block{kind: blockPara, text: plain("No connections.")})
	}
	g := &grid{header: []string{"#", "CLIENT\n→ BROKER", "CLIENT ID\nINSTANCE ID", "REQ/RESP", "GAPS", "PROFILE\nKIND"}}
	if st.md {
		g.header = []string{"#", "Client → broker (tcp.stream)", "Client ID / instance ID", "Requests / responses", "Gaps", "Profile / kind"}
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
		g.rows = append(g.rows, [][]string{
			{strconv.Itoa(c.ID)},
			ends,
			{cid, inst},
			{commas(c.Requests) + "/" + commas(c.Responses)},
			{strconv.Itoa(c.Gaps)},
			kind,
		})
	}
	return append(blocks, block{kind: blockGrid, grid: g},
		block{kind: blockPara, text: plain("tcp.stream: Wireshark's number of the connection (filter tcp.stream eq N); new client: sends client instance IDs in request headers (KIP-1313); old client: does not; mid-stream: the capture missed the connection's start.")})
}

func instanceBlocks(a *Analysis, st *docStyle) []block {
	ins := a.Result.Instances
	dropped := a.Result.Dropped.Instances
	title := fmt.Sprintf("Client instances (%s)", commas(int64(len(ins))))
	if dropped > 0 {
		title = fmt.Sprintf("Client instances (%s; %s dropped)", commas(int64(len(ins))), commas(dropped))
	}
	blocks := []block{{kind: blockHeading1, text: plain(st.title(title))}}
	if dropped > 0 {
		blocks = append(blocks, block{kind: blockPara, text: plain(fmt.Sprintf(
			"%s not listed: the inventory keeps the %s most recently seen and drops the least recently seen (JSON: summary.dropped_instances; an instance seen again after it was dropped counts again).",
			plural(dropped, "client instance", "client instances"), commas(int64(len(ins)))))})
	}
	if len(ins) == 0 && dropped == 0 {
		return append(blocks, block{kind: blockPara, text: plain("No client instance IDs in request headers.")})
	}
	listed := instancesToShow(&a.Result)
	if len(listed) < len(ins) {
		blocks = append(blocks, block{kind: blockPara, text: plain(fmt.Sprintf(
			"The %s that matter most are listed: those with findings first (worst first), then those with the most connections; %s more are kept (-o json lists every one).",
			commas(int64(len(listed))), commas(int64(len(ins)-len(listed)))))})
	}
	ins = listed
	g := &grid{header: []string{"INSTANCE", "CLIENT IDS", "ADDRESSES", "BROKERS", "CONNS", "SEEN"}}
	if st.md {
		g.header = []string{"Instance ID", "Client IDs", "Client addresses", "Brokers", "Connections", "First / last seen"}
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
				c = shorten(c, 12)
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
		g.rows = append(g.rows, [][]string{id, orNone(cids), orNone(addrs), orNone(brokers), connsCell, seen})
	}
	return append(blocks, block{kind: blockGrid, grid: g})
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

func brokerBlocks(a *Analysis, st *docStyle) []block {
	bs := a.Result.Brokers
	blocks := []block{{kind: blockHeading1, text: plain(st.title(fmt.Sprintf("Brokers (%s)", commas(int64(len(bs))))))}}
	if n := a.Result.Dropped.BrokerConnections; n > 0 {
		blocks = append(blocks, block{kind: blockPara, text: plain(fmt.Sprintf(
			"%s to broker endpoints past the first %s not listed (JSON: summary.dropped_broker_connections); the matrix counts them as unknown.",
			plural(n, "connection", "connections"), commas(int64(len(bs)))))})
	}
	if len(bs) == 0 {
		return append(blocks, block{kind: blockPara, text: plain("No brokers.")})
	}
	g := &grid{header: []string{"BROKER", "KIP-1313", "CONNS", "EVIDENCE FRAMES"}}
	if st.md {
		g.header = []string{"Broker", "KIP-1313", "Connections", "Evidence frames"}
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
		g.rows = append(g.rows, [][]string{{b.Endpoint.String()}, {b.Verdict.String()}, conns, orNone(ev)})
	}
	return append(blocks, block{kind: blockGrid, grid: g},
		block{kind: blockPara, text: plain("enforces: answered INVALID_REQUEST to a request that breaks KIP-1313, or closed the connection on it; ignores: answered it with error code 0 (a pre-KIP-1313 broker); mixed: both; unknown: no such request was answered.")})
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

func matrixBlocks(a *Analysis, st *docStyle) []block {
	m := &a.Result.Matrix
	blocks := []block{{kind: blockHeading1, text: plain(st.title("Old/new client × old/new broker (connections)"))}}
	g := &grid{header: []string{"", "OLD BROKER\n(IGNORES)", "NEW BROKER\n(ENFORCES)", "UNKNOWN"}}
	if st.md {
		g.header = []string{"", "Old broker (ignores)", "New broker (enforces)", "Unknown"}
	}
	for i, name := range []string{"old client", "new client"} {
		r := m.Cells[i]
		g.rows = append(g.rows, [][]string{{name}, {commas(int64(r[0]))}, {commas(int64(r[1]))}, {commas(int64(r[2]))}})
	}
	return append(blocks, block{kind: blockGrid, grid: g},
		block{kind: blockPara, text: plain("Every Kafka connection that sent a request, listed in the connections table or not; unknown counts brokers whose verdict is unknown or mixed.")})
}

// Terminal rendering. Every piece of text is written through shown,
// whether or not it holds a capture's strings: none can reach the
// terminal raw, wherever a later change puts it.

func (l line) render(color bool) string {
	var b strings.Builder
	for _, s := range l {
		if s.colored {
			b.WriteString(paint(shown(s.text), s.sev, color))
		} else {
			b.WriteString(shown(s.text))
		}
	}
	return b.String()
}

func writeAnalysisTable(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	st := newDocStyle(a, opt, false)
	bw := bufio.NewWriterSize(w, 64<<10)
	for i, b := range buildDoc(a, opt, st) {
		switch b.kind {
		case blockHeading1:
			if i > 0 {
				bw.WriteString("\n")
			}
			bw.WriteString(b.text.render(opt.Color) + "\n")
		case blockHeading2:
			bw.WriteString("\n" + b.text.render(opt.Color) + "\n")
		case blockPara:
			// Wrap the plain text, then colour the spans again: only
			// whole spans are coloured, and wrapping keeps them whole
			// unless they are longer than a line.
			for _, l := range wrapLine(b.text, termWidth) {
				bw.WriteString(l.render(opt.Color) + "\n")
			}
		case blockKV:
			keyW := 0
			for _, p := range b.kv {
				keyW = max(keyW, len(p.key))
			}
			keyW += 2
			for _, p := range b.kv {
				for j, v := range p.values {
					for k, l := range wrapLine(v, termWidth-2-keyW) {
						key := ""
						if j == 0 && k == 0 {
							key = p.key
						}
						bw.WriteString(strings.TrimRight("  "+key+strings.Repeat(" ", keyW-len(key))+l.render(opt.Color), " ") + "\n")
					}
				}
			}
		case blockGrid:
			if err := renderGrid(bw, b.grid, false); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// wrapLine wraps a line of spans at spaces to width, keeping each piece's
// colour. A line that fits is returned as it is.
func wrapLine(l line, width int) []line {
	if len([]rune(l.String())) <= width {
		return []line{l}
	}
	var words [][]span
	var cur []span
	for _, s := range l {
		for i, p := range strings.Split(s.text, " ") {
			if i > 0 && len(cur) > 0 {
				words = append(words, cur)
				cur = nil
			}
			if p != "" {
				piece := s
				piece.text = p
				cur = append(cur, piece)
			}
		}
	}
	if len(cur) > 0 {
		words = append(words, cur)
	}
	var out []line
	var ln line
	n := 0
	for _, wd := range words {
		wn := 0
		for _, p := range wd {
			wn += len([]rune(p.text))
		}
		if n > 0 && n+1+wn > width {
			out = append(out, ln)
			ln, n = nil, 0
		}
		if n > 0 {
			ln = append(ln, span{text: " "})
			n++
		}
		ln = append(ln, wd...)
		n += wn
	}
	if len(ln) > 0 || len(out) == 0 {
		out = append(out, ln)
	}
	return out
}

// renderGrid writes a table for a terminal (box drawing) or as Markdown,
// every cell's lines through shown (and mdEscape).
func renderGrid(w io.Writer, g *grid, md bool) error {
	multi := false
	rows := make([][]string, len(g.rows))
	for i, r := range g.rows {
		rows[i] = make([]string, len(r))
		for j, c := range r {
			esc := make([]string, len(c))
			for k, l := range c {
				esc[k] = shown(l)
				if md {
					esc[k] = mdEscape(esc[k])
				}
			}
			if md {
				rows[i][j] = strings.Join(esc, "<br>")
			} else {
				rows[i][j] = strings.Join(esc, "\n")
				multi = multi || len(c) > 1
			}
		}
	}
	opts := []tablewriter.Option{
		tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft), tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithEastAsian(tw.Off),
	}
	header := make([]any, len(g.header))
	for i, h := range g.header {
		if md {
			h = mdEscape(h)
		}
		header[i] = h
	}
	if md {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	} else if multi {
		opts = append(opts, tablewriter.WithRendition(tw.Rendition{Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}}}))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(header...)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// Markdown rendering.

// mdEscape makes text literal in GitHub-flavoured Markdown, in a table
// cell as in a paragraph or heading: every character that can start
// emphasis, code, a link, an HTML tag or entity, a table cell or a
// heading is backslash-escaped. Controls are shown's to escape.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '~', '#', '&':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func mdLine(l line) string {
	var b strings.Builder
	for _, s := range l {
		t := mdEscape(shown(s.text))
		if s.colored && s.text != "" {
			t = "**" + t + "**"
		}
		b.WriteString(t)
	}
	return b.String()
}

func writeAnalysisMarkdown(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	st := newDocStyle(a, opt, true)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("# kidscope analyze\n")
	for _, b := range buildDoc(a, opt, st) {
		bw.WriteString("\n")
		switch b.kind {
		case blockHeading1:
			bw.WriteString("## " + mdEscape(shown(b.text.String())) + "\n")
		case blockHeading2:
			bw.WriteString("### " + mdEscape(shown(b.text.String())) + "\n")
		case blockPara:
			bw.WriteString(mdLine(b.text) + "\n")
		case blockKV:
			for _, p := range b.kv {
				if len(p.values) == 1 {
					bw.WriteString("- **" + mdEscape(p.key) + "**: " + mdLine(p.values[0]) + "\n")
					continue
				}
				bw.WriteString("- **" + mdEscape(p.key) + "**:\n")
				for _, v := range p.values {
					bw.WriteString("  - " + mdLine(v) + "\n")
				}
			}
		case blockGrid:
			if err := renderGrid(bw, b.grid, true); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
