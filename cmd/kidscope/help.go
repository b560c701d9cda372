package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the most columns a line of --help takes: flag texts are
// wrapped to it, and a test holds the commands' long texts to it.
const helpWidth = 100

// flagGroup is a heading of --help and the flags listed under it, in the
// order a user reaches for them: what to read, how to judge it, which part
// to report, how to write it, the memory it may take, and where to publish.
type flagGroup struct {
	title string
	flags []string
}

// flagGroups names every flag of every command once. A flag that is in
// none is listed under "Other flags", and TestHelpGroupsEveryFlag fails.
var flagGroups = []flagGroup{
	{"Input flags", []string{"read-file", "port", "filter", "bpf-raw", "from", "to", "tls-keylog"}},
	{"Capture flags", []string{"interface", "snaplen", "ring-size", "libpcap", "count", "duration",
		"idle-timeout", "relinquish-privileges"}},
	{"Kafka flags", []string{"brokers", "topic", "group", "from-beginning", "until-end", "window",
		"flush-after", "sasl", "sasl-user", "sasl-password-file", "tls", "tls-ca", "tls-cert", "tls-key",
		"tls-server-name"}},
	{"Analysis flags", []string{"profile", "header-v3", "rule", "skip-rule", "min-severity", "fail-on",
		"require-kafka", "workers"}},
	{"Scope flags", []string{"instance", "client", "broker", "connection", "api"}},
	{"Output flags", []string{"output", "field", "field-option", "uuid", "verbose", "quiet", "no-progress",
		"no-status", "no-hash", "list", "metrics-addr", "color"}},
	{"Files written", []string{"write", "write-files", "write-max-size", "write-rotate-every", "annotate",
		"extract", "finding", "write-secrets", "force", "install"}},
	{"Limits flags", []string{"memory-limit", "max-connections", "max-buffer", "max-buffer-per-connection",
		"max-resync-buffer", "max-body-buffer", "max-frame"}},
	{"Publish flags (for kidscope fleet)", []string{"publish", "publish-topic", "agent", "publish-buffer",
		"publish-tls", "publish-tls-ca", "publish-tls-cert", "publish-tls-key", "publish-tls-server-name",
		"publish-sasl", "publish-sasl-user", "publish-sasl-password-file"}},
}

// otherFlags is the heading of the flags no group names (help only).
const otherFlags = "Other flags"

// flagSection is one heading of --help and its flags.
type flagSection struct {
	title string
	set   *pflag.FlagSet
}

// groupedFlags cuts a command's flags into flagGroups' headings, in their
// order, leaving out empty ones and hidden flags.
func groupedFlags(fs *pflag.FlagSet) []flagSection {
	groupOf := map[string]int{}
	for i, g := range flagGroups {
		for _, name := range g.flags {
			groupOf[name] = i
		}
	}
	sets := make([]*pflag.FlagSet, len(flagGroups)+1)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		i, ok := groupOf[f.Name]
		if !ok {
			i = len(flagGroups)
		}
		if sets[i] == nil {
			sets[i] = pflag.NewFlagSet("", pflag.ContinueOnError)
			sets[i].SortFlags = fs.SortFlags
		}
		sets[i].AddFlag(f)
	})
	var out []flagSection
	for i, s := range sets {
		if s == nil {
			continue
		}
		title := otherFlags
		if i < len(flagGroups) {
			title = flagGroups[i].title
		}
		out = append(out, flagSection{title, s})
	}
	return out
}

// writeUsage is every command's usage: cobra's layout, with the flags
// under headings (groupedFlags) and their texts wrapped to helpWidth.
func writeUsage(c *cobra.Command) error {
	w := c.OutOrStderr()
	fmt.Fprint(w, "Usage:")
	if c.Runnable() {
		fmt.Fprintf(w, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n  %s [command]", c.CommandPath())
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprint(w, "\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		for _, g := range groupedFlags(c.LocalFlags()) {
			writeFlagSet(w, g.title, g.set)
		}
	}
	if c.HasAvailableInheritedFlags() {
		writeFlagSet(w, "Global flags", c.InheritedFlags())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	fmt.Fprintln(w)
	return nil
}

func writeFlagSet(w io.Writer, title string, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "\n\n%s:\n%s", title, strings.TrimRight(fs.FlagUsagesWrapped(helpWidth), " \n"))
}
