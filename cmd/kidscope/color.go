package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// colorWhen is --color: auto (the default) colours only on a terminal that
// can show it, always and never decide for the user.
type colorWhen string

func (c *colorWhen) String() string { return string(*c) }
func (c *colorWhen) Type() string   { return "when" }
func (c *colorWhen) Set(s string) error {
	switch s {
	case "auto", "always", "never":
		*c = colorWhen(s)
		return nil
	}
	return fmt.Errorf("want auto, always or never")
}

var colorChoices = []string{"auto", "always", "never"}

// registerColor adds --color to every command (a persistent flag of the
// root): the severity words of the table and of live's finding lines are
// the only coloured text.
func registerColor(root *cobra.Command) {
	when := colorWhen("auto")
	root.PersistentFlags().Var(&when, "color", "colour the severity words: auto (on a terminal, unless NO_COLOR is set or TERM is dumb), always, never")
	_ = root.RegisterFlagCompletionFunc("color", fixed(colorChoices...))
}

// colorWanted reports whether text written to w by cmd is coloured.
// always wins over NO_COLOR, as no-color.org asks of a command-line flag.
func colorWanted(cmd *cobra.Command, w any) bool {
	when := "auto"
	if f := cmd.Flag("color"); f != nil {
		when = f.Value.String()
	}
	switch when {
	case "always":
		return true
	case "never":
		return false
	}
	// no-color.org: set and not empty.
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	return canRedraw(w)
}

// canRedraw reports whether w is a terminal that understands escape
// sequences: colours, and the \r\x1b[K that the progress bar and the
// status line redraw themselves with. A dumb terminal (TERM=dumb: Emacs's
// shell, some CI log viewers) shows them as garbage.
func canRedraw(w any) bool {
	return isTerminal(w) && os.Getenv("TERM") != "dumb"
}
