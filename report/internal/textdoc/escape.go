package textdoc

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes a string safe to print. Strings a capture carries (client,
// group and member IDs) are written by whoever reached the broker: every
// control character (C0, DEL, C1), every format character (the bidi
// overrides and isolates, zero-width ones) and every byte that is not UTF-8
// is written as an escape (\x1b, \u202e), so that it can neither move the
// cursor, clear or retitle the terminal, nor reorder what is printed around
// it.
func Escape(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s // printable ASCII: nearly every string
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for s = s[i:]; len(s) > 0; {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// EscapeCell is Escape for a CSV cell, which a spreadsheet takes as a
// formula when it starts with = + - or @ (a tab or carriage return is
// escaped already): such a cell gets a leading apostrophe, as OWASP
// advises.
func EscapeCell(s string) string {
	s = Escape(s)
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		return "'" + s
	}
	return s
}

// MarkdownEscape makes text literal in GitHub-flavoured Markdown, in a
// table cell as in a paragraph or heading: every character that can start
// emphasis, code, a link, an HTML tag or entity, a table cell or a heading
// is backslash-escaped. Controls are Escape's to escape.
func MarkdownEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '~', '#', '&':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
