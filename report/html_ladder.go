package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// Ladder geometry, in SVG units: the diagram scales to the page's width
// (and scrolls sideways below a readable minimum, in CSS).
const (
	ladderWidth   = 760
	ladderClientX = 150
	ladderBrokerX = 720
	ladderTop     = 44
	ladderRowH    = 30
	ladderRowMark = 44 // a row that names its finding
	// ladderContext is how many messages each side of an interesting one
	// are drawn; longer runs of the others fold into one row.
	ladderContext = 2
	// ladderEnds is how many messages at each end of what was kept are
	// always drawn, for the connection's start and end.
	ladderEnds = 3
)

// htmlLadder is one connection's ladder diagram.
type htmlLadder struct {
	ConnID         int
	Client, Broker string
	ClientID       string
	Total          int64
	Shown          int   // arrows drawn
	Folded         int64 // messages folded into fold rows
	Rows           []*ladderRow
	Parts          []*ladderPart
	Legend         []ladderLegend
	Findings       int
}

type ladderLegend struct{ ID, Color string }

// ladderRow is one arrow, or one fold of messages not drawn.
type ladderRow struct {
	Y        int
	Fold     int64 // > 0: a fold row of that many messages
	Anchor   string
	Response bool
	X1, X2   int
	Label    string
	Code     string // the response's error codes, when not NONE
	Error    bool   // a non-zero code
	Color    string // the instance ID's, for requests that carry one
	ID       string // the instance ID as the report writes it
	NoID     bool   // a request without a header instance ID
	Frame    string
	Time     string
	Marks    string // the rules of the findings at this frame
	Sev      string // the worst of them: its class
	Related  string // what the frame is to a finding elsewhere (unmarked rows)
	Answer   bool   // the broker's answer to a request with a finding
	Seq      int64
	LabelX   int
	MarkY    int
	TextY    int
	LineY    int
}

// ladderLink joins a request with a finding to the broker's answer.
type ladderLink struct{ Path, Href string }

func buildLadders(a *Analysis, st *docStyle, colors *idColors) ([]*htmlLadder, map[int]map[string]string) {
	anchors := map[int]map[string]string{}
	var out []*htmlLadder
	conns := map[int]*rules.Connection{}
	for i := range a.Result.Connections {
		conns[a.Result.Connections[i].ID] = &a.Result.Connections[i]
	}
	for _, id := range connsWithFindings(&a.Result) {
		lad := a.Ladders[id]
		if lad == nil {
			continue
		}
		var fs []*rules.Finding
		for i := range a.Result.Findings {
			if a.Result.Findings[i].ConnID == id {
				fs = append(fs, &a.Result.Findings[i])
			}
		}
		h, anch := drawLadder(lad, fs, st, colors)
		if c := conns[id]; c != nil && c.HasClient {
			h.ClientID = shown(c.ClientID)
		}
		anchors[id] = anch
		out = append(out, h)
	}
	return out, anchors
}

