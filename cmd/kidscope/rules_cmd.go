package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

func newRulesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rules [ID]",
		Short: "List the rules kidscope checks, or print one rule's full text",
		Long: `rules lists the rule catalogue: each rule's ID (what findings, --rule and
--skip-rule use), severity, KIP-1313 profile, section and a one-line summary.
With an ID it prints the rule's full text and the sample scenario that shows it.`,
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
			return writeOutput(report.WriteRule(out, r))
		},
	}
}

// writeOutput turns an error writing to standard output into exit 2.
func writeOutput(err error) error {
	if err != nil {
		return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
	}
	return nil
}
