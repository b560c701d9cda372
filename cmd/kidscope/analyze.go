package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// ruleFlags are the flags that choose rules and severities.
type ruleFlags struct {
	profile      string
	rules        []string
	skipRules    []string
	minSeverity  string
	failOn       string
	verbose      bool
	requireKafka bool
}

func (f *ruleFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", "auto", "KIP-1313 revision to judge by: seed, accepted or auto (per connection)")
	fl.StringSliceVar(&f.rules, "rule", nil, "only these rules (IDs or globs such as telemetry-*), repeatable")
	fl.StringSliceVar(&f.skipRules, "skip-rule", nil, "leave out these rules (IDs or globs), repeatable")
	fl.StringVar(&f.minSeverity, "min-severity", "info", "report findings of this severity or higher: info, warning, error")
	fl.StringVar(&f.failOn, "fail-on", "error", "exit 1 when a finding of this severity or higher exists: info, warning, error, never")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "show info findings in the table too")
	fl.BoolVar(&f.requireKafka, "require-kafka", false, "exit 2 when no Kafka message was decoded (a wrong --port, a capture of something else): nothing was checked")
}

// ruleChoice is the parsed form of ruleFlags.
type ruleChoice struct {
	profile  rules.ProfileChoice
	filter   rules.Filter
	failOn   rules.Severity
	failNone bool
}

func (f *ruleFlags) parse() (ruleChoice, error) {
	var rc ruleChoice
	switch f.profile {
	case "auto":
		rc.profile = rules.ProfileAuto
	case "seed":
		rc.profile = rules.ForceSeed
	case "accepted":
		rc.profile = rules.ForceAccepted
	default:
		return rc, fmt.Errorf("--profile %q: want seed, accepted or auto", f.profile)
	}
	sel := func(flag string, pats []string) (map[string]bool, error) {
		if len(pats) == 0 {
			return nil, nil
		}
		ids, unmatched := rules.Select(pats)
		if len(unmatched) > 0 {
			return nil, fmt.Errorf("%s %s: no such rule (see kidscope rules)", flag, strings.Join(unmatched, ", "))
		}
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m, nil
	}
	var err error
	if rc.filter.Keep, err = sel("--rule", f.rules); err != nil {
		return rc, err
	}
	if rc.filter.Skip, err = sel("--skip-rule", f.skipRules); err != nil {
		return rc, err
	}
	var ok bool
	if rc.filter.Min, ok = rules.ParseSeverity(f.minSeverity); !ok {
		return rc, fmt.Errorf("--min-severity %q: want info, warning or error", f.minSeverity)
	}
	if f.failOn == "never" {
		rc.failNone = true
	} else if rc.failOn, ok = rules.ParseSeverity(f.failOn); !ok {
		return rc, fmt.Errorf("--fail-on %q: want info, warning, error or never", f.failOn)
	}
	return rc, nil
}

// check is the pipeline's rules stage for this choice and engine options.
func (rc *ruleChoice) check(opt rules.Options) *pipeline.Check {
	opt.Profile = rc.profile
	return &pipeline.Check{Engine: opt, Filter: rc.filter}
}

// failing reports whether a finding at or above --fail-on exists.
func (rc *ruleChoice) failing(res *rules.Result) bool {
	return !rc.failNone && rc.filter.Failing(res, rc.failOn)
}

// exitCode is the code the findings and --require-kafka make (finalStatus
// then weighs input problems and interruption): a finding at or above
// --fail-on, 1; else no Kafka decoded with --require-kafka, 2, the code
// of an input that could not be checked. It says on stderr what a run
// without Kafka saw instead, flag or not (kernel: as warnNoKafka).
func (f *ruleFlags) exitCode(rc *ruleChoice, run *pipeline.Result, ports reassembly.Ports, kernel string) int {
	none := warnNoKafka(&run.Summary, ports, kernel)
	switch {
	case rc.failing(&run.Rules):
		return exitFindings
	case none && f.requireKafka:
		return exitBadInput
	}
	return exitOK
}