func drawLadder(lad *Ladder, fs []*rules.Finding, st *docStyle, colors *idColors) (*htmlLadder, map[string]string) {
	h := &htmlLadder{ConnID: lad.ConnID, Total: lad.Total, Findings: len(fs)}
	if len(fs) > 0 {
		h.Client, h.Broker = fs[0].Conn.Client.String(), fs[0].Conn.Broker.String()
	}
	at := map[kafka.FrameRef][]*rules.Finding{}
	answers := map[kafka.FrameRef]bool{}
	for _, f := range fs {
		for _, r := range f.Related {
			if r.Role == rules.RoleAnswer {
				answers[frameKey(r.Frame)] = true
			}
		}
	}
	// related names, per frame, what it is to which finding: the
	// frame that established the ID, the broker's answer …
	related := map[kafka.FrameRef][]string{}
	for _, f := range fs {
		at[frameKey(f.At)] = append(at[frameKey(f.At)], f)
		for _, r := range f.Related {
			if r.Role == rules.RoleAnswer {
				continue // drawn as the link from the finding's request
			}
			k := frameKey(r.Frame)
			if txt := roleName(r.Role) + " (" + f.Rule + ")"; !slices.Contains(related[k], txt) && len(related[k]) < 3 {
				related[k] = append(related[k], txt)
			}
		}
	}
	ms := lad.Messages
	interesting := make([]bool, len(ms))
	var lastID kafka.UUID
	hadID, anyReq := false, false
	for i := range ms {
		m := &ms[i]
		k := frameKey(m.At)
		in := at[k] != nil || related[k] != nil || answers[k] || i < ladderEnds || i >= len(ms)-ladderEnds
		if m.Response {
			in = in || !m.Matched
			for _, c := range m.Codes {
				in = in || c != 0
			}
			// The answer to a request with a finding.
			in = in || (m.Matched && at[frameKey(m.RequestAt)] != nil)
		} else {
			in = in || (anyReq && (m.HasInstanceID != hadID || m.InstanceID != lastID))
			anyReq, hadID, lastID = true, m.HasInstanceID, m.InstanceID
		}
		interesting[i] = in
	}
	show := make([]bool, len(ms))
	for i := range ms {
		if !interesting[i] {
			continue
		}
		for j := max(0, i-ladderContext); j <= min(len(ms)-1, i+ladderContext); j++ {
			show[j] = true
		}
	}
	y := ladderTop
	var fold int64
	flush := func() {
		if fold > 0 {
			h.Rows = append(h.Rows, &ladderRow{Y: y, Fold: fold, LabelX: (ladderClientX + ladderBrokerX) / 2, TextY: y + 19, LineY: y + 15})
			h.Folded += fold
			y += ladderRowH
			fold = 0
		}
	}
	anchors := map[string]string{}
	rowOf := map[kafka.FrameRef]*ladderRow{}
	next := int64(0) // the Seq the next message would have if none were left out
	legend := map[kafka.UUID]bool{}
	for i := range ms {
		m := &ms[i]
		fold += m.Seq - next // not kept by the collector
		next = m.Seq + 1
		if !show[i] {
			fold++
			continue
		}
		flush()
		r := &ladderRow{Y: y, Seq: m.Seq, Response: m.Response, Frame: st.frame(m.At.File, m.At.Frame), Time: st.clock(m.At.Time)}
		r.Anchor = fmt.Sprintf("c%d-m%d", lad.ConnID, m.Seq)
		name := decode.APIName(m.APIKey)
		if m.Response {
			r.X1, r.X2 = ladderBrokerX, ladderClientX
			if !m.Matched {
				name = "unmatched response"
			}
			r.Label = fmt.Sprintf("%s · corr %d", name, m.CorrelationID)
			var names []string
			for _, c := range m.Codes {
				names = append(names, decode.ErrorName(c))
				r.Error = r.Error || c != 0
			}
			if r.Error {
				r.Code = strings.Join(names, ", ")
			} else if len(names) > 0 {
				r.Label += " · " + names[0]
			}
			r.Answer = m.Matched && at[frameKey(m.RequestAt)] != nil
		} else {
			r.X1, r.X2 = ladderClientX, ladderBrokerX
			r.Label = fmt.Sprintf("%s v%d · corr %d", name, m.APIVersion, m.CorrelationID)
			if m.NoResponse {
				r.Label += " · acks=0"
			}
			if m.HasInstanceID {
				r.Color, r.ID = colors.color(m.InstanceID), st.uuid(m.InstanceID)
				if !legend[m.InstanceID] {
					legend[m.InstanceID] = true
					h.Legend = append(h.Legend, ladderLegend{ID: r.ID, Color: r.Color})
				}
			} else {
				r.NoID = true
			}
		}
		if marks := at[frameKey(m.At)]; marks != nil {
			var ids []string
			worst := rules.Info
			seen := map[string]bool{}
			for _, f := range marks {
				if !seen[f.Rule] {
					seen[f.Rule] = true
					ids = append(ids, f.Rule)
				}
				worst = max(worst, f.Severity)
			}
			r.Marks, r.Sev = strings.Join(ids, ", "), "sev-"+worst.String()
			anchors[frameKeyText(m.At)] = r.Anchor
		}
		if r.Marks == "" && related[frameKey(m.At)] != nil {
			r.Related = "related: " + strings.Join(related[frameKey(m.At)], ", ")
		}
		r.LabelX = (ladderClientX + ladderBrokerX) / 2
		r.TextY, r.LineY, r.MarkY = r.Y+14, r.Y+20, r.Y+35
		y = r.Y + ladderRowH
		if r.Marks != "" || r.Code != "" || r.Related != "" {
			y = r.Y + ladderRowMark
		}
		h.Rows = append(h.Rows, r)
		h.Shown++
		rowOf[frameKey(m.At)] = r
	}
	fold += lad.Total - next
	flush()
	h.Parts = splitLadder(h.Rows, y)
	// Each answer to a request with a finding, and each answer with a
	// finding, is joined to its request on the broker's side (the link
	// goes to the answer), when both are in one part.
	partOf := map[*ladderRow]*ladderPart{}
	for _, p := range h.Parts {
		for _, r := range p.Rows {
			partOf[r] = p
		}
	}
	for i := range ms {
		m := &ms[i]
		if !m.Response || !m.Matched {
			continue
		}
		resp, req := rowOf[frameKey(m.At)], rowOf[frameKey(m.RequestAt)]
		if resp == nil || req == nil || (!resp.Answer && resp.Marks == "") || partOf[resp] != partOf[req] {
			continue
		}
		x := ladderBrokerX + 26
		y1, y2 := strconv.Itoa(req.LineY), strconv.Itoa(resp.LineY)
		bx := strconv.Itoa(ladderBrokerX)
		p := partOf[resp]
		p.Links = append(p.Links, ladderLink{
			Path: "M" + bx + " " + y1 + " C" + strconv.Itoa(x) + " " + y1 + " " + strconv.Itoa(x) + " " + y2 + " " + bx + " " + y2,
			Href: "#" + resp.Anchor})
	}
	return h, anchors
}

