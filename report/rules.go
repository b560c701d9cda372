package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/kidscope/kidscope/report/internal/textdoc"

	"github.com/kidscope/kidscope/rules"
)

func profileText(p string) string {
	switch p {
	case "both":
		return "seed and accepted"
	case "":
		return "any (the rule does not depend on the KIP-1313 profile)"
	}
	return p
}

// RuleExample is the sample scenario that shows a rule, as the caller
// found it (package report does not build scenarios): its name and
// description, the file `kidscope samples DIR` writes it to, the flags
// analyze needs to show the finding (-v for info findings, -p for a
// scenario's ports), and one finding of the rule that analyze reports on
// it, in FormatFindingText's form with DIR/ before the file name ("" when
// not known).
type RuleExample struct {
	Scenario    string
	Description string
	File        string
	Flags       []string
	Finding     string
}

// WriteCatalog writes the rule catalogue of `kidscope rules`: a table per
// group of rules, each rule's ID with its severity and profile under it
// and its one-line summary, laid out for an 80-column terminal, then what
// the profiles mean.
func WriteCatalog(w io.Writer, rs []rules.Rule) error {
	idW := len("RULE")
	for _, r := range rs {
		idW = max(idW, len(r.ID), len(ruleKind(r)))
	}
	sumW := max(30, termWidth-7-idW)
	bw := bufio.NewWriter(w)
	for i, g := range groupRules(rs) {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintln(bw, shown(g[0].Group.Title()))
		t := &textdoc.Grid{Header: []string{textdoc.PadRight("RULE", idW) + "\nSEVERITY · PROFILE", textdoc.PadRight("SUMMARY", sumW)}}
		for _, r := range g {
			t.Rows = append(t.Rows, [][]string{{r.ID, ruleKind(r)}, textdoc.Wrap(r.Summary, sumW)})
		}
		if err := textdoc.WriteGrid(bw, t, false); err != nil {
			return err
		}
		// The letters and names the summaries use (H, R, B, ZERO, ...)
		// are defined under the table that uses them.
		if terms := termsUsedBy(g); len(terms) > 0 {
			writeTerms(bw, terms, true)
		}
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "Profiles: KIP-1313 exists in two revisions, and a rule's profile is the one it")
	fmt.Fprintln(bw, "applies under (both: either; -: the rule does not depend on it).")
	var terms []rules.Term
	for _, t := range rules.Glossary() {
		if t.Profile {
			terms = append(terms, t)
		}
	}
	writeTerms(bw, terms, true)
	fmt.Fprintln(bw, "kidscope rules ID explains one rule: what fires, why it matters, how to fix it,")
	fmt.Fprintln(bw, "what the profiles mean, and a sample capture that shows it.")
	return bw.Flush()
}

// termsUsedBy are the glossary's words (not the profiles, which the
// catalogue explains once at its end) that the summaries of rs use.
func termsUsedBy(rs []rules.Rule) []rules.Term {
	var out []rules.Term
	for _, t := range rules.Glossary() {
		if t.Profile || len(t.Words) == 0 {
			continue
		}
		for _, r := range rs {
			if usesAny(r.Summary, t.Words) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// groupRules cuts the catalogue, which is in group order, into runs of
// one group each.
func groupRules(rs []rules.Rule) [][]rules.Rule {
	var out [][]rules.Rule
	for i, r := range rs {
		if i == 0 || r.Group != rs[i-1].Group {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], r)
	}
	return out
}

// ruleKind is "error · both".
func ruleKind(r rules.Rule) string {
	p := r.Profile
	if p == "" {
		p = "-"
	}
	return r.Severity.String() + " · " + p
}

// writeTerms writes terms with their meanings (short or full) under two
// spaces of indent, the meanings wrapped in a column of their own.
func writeTerms(bw *bufio.Writer, terms []rules.Term, short bool) {
	nameW := 0
	for _, t := range terms {
		nameW = max(nameW, len([]rune(t.Name)))
	}
	for _, t := range terms {
		text := t.Meaning
		if short {
			text = t.Short
		}
		for i, l := range textdoc.Wrap(text, termWidth-4-nameW) {
			name := ""
			if i == 0 {
				name = t.Name
			}
			fmt.Fprintln(bw, shown("  "+textdoc.PadRight(name, nameW)+"  "+l))
		}
	}
}

// A ruleDoc is one rule's full text, made once and written either for a
// terminal (WriteRule) or as Markdown (WriteRulesMarkdown), so that the
// two never say different things.
type ruleDoc struct {
	id    string
	facts [][2]string // severity, group, profile
	parts []rulePart
}

// rulePart is a titled part of a rule's text: paragraphs, terms with
// their meanings, or an example.
type rulePart struct {
	title   string
	paras   []string
	terms   []rules.Term
	example *RuleExample
}

func newRuleDoc(r rules.Rule, ex *RuleExample) ruleDoc {
	d := ruleDoc{id: r.ID, facts: [][2]string{
		{"severity", r.Severity.String()},
		{"group", r.Group.Title()},
		{"profile", profileText(r.Profile)},
	}}
	fires := []string{sentence(r.Summary)}
	if s := strings.TrimSpace(r.Detail); s != "" {
		fires = append(fires, s)
	}
	d.parts = append(d.parts, rulePart{title: "What fires", paras: fires})
	if s := strings.TrimSpace(r.Why); s != "" {
		d.parts = append(d.parts, rulePart{title: "Why it matters", paras: []string{s}})
	}
	if s := strings.TrimSpace(r.Fix); s != "" {
		d.parts = append(d.parts, rulePart{title: "How to fix it", paras: []string{s}})
	}
	if r.Caveat != "" {
		d.parts = append(d.parts, rulePart{title: "Caveat", paras: []string{
			"Each finding of this rule adds: \"" + r.Caveat + "\"."}})
	}
	var profiles, words []rules.Term
	text := r.Summary + " " + r.Detail + " " + r.Why + " " + r.Fix
	for _, t := range rules.Glossary() {
		switch {
		case t.Profile && r.Profile != "":
			profiles = append(profiles, t)
		case !t.Profile && usesAny(text, t.Words):
			words = append(words, t)
		}
	}
	if len(profiles) > 0 {
		d.parts = append(d.parts, rulePart{title: "Profiles", terms: profiles})
	}
	if len(words) > 0 {
		d.parts = append(d.parts, rulePart{title: "Words", terms: words})
	}
	if ex != nil && ex.Scenario != "" {
		d.parts = append(d.parts, rulePart{title: "Example", example: ex})
	}
	return d
}

// sentence makes a summary, which findings use in the middle of their
// message, a sentence of its own.
func sentence(s string) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) == 0 {
		return ""
	}
	r[0] = unicode.ToUpper(r[0])
	return string(r) + "."
}

