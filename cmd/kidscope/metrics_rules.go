package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/promrules"
)

func newMetricsRulesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "metrics-rules [FILE]",
		Short: "Write Prometheus recording and alerting rules for live's and fleet's metrics",
		Long: `metrics-rules writes the Prometheus rules that go with the metrics kidscope live and
kidscope fleet serve on --metrics-addr: recording rules (findings per rule, the kernel's and
the publisher's drop ratios, requests per API) and alerts, each with a summary and a runbook
line: KidscopeErrorFindings (error findings appearing), KidscopeKernelDrops,
KidscopePublishDrops, KidscopeAgentQuiet (an agent fleet no longer hears from) and
KidscopeBrokerVerdictChanged (a broker's KIP-1313 verdict changed). With FILE they are
written there ("-" or none: standard output); add the file to rule_files in
prometheus.yml. promtool check rules and promtool test rules pass on them.`,
		Example: `  kidscope metrics-rules /etc/prometheus/kidscope.rules.yml
  promtool check rules /etc/prometheus/kidscope.rules.yml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-" {
				_, err := cmd.OutOrStdout().Write(promrules.Rules)
				return err
			}
			if err := os.WriteFile(args[0], promrules.Rules, 0o644); err != nil {
				return inputError(fmt.Errorf("metrics-rules: %w", err))
			}
			return nil
		},
	}
}
