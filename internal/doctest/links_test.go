package doctest

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	fencedBlock = regexp.MustCompile("(?ms)^\\s*(```+|~~~+).*?^\\s*(```+|~~~+)\\s*$")
	inlineCode  = regexp.MustCompile("`[^`\n]*`")
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading     = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
)

// anchors returns the anchors GitHub makes of a document's headings.
func anchors(src string) map[string]bool {
	src = fencedBlock.ReplaceAllString(src, "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(src, -1) {
		text := strings.ToLower(strings.ReplaceAll(m[1], "`", ""))
		var b strings.Builder
		for _, r := range text {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func TestAnchors(t *testing.T) {
	got := anchors("# `kidscope live`: on a broker host\n## SARIF (`-o sarif`) and CI use\n" +
		"### Annotated: `--annotate`\n## The inputs' hash\n## Tests\n## Tests\n```\n# not a heading\n```\n")
	for _, want := range []string{"kidscope-live-on-a-broker-host", "sarif--o-sarif-and-ci-use", "annotated---annotate", "the-inputs-hash", "tests", "tests-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block is taken for a heading")
	}
}

// TestDocLinks: every relative link of README.md and docs/ names a file
// of the repository, and its #anchor a heading of that document.
func TestDocLinks(t *testing.T) {
	root := root(t)
	cache := map[string]map[string]bool{}
	for _, doc := range documents(t, root) {
		src, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := inlineCode.ReplaceAllString(fencedBlock.ReplaceAllString(string(src), ""), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(link, "#")
			target := doc
			if file != "" {
				target = path.Clean(path.Join(path.Dir(doc), file))
			}
			data, err := os.ReadFile(filepath.Join(root, target))
			if err != nil {
				if fi, serr := os.Stat(filepath.Join(root, target)); serr == nil && fi.IsDir() && anchor == "" {
					continue
				}
				t.Errorf("%s: link %s: %v", doc, link, err)
				continue
			}
			if anchor == "" {
				continue
			}
			if cache[target] == nil {
				cache[target] = anchors(string(data))
			}
			if !cache[target][anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", doc, link, target, anchor)
			}
		}
	}
}
