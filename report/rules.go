package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/kidscope/kidscope/rules"
)

// sectionTitles name the catalogue's sections that hold rules. The text
// names the section only: users have kidscope, not the design documents.
var sectionTitles = map[string]string{
	"3": "header rules (KIP-1313)",
	"4": "telemetry rules (KIP-714)",
	"5": "broker and client classification",
	"6": "group membership rules (KIP-394, KIP-848/KIP-1082)",
	"7": "across connections (instance inventory)",
	"8": "what the capture cannot show",
}

func sectionText(s string) string {
	if t, ok := sectionTitles[s]; ok {
		return "§" + s + ", " + t
	}
	return "§" + s
}

func profileText(p string) string {
	switch p {
	case "both":
		return "seed and accepted"
	case "":
		return "any"
	}
	return p
}

// WriteCatalog writes the rule catalogue of `kidscope rules` as a table:
// each rule's ID with its severity, profile and section under it,
// and its one-line summary, laid out for an 80-column terminal.
func WriteCatalog(w io.Writer, rs []rules.Rule) error {
	idW := len("RULE")
	for _, r := range rs {
		idW = max(idW, len(r.ID), len(ruleKind(r)))
	}
	sumW := max(30, termWidth-7-idW)
	g := &grid{header: []string{padRight("RULE", idW) + "\nSEVERITY · PROFILE · §", padRight("SUMMARY", sumW)}}
	for _, r := range rs {
		g.rows = append(g.rows, [][]string{{r.ID, ruleKind(r)}, wrap(r.Summary, sumW)})
	}
	bw := bufio.NewWriter(w)
	if err := renderGrid(bw, g, false); err != nil {
		return err
	}
	fmt.Fprintln(bw, "profile: the KIP-1313 revision a rule applies to (seed, accepted, both; - any).")
	fmt.Fprintln(bw, "kidscope rules ID prints a rule's full text and an example.")
	return bw.Flush()
}

// ruleKind is "error · both · §3".
func ruleKind(r rules.Rule) string {
	p := r.Profile
	if p == "" {
		p = "-"
	}
	return r.Severity.String() + " · " + p + " · §" + r.Section
}

// WriteRule writes one rule's full text for `kidscope rules ID`: severity,
// profile, section, summary, the detail, and the sample scenario that
// shows it with the commands to see it.
func WriteRule(w io.Writer, r rules.Rule) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, r.ID)
	fmt.Fprintf(bw, "  severity  %s\n", r.Severity)
	fmt.Fprintf(bw, "  profile   %s\n", profileText(r.Profile))
	fmt.Fprintf(bw, "  section   %s\n", sectionText(r.Section))
	fmt.Fprintln(bw)
	for _, l := range wrap("Fires when "+r.Summary+".", termWidth-2) {
		fmt.Fprintln(bw, "  "+l)
	}
	if d := strings.TrimSpace(r.Detail); d != "" {
		fmt.Fprintln(bw)
		for _, l := range wrap(d, termWidth-2) {
			fmt.Fprintln(bw, "  "+l)
		}
	}
	if r.Example != "" {
		fmt.Fprintln(bw)
		fmt.Fprintf(bw, "Example: the sample scenario %q shows it. To see it:\n", r.Example)
		fmt.Fprintln(bw, "  kidscope samples DIR")
		fmt.Fprintf(bw, "  kidscope analyze DIR/%s.pcapng\n", r.Example)
	}
	return bw.Flush()
}
