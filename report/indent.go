package report

import "bufio"

// indentJSON writes to w the compact JSON document src indented as
// json.Indent(dst, src, "", "  ") would indent it (a report of 20,000
// connections is megabytes: it is written as it is indented, not held). json.Indent runs every
// byte through encoding/json's validating scanner, which made it most of the
// time of writing a report with tens of thousands of connections; src here
// comes straight from encoding/json, so it is valid and holds no
// whitespace outside strings, and a byte loop that only tracks strings
// suffices.
func indentJSON(w *bufio.Writer, src []byte) error {
	depth := 0
	newline := func() {
		w.WriteByte('\n')
		for range depth {
			w.WriteString("  ")
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			// Copy the string through its closing quote; a backslash
			// escapes the byte after it.
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(src))
			w.Write(src[i:end])
			i = end - 1
		case '{', '[':
			w.WriteByte(c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				w.WriteByte(src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			w.WriteByte(c)
		case ',':
			w.WriteByte(c)
			newline()
		case ':':
			w.WriteString(": ")
		default:
			w.WriteByte(c)
		}
	}
	// A bufio.Writer keeps its first error and returns it here.
	return w.Flush()
}
