package report

import (
	_ "embed"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/kidscope/kidscope/report/internal/textdoc"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// -o html is one self-contained file for an incident review: the same
// summary and tables as -o markdown (the same blocks, so the words
// agree), each rule that fired with its explanation and every finding,
// a ladder diagram per connection with a finding, and the instance
// inventory as a graph. No script, font or image is fetched: the CSS is
// inlined and the diagrams are inline SVG. Every string from a capture
// goes through html/template's escaping.

//go:embed html.tmpl
var htmlTemplateText string

//go:embed html.css
var htmlCSS string

var htmlTemplate = template.Must(template.New("html").Funcs(template.FuncMap{
	"sevclass": func(s rules.Severity) string { return "sev-" + s.String() },
	"add":      func(a, b int) int { return a + b },
}).Parse(htmlTemplateText))

// htmlDoc is what the template renders.
type htmlDoc struct {
	CSS         template.CSS // html.css: kidscope's own, never a capture's
	Summary     []htmlBlock
	FindingsTbl []htmlBlock
	Rules       []*htmlRule
	Ladders     []*htmlLadder
	NoLadders   []int // connections with findings whose messages were not kept
	Connections []htmlBlock
	Instances   []htmlBlock
	Graph       *htmlGraph
	Rest        []htmlBlock // brokers and the matrix
	FindingN    int
}

// htmlBlock is a block of the document as the page shows it: every text
// escaped (shown) before html/template escapes it for HTML.
type htmlBlock struct {
	H1, H2 string
	Para   []htmlSpan
	KV     []htmlPair
	Grid   *htmlGrid
}

type htmlSpan struct{ Text, Class string }

type htmlPair struct {
	Key    string
	Values [][]htmlSpan
}

type htmlGrid struct {
	Header []string
	Rows   [][][]string
}

func htmlBlocks(bs []textdoc.Block) []htmlBlock {
	out := make([]htmlBlock, 0, len(bs))
	for _, b := range bs {
		var h htmlBlock
		switch b.Kind {
		case textdoc.Heading1:
			h.H1 = shown(b.Text.String())
		case textdoc.Heading2:
			h.H2 = shown(b.Text.String())
		case textdoc.Para:
			h.Para = htmlSpans(b.Text)
		case textdoc.KV:
			for _, p := range b.Pairs {
				hp := htmlPair{Key: shown(p.Key)}
				for _, v := range p.Values {
					hp.Values = append(hp.Values, htmlSpans(v))
				}
				h.KV = append(h.KV, hp)
			}
		case textdoc.Table:
			h.Grid = newHTMLGrid(b.Grid)
		}
		out = append(out, h)
	}
	return out
}

// htmlSpans are a line's spans, a styled one with its severity's class.
func htmlSpans(l textdoc.Line) []htmlSpan {
	out := make([]htmlSpan, len(l))
	for i, s := range l {
		out[i].Text = shown(s.Text)
		if s.Style != "" && s.Text != "" {
			out[i].Class = "sev-" + s.Style
		}
	}
	return out
}

// newHTMLGrid is the grid's cells escaped for display; html/template
// escapes them for HTML. The spreadsheet-formula guard of shownCell is
// CSV's: in a page it would show every "-" as "'-".
func newHTMLGrid(g *textdoc.Grid) *htmlGrid {
	out := &htmlGrid{Header: g.Header, Rows: make([][][]string, len(g.Rows))}
	for i, r := range g.Rows {
		out.Rows[i] = make([][]string, len(r))
		for j, c := range r {
			out.Rows[i][j] = make([]string, len(c))
			for k, s := range c {
				out.Rows[i][j][k] = shown(s)
			}
		}
	}
	return out
}

// htmlRule is one rule that fired: its explanation and its findings.
type htmlRule struct {
	ID, Summary, Detail, Why, Fix, Caveat string
	Severity                              rules.Severity
	Findings                              []htmlFinding
}

type htmlFinding struct {
	Index    int // in Result.Findings
	Rule     string
	Severity rules.Severity
	Conn     int
	Frame    string // as the tables write it
	FrameKey string // FILE-FRAME, for the data attribute
	Client   string
	Broker   string
	Message  string
	API      string
	Expected string
	Seen     string
	Answer   string
	Related  string
	Ladder   string // the ladder row's anchor, when the frame is drawn
}

func writeAnalysisHTML(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	st := newDocStyle(a, opt, true)
	full := opt
	full.Verbose = true // the file is for review: the info findings too
	doc := &htmlDoc{
		CSS:         template.CSS(htmlCSS),
		Summary:     htmlBlocks(summaryBlocks(a, st)),
		FindingsTbl: htmlBlocks(findingBlocks(a, full, st)),
		Connections: htmlBlocks(connectionBlocks(a, st)),
		Instances:   htmlBlocks(instanceBlocks(a, st)),
		Rest:        htmlBlocks(append(brokerBlocks(a, st), matrixBlocks(a, st)...)),
		FindingN:    len(a.Result.Findings),
	}
	colors := newIDColors()
	lads, anchors := buildLadders(a, st, colors)
	doc.Ladders = lads
	for _, id := range connsWithFindings(&a.Result) {
		if a.Ladders[id] == nil {
			doc.NoLadders = append(doc.NoLadders, id)
		}
	}
	doc.Rules = htmlRules(a, st, anchors)
	doc.Graph = instanceGraph(a, st, colors)
	return htmlTemplate.Execute(w, doc)
}

// connsWithFindings lists the connections with a finding, by ID.
func connsWithFindings(res *rules.Result) []int {
	seen := map[int]bool{}
	var ids []int
	for i := range res.Findings {
		if id := res.Findings[i].ConnID; !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

func frameKeyText(f kafka.FrameRef) string {
	return strconv.Itoa(f.File) + "-" + strconv.FormatInt(f.Frame, 10)
}

func htmlRules(a *Analysis, st *docStyle, anchors map[int]map[string]string) []*htmlRule {
	byID := map[string]*htmlRule{}
	var out []*htmlRule
	fs := a.Result.Findings
	for i := range fs {
		f := &fs[i]
		r := byID[f.Rule]
		if r == nil {
			r = &htmlRule{ID: f.Rule, Severity: f.Severity}
			if rule, ok := rules.Lookup(f.Rule); ok {
				r.Summary, r.Detail, r.Why, r.Fix, r.Caveat = rule.Summary, rule.Detail, rule.Why, rule.Fix, rule.Caveat
			}
			byID[f.Rule] = r
			out = append(out, r)
		}
		hf := htmlFinding{Index: i, Rule: f.Rule, Severity: f.Severity, Conn: f.ConnID,
			Frame: st.frame(f.At.File, f.At.Frame), FrameKey: frameKeyText(f.At),
			Client: f.Conn.Client.String(), Broker: f.Conn.Broker.String(),
			Message:  shown(findingMessage(f)),
			Expected: shown(valueText(f.Expected, st.uuid)), Seen: shown(valueText(f.Seen, st.uuid))}
		if f.HasAPI {
			hf.API, hf.Answer = apiText(f), shown(answerText(f))
		}
		if len(f.Related) > 0 {
			rel := make([]string, len(f.Related))
			for j, r := range f.Related {
				rel[j] = st.frame(r.Frame.File, r.Frame.Frame) + " (" + roleName(r.Role) + ")"
			}
			hf.Related = strings.Join(rel, ", ")
		}
		hf.Ladder = anchors[f.ConnID][frameKeyText(f.At)]
		r.Findings = append(r.Findings, hf)
	}
	// Errors first, then warnings, then info, as the tables.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	return out
}

// idColors gives each client instance ID one colour for the whole file,
// in the order the IDs are first drawn.
type idColors struct {
	of   map[kafka.UUID]int
	list []kafka.UUID
}

// idPalette is ten colours that stay apart on screen and in print (and
// for the commonest colour blindness, mostly by lightness).
var idPalette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79"}

func newIDColors() *idColors { return &idColors{of: map[kafka.UUID]int{}} }

func (c *idColors) color(u kafka.UUID) string {
	i, ok := c.of[u]
	if !ok {
		i = len(c.list)
		c.of[u] = i
		c.list = append(c.list, u)
	}
	return idPalette[i%len(idPalette)]
}
