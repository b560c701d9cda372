package report

import (
	"encoding/json"
	"io"

	"github.com/kidscope/kidscope/rules"
)

// placeholder JSON until the full renderer lands
func writeAnalysisJSON(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	type finding struct {
		Rule, Severity string
		Frame          int64
		Client, Broker string
		API            string
		Message        string
		Answer         string
	}
	var out []finding
	for _, f := range a.Result.Findings {
		out = append(out, finding{f.Rule, f.Severity.String(), f.At.Frame, f.Conn.Client.String(), f.Conn.Broker.String(), "", f.Message, f.BrokerAnswer})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = rules.Info
	return enc.Encode(out)
}
