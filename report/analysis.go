package report

import (
	"io"

	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/rules"
)

// Analysis is everything `kidscope analyze` reports: the inputs and their
// counters, and what the rules found.
type Analysis struct {
	Files   []string
	Summary pipeline.Summary
	Result  rules.Result
}

// AnalysisOptions say how to write it.
type AnalysisOptions struct {
	Format  string // table, json, ndjson, csv, markdown
	UUID    UUIDForm
	Verbose bool // table: show info findings too
	Color   bool // table: ANSI colours (only on a terminal)
}

// ValidAnalyzeFormat reports whether format is one analyze writes.
func ValidAnalyzeFormat(format string) bool {
	switch format {
	case "table", "json", "ndjson", "csv", "markdown":
		return true
	}
	return false
}

// WriteAnalysis renders the analysis in one format.
func WriteAnalysis(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	return writeAnalysisJSON(w, a, opt)
}
