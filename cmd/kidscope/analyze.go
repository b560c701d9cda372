package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

// ruleFlags are the flags that choose rules and severities.
type ruleFlags struct {
	profile     string
	rules       []string
	skipRules   []string
	minSeverity string
	failOn      string
	verbose     bool
}

func (f *ruleFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", "auto", "KIP-1313 revision to judge by: seed, accepted or auto (per connection)")
	fl.StringSliceVar(&f.rules, "rule", nil, "only these rules (IDs or globs such as telemetry-*), repeatable")
	fl.StringSliceVar(&f.skipRules, "skip-rule", nil, "leave out these rules (IDs or globs), repeatable")
	fl.StringVar(&f.minSeverity, "min-severity", "info", "report findings of this severity or higher: info, warning, error")
	fl.StringVar(&f.failOn, "fail-on", "error", "exit 1 when a finding of this severity or higher exists: info, warning, error, never")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "show info findings in the table too")
}

// ruleFilter is the parsed form of ruleFlags.
type ruleFilter struct {
	profile  rules.ProfileChoice
	keep     map[string]bool // nil: every rule
	skip     map[string]bool
	min      rules.Severity
	failOn   rules.Severity
	failNone bool
}

func (f *ruleFlags) parse() (ruleFilter, error) {
	var rf ruleFilter
	switch f.profile {
	case "auto":
		rf.profile = rules.ProfileAuto
	case "seed":
		rf.profile = rules.ForceSeed
	case "accepted":
		rf.profile = rules.ForceAccepted
	default:
		return rf, fmt.Errorf("--profile %q: want seed, accepted or auto", f.profile)
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
	if rf.keep, err = sel("--rule", f.rules); err != nil {
		return rf, err
	}
	if rf.skip, err = sel("--skip-rule", f.skipRules); err != nil {
		return rf, err
	}
	var ok bool
	if rf.min, ok = rules.ParseSeverity(f.minSeverity); !ok {
		return rf, fmt.Errorf("--min-severity %q: want info, warning or error", f.minSeverity)
	}
	if f.failOn == "never" {
		rf.failNone = true
	} else if rf.failOn, ok = rules.ParseSeverity(f.failOn); !ok {
		return rf, fmt.Errorf("--fail-on %q: want info, warning, error or never", f.failOn)
	}
	return rf, nil
}

// wants reports whether a finding passes the filter.
func (rf *ruleFilter) wants(f *rules.Finding) bool {
	if rf.keep != nil && !rf.keep[f.Rule] || rf.skip[f.Rule] {
		return false
	}
	return f.Severity >= rf.min
}

// filter keeps the findings that pass.
func (rf *ruleFilter) filter(res *rules.Result) {
	kept := res.Findings[:0]
	for _, f := range res.Findings {
		if rf.wants(&f) {
			kept = append(kept, f)
		}
	}
	res.Findings = kept
}

// failing reports whether a finding at or above --fail-on exists.
func (rf *ruleFilter) failing(res *rules.Result) bool {
	if rf.failNone {
		return false
	}
	if res.Dropped.Findings > 0 && rf.keep == nil && rf.skip == nil {
		// Findings past the cap are gone from the list but still counted.
		for s := rf.failOn; s <= rules.Error; s++ {
			if res.FindingsBySeverity[s] > 0 {
				return true
			}
		}
	}
	for _, f := range res.Findings {
		if f.Severity >= rf.failOn {
			return true
		}
	}
	return false
}

func newAnalyzeCmd() *cobra.Command {
	var in inputFlags
	var rf ruleFlags
	cmd := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Check captures against kidscope's rules and print the report",
		Long: `analyze reads pcap and pcapng files (gzip too; "-" is standard input), decodes every
Kafka connection and reports, per connection, violations of the client-instance-ID
rules (KIP-1313), telemetry ID mismatches (KIP-714) and group member-ID mistakes
(KIP-394, KIP-1082), with the evidence to check them in Wireshark.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 bad usage or
unreadable input; 130 interrupted.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			opt, form, err := in.options(files)
			if err != nil {
				return usageError(err)
			}
			stopGovernor, err := in.applyMemoryLimit(cmd)
			if err != nil {
				return usageError(err)
			}
			defer stopGovernor()
			filter, err := rf.parse()
			if err != nil {
				return usageError(err)
			}
			format := in.output
			if !report.ValidAnalyzeFormat(format) {
				return usageError(fmt.Errorf("-o %q: analyze writes table, json, ndjson, csv or markdown", format))
			}
			opt.Stdin = cmd.InOrStdin()
			bar := newProgressBar(files, in.noProgress)
			if bar != nil {
				opt.OnTick = bar.tick
			}
			sink := newRuleSink(rules.Options{Profile: filter.profile})
			sum, err := pipeline.Run(cmd.Context(), opt, sink)
			bar.clear()
			if err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			res := sink.engine.Result()
			filter.filter(&res)
			rep := &report.Analysis{Files: displayNames(files), Summary: sum, Result: res}
			err = report.WriteAnalysis(cmd.OutOrStdout(), rep, report.AnalysisOptions{
				Format: format, UUID: form, Verbose: rf.verbose, Color: colorWanted(cmd.OutOrStdout())})
			if err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
			}
			code := exitOK
			if filter.failing(&res) {
				code = exitFindings
			}
			return finalStatus(&sum, code)
		},
	}
	in.register(cmd, "table, json, ndjson, csv, markdown")
	in.registerWorkers(cmd)
	rf.register(cmd)
	return cmd
}

// ruleSink feeds the pipeline's events to the rules engine.
type ruleSink struct {
	engine *rules.Engine
	// onFinding, when set, sees each finding as it is made (live).
	onFinding func(rules.Finding)
	// onEvent, when set, sees each decoder event (live metrics).
	onEvent func(c *pipeline.Conn, e *decode.Event)
}

func newRuleSink(opt rules.Options) *ruleSink {
	return &ruleSink{engine: rules.New(opt)}
}

func (s *ruleSink) Open(c *pipeline.Conn) {
	s.deliver(s.engine.Open(rules.ConnInfo{ID: c.ID, Key: rules.ConnKey{Client: c.Client, Broker: c.Broker},
		MidStream: c.MidStream, First: c.First}))
}

func (s *ruleSink) Event(c *pipeline.Conn, e *decode.Event) {
	if s.onEvent != nil {
		s.onEvent(c, e)
	}
	s.deliver(s.engine.Event(c.ID, e))
}

func (s *ruleSink) Gap(c *pipeline.Conn, side decode.Side, at decode.Where) {
	s.engine.Gap(c.ID, side, at)
}

func (s *ruleSink) Closed(c *pipeline.Conn) {
	end := c.End
	ci := rules.CloseInfo{Counters: end.Counters, NotKafka: c.NotKafka, ClientID: end.ClientID}
	if end.Close.Seen && end.Close.By == reassembly.ToClient {
		ci.ByBroker = true
		ci.At = decode.Where{File: end.Close.At.File, Frame: end.Close.At.Frame, Time: end.Close.At.Time}
	}
	s.deliver(s.engine.Close(c.ID, ci))
}

func (s *ruleSink) deliver(fs []rules.Finding) {
	if s.onFinding == nil {
		return
	}
	for _, f := range fs {
		s.onFinding(f)
	}
}

// colorWanted: colour only on a terminal, and never with NO_COLOR set.
func colorWanted(w any) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return isTerminal(w)
}
