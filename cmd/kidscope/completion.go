package main

import "github.com/spf13/cobra"

// fixed completes a flag's value from a fixed list, and never with file
// names.
func fixed(choices ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp)
}
