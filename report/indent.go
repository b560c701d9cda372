package report

// indentJSON appends to dst the compact JSON document src indented as
// json.Indent(dst, src, "", "  ") would indent it. json.Indent runs every
// byte through encoding/json's validating scanner, which made it most of the
// time of writing a report with tens of thousands of connections; src here
// comes straight from encoding/json, so it is valid and holds no
// whitespace outside strings, and a byte loop that only tracks strings
// suffices.
func indentJSON(dst, src []byte) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, ' ', ' ')
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
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
