package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/samples"
)

// defaultSamplesDir is where `kidscope samples` writes when given no DIR.
const defaultSamplesDir = "samples-out"

func newSamplesCmd() *cobra.Command {
	var list bool
	cmd := &cobra.Command{
		Use:   "samples [DIR]",
		Short: "Write the scenario captures, each with the findings it must produce",
		Long: `samples writes every scenario of kidscope's test suite into DIR (default ` + defaultSamplesDir + `,
created if missing): NAME.pcapng (or .pcap), a small realistic capture, and NAME.expect.json,
the findings kidscope must report on it (rule, client, frame), the profile each connection is
judged by and each broker's KIP-1313 verdict, with a one-line description. One line is printed
per file written. The scenarios cover every rule and every row of the seed's
GetTelemetrySubscriptions table; samples/README.md in the source lists them.

Try: kidscope samples /tmp/ks && kidscope analyze /tmp/ks/hdr-seed-changed.pcapng`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if list {
				for _, s := range samples.All() {
					fmt.Fprintf(out, "%-34s %s\n", s.Name, s.Description)
				}
				return nil
			}
			dir := defaultSamplesDir
			if len(args) == 1 {
				dir = args[0]
			}
			ws, err := samples.WriteAll(dir)
			for _, w := range ws {
				fmt.Fprintf(out, "%s\t%d bytes\n", w.Path, w.Bytes)
			}
			if err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("samples: %w", err)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&list, "list", "l", false, "list the scenarios (name and description) instead of writing them")
	return cmd
}
