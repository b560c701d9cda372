package report

import "github.com/kidscope/kidscope/report/internal/textdoc"

// shown makes a string from a capture safe to print (textdoc.Escape):
// every control, format character and byte that is not UTF-8 is written
// as an escape. JSON escapes its strings itself and keeps them as sent.
func shown(s string) string { return textdoc.Escape(s) }

// shownCell is shown for a CSV cell, with the spreadsheet-formula guard
// (textdoc.EscapeCell).
func shownCell(s string) string { return textdoc.EscapeCell(s) }

// SafeText is shown for the lines a command writes itself (an input
// problem on stderr names a file and may quote its bytes).
func SafeText(s string) string { return shown(s) }