// usesAny says whether text holds one of words as a whole word, so that
// ONE is not found in NONE.
func usesAny(text string, words []string) bool {
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' }
	for _, w := range words {
		for i := 0; ; {
			j := strings.Index(text[i:], w)
			if j < 0 {
				break
			}
			at, end := i+j, i+j+len(w)
			before, after := ' ', ' '
			if at > 0 {
				before = lastRune(text[:at])
			}
			if end < len(text) {
				after = []rune(text[end:])[0]
			}
			if !isWord(before) && !isWord(after) {
				return true
			}
			i = at + 1
		}
	}
	return false
}

func lastRune(s string) rune {
	r := []rune(s)
	return r[len(r)-1]
}

// analyzeCommand is the command that shows the example:
// kidscope analyze [FLAGS] DIR/NAME.pcapng.
func analyzeCommand(ex *RuleExample) string {
	f := ex.File
	if f == "" {
		f = ex.Scenario + ".pcapng"
	}
	return strings.Join(append(append([]string{"kidscope", "analyze"}, ex.Flags...), "DIR/"+f), " ")
}

// WriteRule writes one rule's full text for `kidscope rules ID`: its
// severity, group and profile; what fires, why it matters, how to fix
// it and its caveat; what the profiles and the words it uses mean; and the
// sample scenario that shows it, the commands to see it and the finding
// analyze reports there. ex may be nil.
func WriteRule(w io.Writer, r rules.Rule, ex *RuleExample) error {
	d := newRuleDoc(r, ex)
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, d.id)
	for _, f := range d.facts {
		fmt.Fprintln(bw, shown(fmt.Sprintf("  %-9s %s", f[0], f[1])))
	}
	para := func(s string, indent string) {
		for _, l := range textdoc.Wrap(s, termWidth-len(indent)) {
			fmt.Fprintln(bw, shown(indent+l))
		}
	}
	for _, p := range d.parts {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, p.title)
		for i, s := range p.paras {
			if i > 0 {
				fmt.Fprintln(bw)
			}
			para(s, "  ")
		}
		writeTerms(bw, p.terms, false)
		if ex := p.example; ex != nil {
			intro := fmt.Sprintf("The sample scenario %s shows it", ex.Scenario)
			if ex.Description != "" {
				intro += ": " + ex.Description
			}
			para(intro+". To see it:", "  ")
			fmt.Fprintln(bw, "    kidscope samples DIR")
			fmt.Fprintln(bw, shown("    "+analyzeCommand(ex)))
			if ex.Finding != "" {
				para("It reports, among its findings:", "  ")
				para(ex.Finding, "    ")
			}
		}
	}
	return bw.Flush()
}