// ladderPartRows is how many rows one SVG of a ladder holds: a browser
// prints an SVG whole, so a long ladder is drawn in parts that each fit
// an A4 page, and the page breaks fall between them.
const ladderPartRows = 24

// ladderPart is one SVG of a ladder; the first carries the lane titles.
type ladderPart struct {
	First  bool
	Height int
	Rows   []*ladderRow
	Links  []ladderLink
}

// splitLadder cuts the rows (laid out from ladderTop to end) into parts,
// each with its own coordinates from its top.
func splitLadder(rows []*ladderRow, end int) []*ladderPart {
	var parts []*ladderPart
	for i := 0; i < len(rows); i += ladderPartRows {
		p := &ladderPart{First: i == 0, Rows: rows[i:min(i+ladderPartRows, len(rows))]}
		top, off := ladderTop, 0
		if !p.First {
			top = 4
			off = p.Rows[0].Y - top
		}
		bottom := end
		if i+ladderPartRows < len(rows) {
			bottom = rows[i+ladderPartRows].Y
		}
		for _, r := range p.Rows {
			r.Y, r.TextY, r.LineY, r.MarkY = r.Y-off, r.TextY-off, r.LineY-off, r.MarkY-off
		}
		p.Height = bottom - off + 6
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = append(parts, &ladderPart{First: true, Height: ladderTop})
	}
	return parts
}

// frameKey is a frame without its time: findings and messages name the
// same frame with or without it.
func frameKey(f kafka.FrameRef) kafka.FrameRef { return kafka.FrameRef{File: f.File, Frame: f.Frame} }
