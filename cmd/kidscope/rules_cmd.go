package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
	"github.com/kidscope/kidscope/samples"
)

func newRulesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rules [ID]",
		Short: "List the rules kidscope checks, or explain one rule",
		Long: `rules lists the rule catalogue by group: each rule's ID (what findings, --rule and
--skip-rule use), severity, KIP-1313 profile and a one-line summary, then what the
profiles (seed, accepted, auto) mean.

With an ID it explains the rule: what fires, why it matters (what breaks for the
operator), how to fix it on the client or the broker, its caveat, what the profile
and the other words it uses mean, and the sample scenario that shows it: the commands
to write and analyze that capture, and the finding analyze reports on it.

docs/rules.md in the source is the same text for every rule.`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var ids []string
			for _, r := range rules.Catalog() {
				ids = append(ids, r.ID+"\t"+r.Summary)
			}
			return ids, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 0 {
				return writeOutput(report.WriteCatalog(out, rules.Catalog()))
			}
			r, ok := rules.Lookup(args[0])
			if !ok {
				return usageError(fmt.Errorf("no rule %q (kidscope rules lists them)", args[0]))
			}
			// An example that cannot be shown leaves the rest of the text
			// worth printing; the tests see that every one can.
			ex, _ := ruleExample(cmd.Context(), r)
			return writeOutput(report.WriteRule(out, r, ex))
		},
	}
}

// ruleExample finds the sample scenario a rule names and, by building its
// capture in memory and analysing it as `kidscope analyze -p PORTS` would
// (a few milliseconds), the first finding of the rule on it. The example
// is what the binary does, not a text that could drift from it. nil: the
// rule names no scenario.
func ruleExample(ctx context.Context, r rules.Rule) (*report.RuleExample, error) {
	if r.Example == "" {
		return nil, nil
	}
	s, ok := samples.Lookup(r.Example)
	if !ok {
		return nil, fmt.Errorf("%s: no sample scenario %q", r.ID, r.Example)
	}
	ex := &report.RuleExample{Scenario: s.Name, Description: s.Description}
	b, err := samples.Build(s)
	if err != nil {
		return ex, fmt.Errorf("%s: build %s: %w", r.ID, s.Name, err)
	}
	ex.File = b.File
	var specs []string
	for _, p := range b.Expect.Ports {
		specs = append(specs, strconv.Itoa(int(p)))
	}
	ports, err := reassembly.ParsePorts(specs)
	if err != nil {
		return ex, fmt.Errorf("%s: %s ports: %w", r.ID, s.Name, err)
	}
	// The table shows info findings with -v only; a scenario off the
	// default port needs -p to be read as Kafka at all.
	if r.Severity == rules.Info {
		ex.Flags = append(ex.Flags, "-v")
	}
	if len(specs) != 1 || specs[0] != "9092" {
		ex.Flags = append(ex.Flags, "-p", strings.Join(specs, ","))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	run, err := pipeline.Run(ctx, pipeline.Options{Files: []string{"-"}, Stdin: bytes.NewReader(b.Capture),
		Reassembly: reassembly.Options{Ports: ports}, Rules: &pipeline.Check{}}, nil)
	if err != nil {
		return ex, fmt.Errorf("%s: analyze %s: %w", r.ID, s.Name, err)
	}
	for i := range run.Rules.Findings {
		if f := &run.Rules.Findings[i]; f.Rule == r.ID {
			ex.Finding = report.FormatFindingText([]string{"DIR/" + b.File}, f, false)
			return ex, nil
		}
	}
	return ex, fmt.Errorf("%s: analyze %s reports no finding of the rule", r.ID, s.Name)
}

// writeOutput turns an error writing to standard output into exit 2.
func writeOutput(err error) error {
	if err != nil {
		return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
	}
	return nil
}