// WriteRulesMarkdown writes the whole catalogue as one Markdown document
// (docs/rules.md): an index table per group of rules, what the words of
// the rules mean, and each rule's full text as WriteRule writes it, with
// the examples of exs (by rule ID; a rule without one has no example).
// Every text is escaped: a rule's words are literal, never Markdown.
func WriteRulesMarkdown(w io.Writer, rs []rules.Rule, exs map[string]RuleExample) error {
	bw := bufio.NewWriter(w)
	md := func(s string) string { return textdoc.MarkdownEscape(shown(s)) }
	fmt.Fprintln(bw, "# The rules kidscope checks")
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "<!-- Generated from kidscope's rule catalogue: go test ./cmd/kidscope -run TestRulesDocCurrent -update. Do not edit. -->")
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "Every finding of `kidscope analyze` and `kidscope live` names one of these rules. "+
		"This page says the same as `kidscope rules` (the list) and `kidscope rules ID` (one rule), from the same catalogue. "+
		"`--rule` and `--skip-rule` take these IDs, or globs such as `telemetry-*`.")
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "Severities: **error**, a request or response that a compliant peer must reject or must not send; "+
		"**warning**, suspicious, or a rule whose source text is not settled; "+
		"**info**, a classification or a limit of what the capture can show.")
	for _, g := range groupRules(rs) {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "## "+md(g[0].Group.Title()))
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "| Rule | Severity | Profile | Fires when |")
		fmt.Fprintln(bw, "|---|---|---|---|")
		for _, r := range g {
			p := r.Profile
			if p == "" {
				p = "-"
			}
			fmt.Fprintf(bw, "| [%s](#%s) | %s | %s | %s |\n", codeSpan(r.ID), anchor(r.ID), r.Severity, md(p), md(r.Summary))
		}
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "## Words")
	for _, t := range rules.Glossary() {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "### "+md(t.Name))
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, mdPara(md(t.Meaning)))
	}
	for _, g := range groupRules(rs) {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "## "+md(g[0].Group.Title())+": each rule")
		for _, r := range g {
			var ex *RuleExample
			if e, ok := exs[r.ID]; ok {
				ex = &e
			}
			writeRuleMarkdown(bw, newRuleDoc(r, ex), md)
		}
	}
	return bw.Flush()
}

func writeRuleMarkdown(bw *bufio.Writer, d ruleDoc, md func(string) string) {
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "### "+codeSpan(d.id))
	fmt.Fprintln(bw)
	for _, f := range d.facts {
		fmt.Fprintf(bw, "- %s: %s\n", md(f[0]), md(f[1]))
	}
	for _, p := range d.parts {
		fmt.Fprintln(bw)
		if len(p.paras) > 0 {
			for i, s := range p.paras {
				if i > 0 {
					fmt.Fprintln(bw)
				}
				if i == 0 {
					fmt.Fprintf(bw, "**%s.** %s\n", md(p.title), md(s))
					continue
				}
				fmt.Fprintln(bw, mdPara(md(s)))
			}
		}
		if len(p.terms) > 0 {
			// The document explains each word once, under Words; a rule
			// links to it rather than repeating it.
			links := make([]string, len(p.terms))
			for i, t := range p.terms {
				links[i] = "[" + md(t.Name) + "](#" + headingAnchor(t.Name) + ")"
			}
			fmt.Fprintf(bw, "**%s.** %s\n", md(p.title), strings.Join(links, "; "))
		}
		if ex := p.example; ex != nil {
			intro := "The sample scenario " + codeSpan(ex.Scenario) + " shows it"
			if ex.Description != "" {
				intro += ": " + md(ex.Description)
			}
			fmt.Fprintf(bw, "**%s.** %s. To see it:\n\n", md(p.title), intro)
			writeFence(bw, "sh", "kidscope samples DIR\n"+shown(analyzeCommand(ex)))
			if ex.Finding != "" {
				fmt.Fprintln(bw)
				fmt.Fprintln(bw, "It reports, among its findings:")
				fmt.Fprintln(bw)
				writeFence(bw, "text", shown(ex.Finding))
			}
		}
	}
}

// mdPara keeps an escaped paragraph from starting a list, a thematic
// break or a setext heading: mdEscape leaves -, +, = and "1." alone, which
// only mean something at the start of a line.
func mdPara(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	switch {
	case s == "":
	case strings.ContainsRune("-+=", rune(s[0])):
		return "\\" + s
	case i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')'):
		return s[:i] + "\\" + s[i:]
	}
	return s
}

// anchor is the id GitHub gives the heading "### `id`": rule IDs are
// lower case letters, digits and hyphens, which it keeps as they are.
func anchor(id string) string { return id }

// headingAnchor is the id GitHub gives a heading of plain words: lower
// case, punctuation dropped, spaces made hyphens ("ZERO, ONE": zero-one).
func headingAnchor(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// codeSpan puts s in a code span whose backtick run is longer than any in
// s, so that s stays literal whatever it holds.
func codeSpan(s string) string {
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return ticks + shown(s) + ticks
}

// writeFence writes text as a fenced code block whose fence is longer than
// any run of backticks in it.
func writeFence(bw *bufio.Writer, lang, text string) {
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	fmt.Fprintln(bw, fence+lang)
	fmt.Fprintln(bw, text)
	fmt.Fprintln(bw, fence)
}

func longestRun(s string, c rune) int {
	best, n := 0, 0
	for _, r := range s {
		if r == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
