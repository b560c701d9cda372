package report

import (
	"fmt"
	"io"

	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// Analysis is everything `kidscope analyze` reports: the inputs and their
// counters, and what the rules found.
type Analysis struct {
	Files []string
	// Origins, when set, are what Files stand for in the findings' IDs
	// (FindingID), index by index: the agent and run of a run that
	// publishes, or the fleet's agents' own names of its agent:file
	// files. Without them a file is its name in Files, of no agent.
	Origins []Origin
	Summary result.Summary
	Result  rules.Result
	// Run, when set, is kidscope's version, the options and the inputs,
	// which JSON and NDJSON write.
	Run *RunInfo
	// Ladders are the kept messages of the connections with findings, by
	// connection ID: only -o html reads them (and only it collects them).
	Ladders map[int]*Ladder
	// Scope, when set, says the Result is the part of the whole that
	// --instance, --client, --broker or --connection kept (Scope.Apply).
	Scope *ScopeNote
	// Agents and Fleet, in kidscope fleet's report, are the agents whose
	// records it read and what it skipped of them (nil elsewhere: nothing
	// of them is written).
	Agents []result.Agent
	Fleet  *result.FleetCounts
}

// AnalysisOptions say how to write it.
type AnalysisOptions struct {
	Format  string // table, json, ndjson, csv, markdown, sarif, html
	UUID    UUIDForm
	Verbose bool // table: show info findings too
	Color   bool // table: ANSI colours (only on a terminal)
	// OmitFindings leaves the finding lines out of ndjson: live streamed
	// them as they were made.
	OmitFindings bool
	// SARIF is what -o sarif says of the run besides the analysis.
	SARIF SARIFInvocation
	// OmitRun leaves the run line out of ndjson: live wrote it first.
	OmitRun bool
}

// ValidAnalyzeFormat reports whether format is one analyze and live
// write. analyze writes sarif too (ValidAnalyzeFileFormat): a SARIF log
// is one document about finished inputs, for CI.
func ValidAnalyzeFormat(format string) bool {
	switch format {
	case "table", "json", "ndjson", "csv", "markdown":
		return true
	}
	return false
}

// ValidAnalyzeFileFormat reports whether format is one analyze writes.
// html, like sarif, is one document about finished inputs.
func ValidAnalyzeFileFormat(format string) bool {
	return format == "sarif" || format == "html" || ValidAnalyzeFormat(format)
}

// WriteAnalysis renders the analysis in one format.
//
// table and markdown are for people: sections in docs/design/cli.md's order, repeats of
// one rule on one connection grouped into one row, info findings only with
// Verbose. json, ndjson and csv are for programs: every finding is listed,
// nothing is shortened, and the field names are the stable schema of
// docs/formats.md. sarif is for CI viewers (sarif.go):
// one result per finding, with the rule catalogue. html is for an
// incident review (html.go): the tables, the rules explained, and ladder
// diagrams of the connections with findings (Analysis.Ladders).
func WriteAnalysis(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	switch opt.Format {
	case "table", "":
		return writeAnalysisTable(w, a, opt)
	case "markdown":
		return writeAnalysisMarkdown(w, a, opt)
	case "json":
		return writeAnalysisJSON(w, a, opt)
	case "ndjson":
		return writeAnalysisNDJSON(w, a, opt)
	case "csv":
		return writeAnalysisCSV(w, a, opt)
	case "sarif":
		return writeAnalysisSARIF(w, a, opt)
	case "html":
		return writeAnalysisHTML(w, a, opt)
	}
	return fmt.Errorf("-o %q: analyze writes table, json, ndjson, csv, markdown, sarif or html", opt.Format)
}

// fileName is the name of input file i, as the findings name it.
func fileName(files []string, i int) string {
	if i >= 0 && i < len(files) {
		return files[i]
	}
	return fmt.Sprintf("input %d", i+1)
}
