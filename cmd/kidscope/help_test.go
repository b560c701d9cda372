package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpOf runs `kidscope ARGS --help` in the process and returns what it
// printed.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	root, _ := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--help"))
	if err := root.Execute(); err != nil {
		t.Fatalf("kidscope %s --help: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// Every command's --help fits helpWidth columns, and lists each flag under
// a heading of flagGroups: none falls through to "Other flags" but --help.
func TestHelpGroupsEveryFlag(t *testing.T) {
	root, _ := newRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		t.Run(strings.Join(append([]string{"kidscope"}, path...), "_"), func(t *testing.T) {
			text := helpOf(t, path...)
			for i, l := range strings.Split(text, "\n") {
				if n := utf8.RuneCountInString(l); n > helpWidth {
					t.Errorf("line %d is %d columns: %q", i+1, n, l)
				}
			}
			for _, g := range groupedFlags(c.LocalFlags()) {
				if g.title != otherFlags {
					continue
				}
				g.set.VisitAll(func(f *pflag.Flag) {
					if f.Name != "help" && f.Name != "version" {
						t.Errorf("--%s is in no group of flagGroups", f.Name)
					}
				})
			}
		})
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
}

// Flags are listed under their headings, in flagGroups' order.
func TestHelpHeadings(t *testing.T) {
	text := helpOf(t, "analyze")
	last := -1
	for _, h := range []string{"Input flags:", "Analysis flags:", "Scope flags:", "Output flags:", "Files written:",
		"Limits flags:", "Publish flags (for kidscope fleet):", "Global flags:"} {
		i := strings.Index(text, "\n"+h+"\n")
		if i < 0 || i < last {
			t.Errorf("heading %q missing or out of order", h)
		}
		last = i
	}
	pub := text[strings.Index(text, "Publish flags"):]
	if !strings.Contains(pub, "--publish-tls-ca") || strings.Contains(text[:strings.Index(text, "Publish flags")], "--publish-") {
		t.Error("the --publish-* flags are not all under the publish heading")
	}
}

// live's -o depends on where standard output goes; its help says so once,
// with no "(default "table")" that contradicts it.
func TestLiveOutputDefaultText(t *testing.T) {
	text := helpOf(t, "live")
	i := strings.Index(text, "--output")
	if i < 0 {
		t.Fatal("no --output in live --help")
	}
	flag := text[i:]
	flag = flag[:strings.Index(flag, "\n  -")]
	if strings.Contains(flag, `(default "table")`) || !strings.Contains(strings.Join(strings.Fields(flag), " "), "table on a terminal, else ndjson") {
		t.Errorf("live --output says: %q", flag)
	}
}
