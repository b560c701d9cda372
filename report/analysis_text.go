package report

import (
	"fmt"
	"strings"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/rules"
)

// ANSI colours of the severity words. They are written only when the
// caller asks for colour (a terminal, NO_COLOR unset).
const (
	ansiReset   = "\x1b[0m"
	ansiError   = "\x1b[1;31m"
	ansiWarning = "\x1b[1;33m"
	ansiInfo    = "\x1b[36m"
)

func severityColor(s rules.Severity) string {
	switch s {
	case rules.Error:
		return ansiError
	case rules.Warning:
		return ansiWarning
	}
	return ansiInfo
}

// paint wraps s in the colour of severity s when on.
func paint(text string, s rules.Severity, on bool) string {
	if !on || text == "" {
		return text
	}
	return severityColor(s) + text + ansiReset
}

// answerText is what a finding says of the broker's answer, for people.
func answerText(f *rules.Finding) string {
	if a := answerName(f.Answer); a != "" {
		return a
	}
	return "no top-level error code"
}

// apiText names a finding's request: "Metadata v12, correlation 4".
func apiText(f *rules.Finding) string {
	return fmt.Sprintf("%s v%d, correlation %d", decode.APIName(f.APIKey), f.APIVersion, f.CorrelationID)
}

// FormatFindingText is one finding as one line for a terminal, what `live`
// prints as findings are made: severity, rule, file:frame (related frames),
// connection, the finding's message, expected and seen, and the broker's
// answer. The severity word is coloured when color is true; the rest is
// written through shown.
func FormatFindingText(files []string, f *rules.Finding, color bool) string {
	var b strings.Builder
	b.WriteString(f.Rule)
	fmt.Fprintf(&b, " %s:%d", shown(fileName(files, f.At.File)), f.At.Frame)
	if len(f.Related) > 0 {
		b.WriteString(" (related")
		for i, r := range f.Related {
			if i > 0 {
				b.WriteByte(',')
			}
			if r.Frame.File != f.At.File {
				fmt.Fprintf(&b, " %s:%d", shown(fileName(files, r.Frame.File)), r.Frame.Frame)
			} else {
				fmt.Fprintf(&b, " %d", r.Frame.Frame)
			}
		}
		b.WriteByte(')')
	}
	fmt.Fprintf(&b, " %s → %s: %s", f.Conn.Client, f.Conn.Broker, findingMessage(f))
	expected, seen := valueText(f.Expected, kafkaUUID), valueText(f.Seen, kafkaUUID)
	if expected != "" || seen != "" {
		fmt.Fprintf(&b, "; expected %s, seen %s", orDash(expected), orDash(seen))
	}
	if f.HasAPI {
		fmt.Fprintf(&b, "; broker answer: %s", answerText(f))
	}
	return paint(f.Severity.String(), f.Severity, color) + " " + shown(b.String())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
