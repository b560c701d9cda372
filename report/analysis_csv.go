package report

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kidscope/kidscope/rules"
)

// findingColumns are the csv columns: the JSON finding's field names, with
// connection split into client and broker, without answer (the typed
// form of broker_answer), and with id last, where it was added (a column
// is never moved). expected and seen are the values in words, as
// the table says them. Lists are joined with spaces; null is empty.
var findingColumns = []string{
	"rule", "severity", "file", "frame", "time", "related_frames", "related", "client", "broker",
	"connection_id", "api_key", "api_name", "api_version", "correlation_id", "expected", "seen",
	"broker_answer", "message", "after_gap", "also", "count", "id",
}

// The findingColumns that rows other than a finding's fill.
var (
	csvFile    = slices.Index(findingColumns, "file")
	csvTime    = slices.Index(findingColumns, "time")
	csvBroker  = slices.Index(findingColumns, "broker")
	csvMessage = slices.Index(findingColumns, "message")
)

func (j *findingJSON) csvFields() []string {
	opt16 := func(p *int16) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(int(*p))
	}
	rel := make([]string, len(j.RelatedFrames))
	for i, f := range j.RelatedFrames {
		rel[i] = strconv.FormatInt(f, 10)
	}
	relFile := make([]string, len(j.Related))
	for i, f := range j.Related {
		relFile[i] = f.File + ":" + strconv.FormatInt(f.Frame, 10)
	}
	corr := ""
	if j.CorrelationID != nil {
		corr = strconv.Itoa(int(*j.CorrelationID))
	}
	// Text cells through shownCell: a capture's strings reach expected,
	// seen and message, and a spreadsheet must take none as a formula.
	return []string{
		j.Rule, j.Severity, shownCell(j.File), strconv.FormatInt(j.Frame, 10), optStr(j.Time), strings.Join(rel, " "),
		shownCell(strings.Join(relFile, " ")), j.Connection.Client, j.Connection.Broker, strconv.Itoa(j.ConnectionID),
		opt16(j.APIKey), shownCell(optStr(j.APIName)), opt16(j.APIVersion), corr, shownCell(j.Expected.text()), shownCell(j.Seen.text()),
		shownCell(optStr(j.BrokerAnswer)), shownCell(j.Message), strconv.FormatBool(j.AfterGap), strings.Join(j.Also, " "),
		strconv.FormatInt(j.Count, 10), j.ID,
	}
}

// unlistedRows are the csv rows that count the findings the engine's cap
// left out of the list: one per rule and connection with listed findings
// and more not listed, then one per rule for those of connections with
// none listed. Their frame is empty and their count is how many findings
// they stand for, so that the rows of a rule count all of its findings.
func unlistedRows(a *Analysis) [][]string {
	res := &a.Result
	if res.FindingsByRule == nil {
		return nil
	}
	var rows [][]string
	row := func(rule, client, broker, conn string, n int64, msg string) {
		r, _ := rules.Lookup(rule)
		rows = append(rows, []string{rule, r.Severity.String(), "", "", "", "", "", client, broker, conn,
			"", "", "", "", "", "", "", msg, "", "", strconv.FormatInt(n, 10), ""})
	}
	kept := commas(int64(len(res.Findings)))
	inRows := map[string]int64{}
	first := map[rules.FindingGroup]*rules.Finding{}
	for _, c := range findingCounts(res) {
		inRows[c.Rule] += c.Count
		g := rules.FindingGroup{Rule: c.Rule, ConnID: c.ConnectionID}
		if first[g] == nil {
			for i := range res.Findings {
				if f := &res.Findings[i]; f.Rule == c.Rule && f.ConnID == c.ConnectionID {
					first[g] = f
					break
				}
			}
		}
		if more := c.Count - int64(c.Listed); more > 0 {
			f := first[g]
			row(c.Rule, f.Conn.Client.String(), f.Conn.Broker.String(), strconv.Itoa(c.ConnectionID), more,
				fmt.Sprintf("%s more of this rule on this connection not listed: only the first %s findings made are kept",
					commas(more), kept))
		}
	}
	names := slices.Sorted(maps.Keys(res.FindingsByRule))
	for _, rule := range names {
		if more := res.FindingsByRule[rule] - inRows[rule]; more > 0 {
			row(rule, "", "", "", more, fmt.Sprintf("%s of this rule on connections with none listed: only the first %s findings made are kept",
				plural(more, "finding", "findings"), kept))
		}
	}
	return rows
}

// writeAnalysisCSV writes the findings, one row each, after a header line,
// then the rows that count those the cap left out, then kidscope fleet's
// agents (agentRows).
func writeAnalysisCSV(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	c := csv.NewWriter(bw)
	if err := c.Write(findingColumns); err != nil {
		return err
	}
	for i := range a.Result.Findings {
		j := newFindingJSON(a.Files, a.Origins, &a.Result.Findings[i], opt.UUID)
		if err := c.Write(j.csvFields()); err != nil {
			return err
		}
	}
	if err := c.WriteAll(unlistedRows(a)); err != nil {
		return err
	}
	if err := c.WriteAll(agentRows(a)); err != nil {
		return err
	}
	c.Flush()
	if err := c.Error(); err != nil {
		return err
	}
	return bw.Flush()
}
