package doctest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Elision is the output line that stands for any number of lines.
const Elision = "..."

// Example is one command of a document with what it must print.
type Example struct {
	File    string   // the document, as named to Parse
	Line    int      // the line of its "$ ", from 1
	Command string   // the command as typed, continuation lines joined by "\n"
	Exit    int      // the exit code its "# exit N" comment names; 0 without one
	Want    []string // the lines it prints, Elision among them

	indent   string // the block's indentation, put back by Rewrite
	lastCmd  int    // index of the command's last line in the document
	outStart int    // index of its first output line
	outEnd   int    // index past its last output line
}

// exitComment is the comment that gives a command's exit code.
var exitComment = regexp.MustCompile(`(?:^|\s)#\s*exit\s+(\d+)\b`)

// fence matches the line that opens or closes a fenced block.
var fence = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^`]*)$")

// commandLike is a line that reads as a kidscope command someone is meant
// to run.
var commandLike = regexp.MustCompile(`^\s*(\$\s*)?(sudo\s+)?(kidscope|go run \./cmd/kidscope)\s`)

// Parse returns the examples of a Markdown document. A block without a
// language tag that holds a command but does not start with "$ " is an
// error, as is a block left open.
func Parse(name string, src string) ([]Example, error) {
	lines := strings.Split(src, "\n")
	var out []Example
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, marker, info := m[1], m[2], strings.TrimSpace(m[3])
		start := i + 1
		end := -1
		for j := start; j < len(lines); j++ {
			if c := fence.FindStringSubmatch(lines[j]); c != nil && c[2][0] == marker[0] && len(c[2]) >= len(marker) && strings.TrimSpace(c[3]) == "" {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("%s:%d: the fenced block is not closed", name, i+1)
		}
		body := make([]string, 0, end-start)
		for _, l := range lines[start:end] {
			body = append(body, strings.TrimPrefix(l, indent))
		}
		i = end
		if info != "" {
			continue
		}
		if len(body) == 0 || !strings.HasPrefix(body[0], "$ ") {
			for k, l := range body {
				if commandLike.MatchString(l) {
					return nil, fmt.Errorf("%s:%d: a command in a block that is no example: start the block with \"$ \" to run it in the tests, or tag it (```sh) to mark it not run", name, start+k+1)
				}
			}
			continue
		}
		exs, err := parseBlock(name, body, start, indent)
		if err != nil {
			return nil, err
		}
		out = append(out, exs...)
	}
	return out, nil
}

// parseBlock reads the examples of one block, whose first line is at
// index first of the document.
func parseBlock(name string, body []string, first int, indent string) ([]Example, error) {
	var out []Example
	for k := 0; k < len(body); {
		if !strings.HasPrefix(body[k], "$ ") {
			return nil, fmt.Errorf("%s:%d: expected a \"$ \" command", name, first+k+1)
		}
		ex := Example{File: name, Line: first + k + 1, indent: indent}
		cmd := []string{strings.TrimPrefix(body[k], "$ ")}
		for strings.HasSuffix(cmd[len(cmd)-1], "\\") {
			k++
			if k >= len(body) {
				return nil, fmt.Errorf("%s:%d: the command goes on past the block", name, ex.Line)
			}
			cmd = append(cmd, body[k])
		}
		ex.Command = strings.Join(cmd, "\n")
		if m := exitComment.FindStringSubmatch(cmd[len(cmd)-1]); m != nil {
			ex.Exit, _ = strconv.Atoi(m[1])
			if ex.Exit == 0 {
				return nil, fmt.Errorf("%s:%d: \"# exit 0\" says nothing: leave it out", name, ex.Line)
			}
		}
		ex.lastCmd = first + k
		k++
		ex.outStart = first + k
		for k < len(body) && !strings.HasPrefix(body[k], "$ ") {
			ex.Want = append(ex.Want, body[k])
			k++
		}
		ex.outEnd = first + k
		out = append(out, ex)
	}
	return out, nil
}