func newAnalyzeCmd() *cobra.Command {
	var in inputFlags
	var rf ruleFlags
	var pf publishFlags
	var noHash bool
	var af annotateFlags
	var xf extractFlags
	var sf scopeFlags
	var conns []string
	cmd := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Check captures against kidscope's rules and print the report",
		Long: `analyze reads pcap and pcapng files (gzip too; "-" is standard input), decodes every
Kafka connection and reports, per connection, violations of the client-instance-ID
rules (KIP-1313), telemetry ID mismatches (KIP-714) and group member-ID mistakes
(KIP-394, KIP-1082), with the evidence to check them in Wireshark.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it (even when an
input could not be read to its end); 2 bad usage, unreadable input, or no Kafka decoded
with --require-kafka; 130 interrupted. A run that decoded no Kafka says on stderr what it
saw instead (the busiest TCP ports, and which look like Kafka).

Memory: --memory-limit is one budget; the caps not given (--max-connections, --max-buffer,
--max-resync-buffer, --max-body-buffer, and what the report keeps) take shares of it, and
what a cap leaves out is counted in the report.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			opt, form, caps, err := in.options(cmd, files)
			if err != nil {
				return usageError(err)
			}
			stopGovernor, err := in.applyMemoryLimit(cmd)
			if err != nil {
				return usageError(err)
			}
			defer stopGovernor()
			choice, err := rf.parse()
			if err != nil {
				return usageError(err)
			}
			if err := af.check(files, xf.dir != ""); err != nil {
				return usageError(err)
			}
			if err := xf.check(files); err != nil {
				return usageError(err)
			}
			scope, err := sf.parseAll(conns, &opt)
			if err != nil {
				return usageError(err)
			}
			format := in.output
			if !report.ValidAnalyzeFileFormat(format) {
				return usageError(fmt.Errorf("-o %q: analyze writes table, json, ndjson, csv, markdown, sarif or html", format))
			}
			opt.Stdin = cmd.InOrStdin()
			var hashes *inputHashes
			if format == "json" || format == "ndjson" { // the formats that write the inputs' hashes
				hashes, opt.Stdin = hashInputs(cmd.Context(), files, opt.Stdin, noHash)
			}
			bar := newProgressBar(files, in.noProgress)
			if bar != nil {
				opt.OnTick = bar.tick
			}
			opt.Rules = choice.check(caps.rulesOptions())
			var sink pipeline.Sink
			var ladders *ladderCollector
			// One connection in a table: its messages too (connview.go).
			var view *connViewSink
			switch {
			case format == "html": // only the ladders need every message's header
				ladders = newLadderCollector(caps.ladderMessages())
				sink = ladders
			case len(scope.Connections) == 1 && format == "table":
				limit, _ := in.effectiveLimit(cmd)
				view = &connViewSink{conn: scope.Connections[0], names: displayNames(files), form: form, max: connViewFor(limit)}
				sink = view
			}
			names := displayNames(files)
			pub, err := pf.start(strings.Join(names, ","), func(i int) string { return names[min(i, len(names)-1)] }, true)
			if err != nil {
				return usageError(err)
			}
			sink = withPublisher(sink, pub)
			run, err := pipeline.Run(cmd.Context(), opt, sink)
			bar.clear()
			if pub != nil {
				if err == nil {
					pub.Report(&run.Summary, &run.Rules)
				}
				pub.Close(publishTimeout)
				sayPublished(pub, pf.topic)
			}
			collectBeforeReport()
			if err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			note := applyScope(&scope, &run, form)
			code := rf.exitCode(&choice, &run, opt.Reassembly.Ports, "")
			exit := exitCodeOf(&run.Summary, code)
			rep := &report.Analysis{Files: names, Origins: publishedOrigins(pub, names), Summary: run.Summary, Result: run.Rules, Scope: note}
			if ladders != nil {
				rep.Ladders = ladders.ladders(&run.Rules)
			}
			if hashes != nil {
				rep.Run = &report.RunInfo{Version: kidscopeVersion(), Options: runOptions(&in, &rf, &opt), Inputs: hashes.wait()}
			}
			err = report.WriteAnalysis(cmd.OutOrStdout(), rep, report.AnalysisOptions{
				Format: format, UUID: form, Verbose: rf.verbose, Color: colorWanted(cmd, cmd.OutOrStdout()),
				SARIF: report.SARIFInvocation{ToolVersion: kidscopeVersion(), ExitCode: exit,
					Successful: exit == exitOK || exit == exitFindings}})
			if err == nil && view != nil {
				err = report.WriteConnView(cmd.OutOrStdout(), view.view(&run), colorWanted(cmd, cmd.OutOrStdout()))
			}
			if err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
			}
			if err := errors.Join(af.write(cmd, files, &run.Rules),
				xf.write(cmd, files, &run.Rules, af.writeSecrets, af.force)); err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			return finalStatus(&run.Summary, code)
		},
	}
	in.register(cmd, "table, json, ndjson, csv, markdown, sarif (SARIF 2.1.0, for GitHub code scanning and CI), html (one self-contained file with ladder diagrams)")
	in.registerWorkers(cmd)
	rf.register(cmd)
	pf.register(cmd)
	af.register(cmd)
	xf.register(cmd)
	sf.register(cmd, true)
	cmd.Flags().StringSliceVar(&conns, "connection", nil, "report only these connections, by number (the connections table's #), repeatable")
	cmd.Flags().BoolVar(&noHash, "no-hash", false,
		"json, ndjson: do not compute the SHA-256 of the inputs (it costs a few seconds of CPU per GB)")
	return cmd
}

// exitCodeOf is the code a run exits with (finalStatus's), known before
// the report is written, for the SARIF log's invocation.
func exitCodeOf(sum *result.Summary, code int) int {
	switch {
	case sum.Interrupted:
		return exitInterrupted
	case code != exitOK:
		return code
	case sum.InputStopped():
		return exitBadInput
	}
	return exitOK
}
