package doctest

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the outputs of the documents' examples that differ from what the binary prints")

// bin is the directory of the kidscope built for the examples.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kidscope-doctest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	// Without the VCS stamp the version is "(devel)" on every checkout,
	// as the examples that show it show.
	if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(dir, "kidscope"), "github.com/kidscope/kidscope/cmd/kidscope").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build kidscope: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// root is the repository's root, absolute.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// documents returns README.md and every Markdown file under docs/,
// relative to the root.
func documents(t *testing.T, root string) []string {
	t.Helper()
	docs := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		docs = append(docs, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestDocs runs every example of README.md and docs/ (see the package
// comment); -update rewrites the outputs that differ.
func TestDocs(t *testing.T) {
	root := root(t)
	dir := t.TempDir()
	var files, docs []string
	total, readme := 0, 0
	for _, doc := range documents(t, root) {
		src, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		exs, err := Parse(doc, string(src))
		if err != nil {
			t.Error(err)
			continue
		}
		if len(exs) == 0 {
			continue
		}
		total += len(exs)
		if doc == "README.md" {
			readme = len(exs)
		}
		script := filepath.Join(dir, strings.ReplaceAll(doc, "/", "-")+".txtar")
		if err := os.WriteFile(script, Script(doc, exs), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, script)
		docs = append(docs, doc)
	}
	// The README's tour alone has more than this: a parser that finds
	// nothing must not pass.
	if readme < 5 || total < 20 {
		t.Fatalf("%d examples in README.md, %d in all the documents", readme, total)
	}
	var rec *Recorder
	if *update {
		rec = &Recorder{}
	}
	t.Run("script", func(t *testing.T) {
		// ContinueOnError: one run names every example of a document
		// that drifted, not only the first.
		testscript.Run(t, testscript.Params{Files: files, Setup: Setup(root, bin), Cmds: Cmds(rec), ContinueOnError: true})
	})
	if rec == nil {
		return
	}
	for _, doc := range docs {
		path := filepath.Join(root, doc)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Rewrite(doc, string(src), rec.Results(doc))
		if err != nil {
			t.Error(err)
			continue
		}
		if out != string(src) {
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote %s", doc)
		}
	}
}