// normalize splits an output into lines without their trailing spaces and
// without trailing empty lines: neither shows in a document.
func normalize(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t\r")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// Lines is an output as Match and Update take it.
func Lines(output string) []string {
	return normalize(strings.Split(output, "\n"))
}

// Match reports whether got is what want shows, an Elision line standing
// for any number of lines.
func Match(want, got []string) bool {
	want, got = normalize(want), normalize(got)
	// memo[i][j]: want[i:] against got[j:] is known not to match.
	failed := map[[2]int]bool{}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if failed[[2]int{i, j}] {
			return false
		}
		ok := false
		switch {
		case i == len(want):
			ok = j == len(got)
		case want[i] == Elision:
			for k := j; k <= len(got) && !ok; k++ {
				ok = match(i+1, k)
			}
		default:
			ok = j < len(got) && want[i] == got[j] && match(i+1, j+1)
		}
		if !ok {
			failed[[2]int{i, j}] = true
		}
		return ok
	}
	return match(0, 0)
}

// Update returns what a document should show for got, in the shape of
// want: without an elision, got; with elisions, as many lines of got's
// start and end as want shows there, elided between them, and each run
// of lines that want shows between two elisions where got still has it.
// It fails when such a run is no longer in got: then a person chooses
// what to show.
func Update(want, got []string) ([]string, error) {
	want, got = normalize(want), normalize(got)
	var runs [][]string
	cur := []string{}
	for _, l := range want {
		if l == Elision {
			runs = append(runs, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, l)
	}
	runs = append(runs, cur)
	if len(runs) == 1 {
		return got, nil
	}
	head, tail := runs[0], runs[len(runs)-1]
	if len(head)+len(tail) >= len(got) {
		return got, nil
	}
	out := append([]string{}, got[:len(head)]...)
	from, to := len(head), len(got)-len(tail)
	for _, run := range runs[1 : len(runs)-1] {
		out = append(out, Elision)
		at := -1
		for k := from; k+len(run) <= to && at < 0; k++ {
			if equal(got[k:k+len(run)], run) {
				at = k
			}
		}
		if at < 0 {
			return nil, fmt.Errorf("the lines shown between elisions are no longer in the output:\n%s", strings.Join(run, "\n"))
		}
		out = append(out, run...)
		from = at + len(run)
	}
	out = append(out, Elision)
	return append(out, got[to:]...), nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Result is what a command printed and its exit code, for Rewrite.
type Result struct {
	Output []string
	Exit   int
}

// Rewrite returns the document with the outputs and exit comments of its
// examples replaced by what results holds for them (by Line); examples
// without a result are left as they are.
func Rewrite(name, src string, results map[int]Result) (string, error) {
	exs, err := Parse(name, src)
	if err != nil {
		return "", err
	}
	lines := strings.Split(src, "\n")
	// From the end, so that the indexes of the earlier examples hold.
	for k := len(exs) - 1; k >= 0; k-- {
		ex := exs[k]
		r, ok := results[ex.Line]
		if !ok {
			continue
		}
		if !Match(ex.Want, r.Output) {
			out, err := Update(ex.Want, r.Output)
			if err != nil {
				return "", fmt.Errorf("%s:%d: %w", name, ex.Line, err)
			}
			repl := make([]string, len(out))
			for i, l := range out {
				if l != "" {
					l = ex.indent + l
				}
				repl[i] = l
			}
			lines = append(lines[:ex.outStart], append(repl, lines[ex.outEnd:]...)...)
		}
		if r.Exit != ex.Exit {
			lines[ex.lastCmd] = setExit(lines[ex.lastCmd], r.Exit)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// setExit puts the exit comment of code on a command's last line.
func setExit(line string, code int) string {
	if m := exitComment.FindStringSubmatchIndex(line); m != nil {
		if code == 0 {
			return strings.TrimRight(line[:m[0]], " ")
		}
		return line[:m[2]] + strconv.Itoa(code) + line[m[3]:]
	}
	if code == 0 {
		return line
	}
	return line + "   # exit " + strconv.Itoa(code)
}
