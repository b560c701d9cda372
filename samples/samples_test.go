package samples

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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
}

// The scenario tables of README.md lie between these lines.
const (
	readmeBegin = "<!-- The scenario tables are made from the scenarios: go test ./samples -run TestReadme -update. Do not edit them. -->\n"
	readmeEnd   = "<!-- End of the scenario tables. -->\n"
)

// TestReadme requires README.md's scenario tables to be what the
// scenarios make (-update rewrites them): a row per scenario with its
// description, the findings its expectation holds and its brokers'
// verdicts.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(readme), readmeBegin)
	_, after, ok2 := strings.Cut(rest, readmeEnd)
	if !ok1 || !ok2 {
		t.Fatalf("README.md has no scenario tables between %q and %q", readmeBegin, readmeEnd)
	}
	built := map[string]*Built{}
	for _, b := range allBuilt(t) {
		built[b.Scenario.Name] = b
	}
	want := before + readmeBegin + scenarioTables(built) + readmeEnd + after
	if *update {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != string(readme) {
		t.Error("README.md's scenario tables are out of date (go test ./samples -run TestReadme -update)")
	}
	for _, s := range All() {
		if !strings.Contains(want, "| `"+s.Name+"` |") {
			t.Errorf("README.md has no line for %s", s.Name)
		}
	}
}

// scenarioTables is README.md's list of scenarios: a table per section.
func scenarioTables(built map[string]*Built) string {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	letter := map[string]string{"enforces": "E", "ignores": "I", "mixed": "M", "unknown": "?"}
	for _, sec := range sections {
		fmt.Fprintf(&b, "\n### %s\n\n", sec.title)
		if sec.note != "" {
			fmt.Fprintf(&b, "%s\n\n", sec.note)
		}
		b.WriteString("| scenario | what it shows | must find | brokers |\n|---|---|---|---|\n")
		for _, list := range sec.lists {
			for _, s := range list() {
				e := built[s.Name].Expect
				var order []string
				count := map[string]int{}
				for _, f := range e.Findings {
					r, _ := LookupRule(f.Rule)
					name := "`" + f.Rule + "`"
					if f.Severity != r.Severity.String() {
						name += " (" + f.Severity + ")"
					}
					if count[name] == 0 {
						order = append(order, name)
					}
					count[name]++
				}
				finds := "nothing"
				if len(order) > 0 {
					for i, n := range order {
						if count[n] > 1 {
							order[i] = fmt.Sprintf("%s ×%d", n, count[n])
						}
					}
					finds = strings.Join(order, ", ")
				}
				var verdicts []string
				for _, br := range e.Brokers {
					verdicts = append(verdicts, letter[br.KIP1313])
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Name, cell(s.Description), finds, strings.Join(verdicts, ", "))
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}
