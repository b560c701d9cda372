package wsplugin

import (
	"fmt"
	"strings"
)

// MarkdownFields is the table of the plugin's fields and expert items that
// docs/wireshark.md shows (a test holds the two equal).
func MarkdownFields() string {
	var b strings.Builder
	b.WriteString("| field | type | `frames -e` | what |\n|---|---|---|---|\n")
	for _, f := range Fields {
		frames := ""
		if f.Frames != "" {
			frames = "`" + f.Frames + "`"
			if f.RFC4122 {
				frames += " (`--uuid rfc4122`)"
			}
		}
		what := f.Name
		if f.Blurb != "" {
			what = f.Blurb
		}
		fmt.Fprintf(&b, "| `kidscope.%s` | %s | %s | %s |\n", f.Abbrev, f.Type, frames, what)
	}
	for _, e := range Experts() {
		fmt.Fprintf(&b, "| `kidscope.%s` | expert (%s, %s) | | %s |\n", e.Abbrev, strings.ToLower(e.Severity), strings.ToLower(e.Group), e.Text)
	}
	return b.String()
}
