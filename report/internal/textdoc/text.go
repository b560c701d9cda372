package textdoc

import (
	"strings"
	"unicode/utf8"
)

// Shorten cuts s to at most n characters, the last being "…".
func Shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Wrap breaks s into lines of at most width characters at spaces; a word
// longer than width is cut.
func Wrap(s string, width int) []string {
	if width < 1 {
		width = 1
	}
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		w := []rune(word)
		if len(cur) > 0 && len(cur)+1+len(w) <= width {
			cur = append(append(cur, ' '), w...)
			continue
		}
		if len(cur) > 0 {
			lines = append(lines, string(cur))
			cur = nil
		}
		for len(w) > width {
			lines = append(lines, string(w[:width]))
			w = w[width:]
		}
		cur = w
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

// PadRight pads s with spaces to width characters.
func PadRight(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}
