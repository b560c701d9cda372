package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// msgs builds kept ladder messages: each pair is a request at frame f
// and its response at f+1, with seq numbers from seq.
func ladderPairs(seq int64, frames []int64, id kafka.UUID, codes map[int64]int16) []LadderMessage {
	var out []LadderMessage
	for i, f := range frames {
		corr := int32(seq/2) + int32(i)
		out = append(out, LadderMessage{Seq: seq + int64(2*i), At: fr(0, f), APIKey: 3, APIVersion: 12, CorrelationID: corr,
			InstanceID: id, HasInstanceID: true})
		r := LadderMessage{Seq: seq + int64(2*i) + 1, At: fr(0, f+1), Response: true, APIKey: 3, APIVersion: 12,
			CorrelationID: corr, Matched: true, RequestAt: fr(0, f), Codes: []int16{codes[f]}}
		out = append(out, r)
	}
	return out
}

// incidentLadders gives the incident fixture's connection 1 a ladder
// with what the collector leaves: a head, the findings' frames between
// runs it did not keep, and a tail.
func incidentLadders() map[int]*Ladder {
	var ms []LadderMessage
	ms = append(ms, ladderPairs(0, []int64{5, 7, 9, 11, 13, 15, 17, 19}, instA, nil)...)
	bad := ladderPairs(100, []int64{117}, otherX, map[int64]int16{117: 42})
	bad[0].APIKey, bad[1].APIKey = 3, 3
	ms = append(ms, bad...)
	ms = append(ms, ladderPairs(102, []int64{121, 123}, instA, nil)...)
	ms = append(ms, ladderPairs(1614, []int64{4390, 4392, 4394, 4396, 4398}, instA, nil)...)
	return map[int]*Ladder{1: {ConnID: 1, Total: 1624, Messages: ms}}
}

func TestAnalysisHTMLGolden(t *testing.T) {
	a := incidentAnalysis()
	a.Ladders = incidentLadders()
	var buf bytes.Buffer
	if err := WriteAnalysis(&buf, a, AnalysisOptions{Format: "html"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "analysis_incident.html.golden", buf.Bytes())
}

// A ladder accounts for every message: drawn, or in a fold (not kept by
// the collector, or kept but with nothing to see).
func TestLadderFolds(t *testing.T) {
	a := incidentAnalysis()
	lad := incidentLadders()[1]
	var fs []*rules.Finding
	for i := range a.Result.Findings {
		if a.Result.Findings[i].ConnID == 1 {
			fs = append(fs, &a.Result.Findings[i])
		}
	}
	h, anchors := drawLadder(lad, fs, newDocStyle(a, AnalysisOptions{}, true), newIDColors())
	var folds int
	var folded int64
	for _, r := range h.Rows {
		if r.Fold > 0 {
			folds++
			folded += r.Fold
		}
	}
	if int64(h.Shown)+folded != lad.Total {
		t.Errorf("%d drawn + %d folded != %d messages", h.Shown, folded, lad.Total)
	}
	if h.Shown >= len(lad.Messages) {
		t.Errorf("all %d kept messages drawn: the uninteresting run of the head was not folded", h.Shown)
	}
	if folds < 3 {
		t.Errorf("%d folds, want one in the head, one after the finding, one before the tail", folds)
	}
	if anchors["0-117"] == "" {
		t.Errorf("the finding's frame 117 has no ladder row to link to (anchors %v)", anchors)
	}
	var links []ladderLink
	for _, p := range h.Parts {
		links = append(links, p.Links...)
	}
	if len(links) != 1 || links[0].Href != "#c1-m101" {
		t.Errorf("links %+v, want the request at 117 joined to its answer, message 101", links)
	}
}

// Capture strings reach the page escaped: a client ID cannot add markup.
func TestHTMLEscapesCaptureText(t *testing.T) {
	a := incidentAnalysis()
	a.Ladders = incidentLadders()
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	a.Result.Connections[0].ClientID = evil
	a.Result.Instances[0].ClientIDs = []string{evil}
	a.Files[0] = evil
	var buf bytes.Buffer
	if err := WriteAnalysis(&buf, a, AnalysisOptions{Format: "html"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script", "<img"} {
		if strings.Contains(out, bad) {
			t.Errorf("the page holds %q from a capture string", bad)
		}
	}
	if !strings.Contains(out, "&lt;script&gt;") {
		t.Error("the client ID is not in the page at all, escaped")
	}
}

// The spreadsheet-formula guard belongs to CSV: an HTML cell that is a
// dash, or a client ID that starts with one, is shown as it is.
func TestHTMLCellsHaveNoFormulaGuard(t *testing.T) {
	a := incidentAnalysis()
	a.Result.Connections[0].ClientID = "-starts-with-a-dash"
	var buf bytes.Buffer
	if err := WriteAnalysis(&buf, a, AnalysisOptions{Format: "html"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "&#39;-") {
		t.Error("an HTML cell carries the CSV formula guard: '-")
	}
	if !strings.Contains(out, "<td>-</td>") || !strings.Contains(out, "-starts-with-a-dash") {
		t.Error("the empty cells or the client ID are not shown as they are")
	}
}

// A request whose header carries an explicit ZERO ID is drawn ZERO, as the
// tables name it, not as 22 A's.
func TestLadderNamesZero(t *testing.T) {
	a := incidentAnalysis()
	ms := ladderPairs(0, []int64{5, 7}, instA, nil)
	ms[2].InstanceID = kafka.UUID{}
	a.Ladders = map[int]*Ladder{1: {ConnID: 1, Total: 4, Messages: ms}}
	var buf bytes.Buffer
	if err := WriteAnalysis(&buf, a, AnalysisOptions{Format: "html"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "AAAAAAAAAAAAAAAAAAAAAA") {
		t.Error("the ladder draws ZERO as its base64 text")
	}
	if !strings.Contains(out, "id ZERO<") {
		t.Error("the ladder does not name ZERO")
	}
}
