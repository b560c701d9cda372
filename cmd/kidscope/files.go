package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
)

// readsFiles gives a command that reads capture files (analyze, frames)
// what tcpdump and tshark users type: -r FILE, repeatable, beside the
// FILE arguments (the -r files come first, in their order), and a usage
// error that says what is missing when there is neither.
func readsFiles(cmd *cobra.Command) *cobra.Command {
	var read []string
	cmd.Flags().StringArrayVarP(&read, "read-file", "r", nil, "a capture `FILE` to read, as tcpdump -r and tshark -r take it (repeatable; the same as a FILE argument)")
	_ = cmd.MarkFlagFilename("read-file")
	cmd.Use = cmd.Name() + " [flags] FILE..."
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args)+len(read) == 0 {
			return usageError(fmt.Errorf("%s needs at least one capture file", c.Name()))
		}
		return nil
	}
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return run(c, append(slices.Clone(read), args...))
	}
	return cmd
}
