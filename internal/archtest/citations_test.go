package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The design contract lives in docs/design/, and nothing in the repository
// may cite a document outside it: whoever maintains kidscope next has the
// repository and nothing else. These tests hold every .go and .md file to
// that.

// designDir is where the design documents are, relative to the module root.
const designDir = "docs/design"

// oldSpec matches a citation of the specification files that were kept
// outside the repository (the rules, protocol, architecture and command-line
// files, upper-case names). docs/design/ has lower-case ones.
var oldSpec = regexp.MustCompile(`\b(?:RULES|PROTOCOL|ARCHITECTURE|CLI)\.md\b`)

// pendingRewrite are the files that still cite the old specification's files
// when this test was written, while other branches edited them: the merge
// rewrites their citations to docs/design/ mechanically and then empties this
// list. A file may leave the list, never join it: the test fails for a file
// on the list that no longer cites them, so the list only shrinks.
var pendingRewrite = []string{}

var (
	// designFile is any mention of a file under docs/design/.
	designFile = regexp.MustCompile(`\bdocs/design/([A-Za-z0-9_-]+)\.md\b`)
	// sectionCite is a citation by section number: "docs/design/rules.md §5",
	// "… §2–3", "… §4.1"; a comment's line break may fall before the §.
	sectionCite = regexp.MustCompile(`\bdocs/design/([A-Za-z0-9_-]+)\.md(?:'s)?[\s/]*§\s*(\d+(?:\.\d+)*)(?:\s*[–-]\s*§?\s*(\d+(?:\.\d+)*))?`)
	// titleCite is a citation by quoted section title, after a comma, a
	// space or a parenthesis: `docs/design/protocol.md, "Request header"`
	// (not the file's name in a list of Go strings).
	titleCite = regexp.MustCompile(`\bdocs/design/([A-Za-z0-9_-]+)\.md(?:'s)?(?:,\s*|\s+\(?|\s*\()"([A-Za-z][^"]{0,99})"`)
	// joinLines joins a text's lines, and the lines of a Go comment, so that
	// a citation broken across lines reads as one.
	joinLines = regexp.MustCompile(`[ \t]*\r?\n[ \t]*(?://[ \t]?)?`)
	// numbered is a heading's section number: "1. Words", "4.1 Telemetry".
	numbered = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.?\s+(.*)$`)
)

// moduleRoot is the directory of go.mod, two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// sourceFiles returns the .go and .md files of the repository, by path
// relative to root with forward slashes, and their text.
func sourceFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// outline is what a design document offers to citations: its section
// numbers and its section titles (lower case).
type outline struct {
	sections map[string]bool
	titles   map[string]bool
}

// outlineOf reads the headings of a Markdown document, outside code fences.
func outlineOf(text string) outline {
	o := outline{sections: map[string]bool{}, titles: map[string]bool{}}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		o.titles[strings.ToLower(heading)] = true
		if m := numbered.FindStringSubmatch(heading); m != nil {
			o.sections[m[1]] = true
			o.titles[strings.ToLower(m[2])] = true
		}
	}
	return o
}

func TestNoCitationOutsideTheRepository(t *testing.T) {
	files := sourceFiles(t, moduleRoot(t))
	pending := map[string]bool{}
	for _, f := range pendingRewrite {
		pending[f] = true
	}
	var citing []string
	for path, text := range files {
		if !oldSpec.MatchString(text) {
			continue
		}
		citing = append(citing, path)
		if !pending[path] {
			t.Errorf("%s cites %q, a file outside the repository: cite %s/ instead (see %s/README.md)",
				path, oldSpec.FindString(text), designDir, designDir)
		}
	}
	for _, f := range pendingRewrite {
		if !slices.Contains(citing, f) {
			t.Errorf("%s no longer cites the old specification: remove it from pendingRewrite", f)
		}
	}
}

func TestDesignCitationsExist(t *testing.T) {
	files := sourceFiles(t, moduleRoot(t))
	outlines := map[string]outline{}
	for path, text := range files {
		if dir, name := filepath.Split(path); dir == designDir+"/" {
			outlines[strings.TrimSuffix(name, ".md")] = outlineOf(text)
		}
	}
	if _, ok := outlines["rules"]; !ok {
		t.Fatalf("%s/rules.md is missing", designDir)
	}
	for path, text := range files {
		for _, m := range designFile.FindAllStringSubmatch(text, -1) {
			if _, ok := outlines[m[1]]; !ok {
				t.Errorf("%s cites %s, which does not exist", path, m[0])
			}
		}
		joined := joinLines.ReplaceAllString(text, " ")
		for _, m := range sectionCite.FindAllStringSubmatch(joined, -1) {
			o, ok := outlines[m[1]]
			if !ok {
				continue // reported above
			}
			for _, n := range m[2:] {
				if n != "" && !o.sections[n] {
					t.Errorf("%s cites %q: %s/%s.md has no section %s", path, m[0], designDir, m[1], n)
				}
			}
		}
		for _, m := range titleCite.FindAllStringSubmatch(joined, -1) {
			o, ok := outlines[m[1]]
			if ok && !o.titles[strings.ToLower(strings.TrimSpace(m[2]))] {
				t.Errorf("%s cites %q: %s/%s.md has no section titled so", path, m[0], designDir, m[1])
			}
		}
	}
}

// The checks above must catch what they are for: a citation of the old
// files, of a missing design file, of a missing section by number or title.
func TestDesignCitationChecksCatch(t *testing.T) {
	o := outlineOf("# T\n\n## 1. Words\n\n```\n## 9. In a fence\n```\n\n## Request header\n")
	if !o.sections["1"] || o.sections["9"] || !o.titles["words"] || !o.titles["request header"] {
		t.Errorf("outline = %+v", o)
	}
	cases := []struct {
		text string
		re   *regexp.Regexp
		want []string
	}{
		{"// see " + "RULES" + ".md §5", oldSpec, []string{"RULES" + ".md"}},
		{"// see docs/design/rules.md §5", oldSpec, nil},
		{"// the rules of docs/design/rules.md\n// §2–3 apply", sectionCite, []string{"rules", "2", "3"}},
		{"(docs/design/protocol.md, \"Versions since the\n// schemas were taken\")", titleCite, []string{"protocol", "Versions since the schemas were taken"}},
		{"(docs/design/protocol.md (\"Request header\")", titleCite, []string{"protocol", "Request header"}},
		{`[]string{"docs/design/rules.md", "shared/"}`, titleCite, nil},
	}
	for _, c := range cases {
		m := c.re.FindStringSubmatch(joinLines.ReplaceAllString(c.text, " "))
		var got []string
		if len(m) > 1 {
			got = m[1:]
		} else if len(m) == 1 {
			got = m
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
	}
}
