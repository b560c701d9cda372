package samples

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed captures and expectations under samples/captures")

// capturesDir holds the committed scenario files.
const capturesDir = "captures"

// TestCommitted requires the files under samples/captures to be exactly
// what the generator writes (go test ./samples -update rewrites them), and
// no other file to be there.
func TestCommitted(t *testing.T) {
	if *update {
		if err := os.RemoveAll(capturesDir); err != nil {
			t.Fatal(err)
		}
		ws, err := WriteSmall(capturesDir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d files under %s", len(ws), capturesDir)
	}
	want := map[string][]byte{}
	for _, b := range allBuilt(t) {
		if b.Scenario.Large {
			continue
		}
		want[b.File] = b.Capture
		want[ExpectFile(b.Scenario.Name)] = b.Expect.JSON()
	}
	entries, err := os.ReadDir(capturesDir)
	if err != nil {
		t.Fatalf("%v (go test ./samples -run TestCommitted -update writes the files)", err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		have[e.Name()] = true
		w, ok := want[e.Name()]
		if !ok {
			t.Errorf("%s/%s: no scenario writes this file (remove it, or run with -update)", capturesDir, e.Name())
			continue
		}
		got, err := os.ReadFile(filepath.Join(capturesDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, w) {
			t.Errorf("%s/%s differs from what the generator writes (go test ./samples -update)", capturesDir, e.Name())
		}
	}
	for name := range want {
		if !have[name] {
			t.Errorf("%s/%s is missing (go test ./samples -update)", capturesDir, name)
		}
	}
}

// TestDeterminism builds every scenario twice, and writes them all twice:
// the same bytes every time.
func TestDeterminism(t *testing.T) {
	for _, s := range All() {
		a, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Capture, b.Capture) || !bytes.Equal(a.Expect.JSON(), b.Expect.JSON()) {
			t.Errorf("%s: two builds differ", s.Name)
		}
	}
	d1, d2 := t.TempDir(), t.TempDir()
	w1, err := WriteAll(d1)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := WriteAll(d2)
	if err != nil {
		t.Fatal(err)
	}
	if len(w1) != len(w2) || len(w1) != 2*len(All()) {
		t.Fatalf("wrote %d and %d files for %d scenarios", len(w1), len(w2), len(All()))
	}
	for i := range w1 {
		x, _ := os.ReadFile(w1[i].Path)
		y, _ := os.ReadFile(w2[i].Path)
		if filepath.Base(w1[i].Path) != filepath.Base(w2[i].Path) || !bytes.Equal(x, y) || len(x) != w1[i].Bytes {
			t.Errorf("%s: two runs of WriteAll differ", w1[i].Path)
		}
	}
}

func TestNamesAndLookup(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		if seen[s.Name] {
			t.Errorf("two scenarios named %s", s.Name)
		}
		seen[s.Name] = true
		if s.Description == "" || strings.Contains(s.Description, "\n") {
			t.Errorf("%s: the description must be one line", s.Name)
		}
		if got, ok := Lookup(s.Name); !ok || got.Name != s.Name {
			t.Errorf("Lookup(%q) fails", s.Name)
		}
	}
	large := 0
	for _, s := range All() {
		if s.Large {
			large++
		}
	}
	if large != 1 || len(Small()) != len(All())-1 {
		t.Errorf("%d large scenarios, %d small of %d", large, len(Small()), len(All()))
	}
	if _, ok := Lookup("no-such-scenario"); ok {
		t.Error("Lookup finds a scenario that does not exist")
	}
	if !slices.IsSortedFunc(Rules, func(a, b Rule) int { return a.Section - b.Section }) {
		t.Error("Rules is not in RULES.md's order")
	}
}

// TestReadme requires README.md to name every scenario.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range All() {
		if !bytes.Contains(readme, []byte("| `"+s.Name+"` |")) {
			t.Errorf("README.md has no line for %s", s.Name)
		}
	}
}
