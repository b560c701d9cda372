package report

import (
	"fmt"

	"github.com/kidscope/kidscope/rules"
)

// FindingComments are the packet comments analyze --annotate puts on the
// frames a finding names: at, on the frame it points at, the finding as
// live prints it (rule, severity, frame, connection, message, expected
// and seen in Kafka's UUID form); related, on each related frame in the
// order of f.Related, its role and the frame it supports. Every comment
// starts with "kidscope " and the rule, so that a display filter such as
// frame.comment contains "header-id-changed" finds them all. Strings from
// the capture are escaped (shown): a comment holds no control character.
func FindingComments(files []string, f *rules.Finding) (at string, related []string) {
	at = "kidscope " + FormatFindingText(files, f, false)
	for _, r := range f.Related {
		related = append(related, shown(fmt.Sprintf("kidscope %s %s: the %s frame of the finding at %s:%d",
			f.Severity, f.Rule, roleName(r.Role), fileName(files, f.At.File), f.At.Frame)))
	}
	return at, related
}
