package report

import (
	"bufio"
	"encoding/csv"
	"io"
	"strconv"
	"strings"
)

// findingColumns are the csv columns: the JSON finding's field names, with
// connection split into client and broker. Lists are joined with spaces;
// null is empty.
var findingColumns = []string{
	"rule", "severity", "file", "frame", "time", "related_frames", "related", "client", "broker",
	"connection_id", "api_key", "api_name", "api_version", "correlation_id", "expected", "seen",
	"broker_answer", "message", "after_gap", "also", "count",
}

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
	return []string{
		j.Rule, j.Severity, j.File, strconv.FormatInt(j.Frame, 10), optStr(j.Time), strings.Join(rel, " "),
		strings.Join(relFile, " "), j.Connection.Client, j.Connection.Broker, strconv.Itoa(j.ConnectionID),
		opt16(j.APIKey), optStr(j.APIName), opt16(j.APIVersion), corr, optStr(j.Expected), optStr(j.Seen),
		optStr(j.BrokerAnswer), j.Message, strconv.FormatBool(j.AfterGap), strings.Join(j.Also, " "),
		strconv.FormatInt(j.Count, 10),
	}
}

// writeAnalysisCSV writes the findings, one row each, after a header line.
func writeAnalysisCSV(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	c := csv.NewWriter(bw)
	if err := c.Write(findingColumns); err != nil {
		return err
	}
	for i := range a.Result.Findings {
		j := newFindingJSON(a.Files, &a.Result.Findings[i], opt.UUID)
		if err := c.Write(j.csvFields()); err != nil {
			return err
		}
	}
	c.Flush()
	if err := c.Error(); err != nil {
		return err
	}
	return bw.Flush()
}
