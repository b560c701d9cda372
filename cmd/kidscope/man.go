package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// newManCmd is the hidden `kidscope man DIR`: it writes a man page per
// command into DIR, from the command tree itself, so that the pages say
// what the binary does. docs/man holds them for the source (a test keeps
// them current), make install installs those, and someone who ran go
// install writes them with this.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages of every command into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pages, err := manPages(cmd.Root())
			if err != nil {
				return err
			}
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return inputError(err)
			}
			for name, page := range pages {
				if err := os.WriteFile(filepath.Join(args[0], name), page, 0o644); err != nil {
					return inputError(err)
				}
			}
			return nil
		},
	}
}

// manDefault is the annotation of a flag whose default depends on the
// machine (--workers: its cores): the page says it in words, the same on
// every machine.
const manDefault = "kidscope-man-default"

// thDate is the date field of a page's .TH line.
var thDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*") "[^"]*"`)

// manPages returns the page (section 1) of root and of every command
// under it that help lists, by file name (kidscope-analyze.1). A page
// carries no date: cobra would put the day it was made, which would make
// a page differ from the committed one every month; what dates a page is
// the version of kidscope it came with.
func manPages(root *cobra.Command) (map[string][]byte, error) {
	// The version flag and the completion command are added when the
	// command runs; the pages have them too.
	root.DisableAutoGenTag = true
	root.InitDefaultVersionFlag()
	root.InitDefaultCompletionCmd()
	pages := map[string][]byte{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				if err := walk(sub); err != nil {
					return err
				}
			}
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if d, ok := f.Annotations[manDefault]; ok {
				f.DefValue = d[0]
			}
		})
		var buf bytes.Buffer
		header := &doc.GenManHeader{Section: "1", Source: "kidscope", Manual: "kidscope manual", Date: &time.Time{}}
		if err := doc.GenMan(c, header, &buf); err != nil {
			return fmt.Errorf("man page of %s: %w", c.CommandPath(), err)
		}
		pages[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = thDate.ReplaceAll(buf.Bytes(), []byte(`$1 ""`))
		return nil
	}
	return pages, walk(root)
}
