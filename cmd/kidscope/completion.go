package main

import (
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/rules"
)

// fixed completes a flag's value from a fixed list (the choices that
// start with what is typed), and never with file names.
func fixed(choices ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, c := range choices {
			if strings.HasPrefix(c, prefix) {
				out = append(out, c)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// ruleIDs completes rule IDs, with the rule's description beside each
// (shells that show descriptions show it), and the glob of each family
// (header-*, telemetry-*, …) that --rule and --skip-rule take too.
func ruleIDs(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	families := map[string]bool{}
	for _, r := range rules.Catalog() {
		if fam, _, ok := strings.Cut(r.ID, "-"); ok && !families[fam] && strings.HasPrefix(fam+"-*", prefix) {
			families[fam] = true
			out = append(out, cobra.CompletionWithDesc(fam+"-*", "every "+fam+" rule"))
		}
		if strings.HasPrefix(r.ID, prefix) {
			out = append(out, cobra.CompletionWithDesc(r.ID, r.Summary))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// interfaces completes -i with the host's interfaces, and any.
func interfaces(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if strings.HasPrefix("any", prefix) {
		out = append(out, cobra.CompletionWithDesc("any", "every interface"))
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, prefix) {
			out = append(out, i.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeFlags registers the completion of every flag value kidscope
// knows the values of, on each command that has the flag; the flags that
// name files complete file names (cobra's default).
func completeFlags(root *cobra.Command) {
	severities := []string{"info", "warning", "error"}
	byFlag := map[string]cobra.CompletionFunc{
		"profile":        fixed("auto", "seed", "accepted"),
		"fail-on":        fixed(append(severities, "never")...),
		"min-severity":   fixed(severities...),
		"uuid":           fixed("kafka", "rfc4122"),
		"port":           fixed("auto", "9092"),
		"rule":           ruleIDs,
		"skip-rule":      ruleIDs,
		"interface":      interfaces,
		"memory-limit":   fixed("200MiB", "1GiB", "0"),
		"write-max-size": fixed("100MB", "1GB"),
		"header-v3":      cobra.NoFileCompletions,
		"filter":         cobra.NoFileCompletions,
		"workers":        cobra.NoFileCompletions,
		"duration":       fixed("10s", "1m", "10m", "1h"),
		"idle-timeout":   fixed("10m"),
		"metrics-addr":   fixed("127.0.0.1:9464"),
	}
	for _, cmd := range root.Commands() {
		for name, fn := range byFlag {
			if cmd.Flags().Lookup(name) != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, fn)
			}
		}
		if cmd.Flags().Lookup("output") != nil {
			formats := []string{"table", "json", "ndjson", "csv", "markdown"}
			switch cmd.Name() {
			case "frames":
				formats = []string{"table", "tsv", "csv", "fields", "json", "ndjson"}
			case "analyze":
				formats = append(formats, "sarif", "html")
			}
			_ = cmd.RegisterFlagCompletionFunc("output", fixed(formats...))
		}
		for _, name := range []string{"tls-keylog", "write", "bpf-raw", "annotate"} {
			if cmd.Flags().Lookup(name) != nil {
				_ = cmd.MarkFlagFilename(name)
			}
		}
		if cmd.Flags().Lookup("extract") != nil {
			_ = cmd.MarkFlagDirname("extract")
		}
		switch cmd.Name() {
		case "rules":
			cmd.ValidArgsFunction = func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				ids, dir := ruleIDs(c, args, prefix)
				var out []cobra.Completion
				for _, id := range ids {
					if !strings.Contains(string(id), "*") {
						out = append(out, id)
					}
				}
				return out, dir
			}
		case "samples":
			cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveFilterDirs
			}
		}
	}
}
