package archtest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kidscope/kidscope/"

// allowed lists, for each stage, the project's packages it may import
// directly: one direction of flow, capture → reassembly → decode → rules →
// report, with kafka (the shared plain types) and result (the run's totals)
// beside them, and pipeline wiring the stages. Commands and tools above
// them may import anything.
var allowed = map[string][]string{
	"kafka":                   {},
	"capture/filter":          {},
	"capture":                 {"capture/filter", "kafka"},
	"reassembly":              {"capture", "kafka"},
	"decode":                  {"kafka"},
	"tlsdec":                  {"kafka"},
	"rules":                   {"decode", "kafka"},
	"result":                  {"capture", "reassembly", "decode", "kafka"},
	"report":                  {"decode", "kafka", "result", "rules", "report/internal/textdoc", "internal/size"},
	"report/internal/textdoc": {},
	"pipeline":                {"capture", "capture/filter", "reassembly", "tlsdec", "decode", "rules", "result", "kafka"},
}

// pure are the packages that must do no I/O and start no goroutines.
var pure = []string{"decode", "rules", "kafka", "tlsdec"}

// impure are standard packages a pure package must not import.
var impure = []string{"os", "io/fs", "net", "net/http", "syscall", "sync", "os/exec", "log"}

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func list(t *testing.T) map[string]listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listed{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs
}

func TestStagesImportOnlyDownstream(t *testing.T) {
	pkgs := list(t)
	for name, ok := range allowed {
		p, found := pkgs[name]
		if !found {
			t.Errorf("package %s is gone: update the layout (and docs/contributing.md)", name)
			continue
		}
		for _, imp := range p.Imports {
			own, isOwn := strings.CutPrefix(imp, module)
			if isOwn && !slices.Contains(ok, own) {
				t.Errorf("%s imports %s; it may import only %v", name, own, ok)
			}
		}
	}
}

// The Kafka stages know nothing of packets: decode and rules (and the
// shared types) never see gopacket. (report does, only through the capture
// counters of result.Summary.)
func TestKafkaStagesIgnorePacketLayers(t *testing.T) {
	pkgs := list(t)
	for _, name := range []string{"kafka", "decode", "rules"} {
		for _, d := range pkgs[name].Deps {
			if strings.HasPrefix(d, "github.com/gopacket/") {
				t.Errorf("%s depends on %s", name, d)
			}
		}
	}
}

func TestPurePackages(t *testing.T) {
	pkgs := list(t)
	for _, name := range pure {
		p := pkgs[name]
		for _, imp := range p.Imports {
			if slices.Contains(impure, imp) {
				t.Errorf("%s imports %s: it must stay pure (no I/O, goroutines or locks)", name, imp)
			}
		}
		fset := token.NewFileSet()
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: a goroutine in pure package %s", fset.Position(n.Pos()), name)
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && (n.Sel.Name == "Now" || n.Sel.Name == "Since") {
						t.Errorf("%s: time.%s reads the clock in pure package %s", fset.Position(n.Pos()), n.Sel.Name, name)
					}
				}
				return true
			})
		}
	}
}

// Types that cross stages are declared once: no stage declares its own
// frame reference, direction or connection endpoints beside kafka's.
func TestSharedTypesDeclaredOnce(t *testing.T) {
	pkgs := list(t)
	for name := range allowed {
		if name == "kafka" {
			continue
		}
		p := pkgs[name]
		fset := token.NewFileSet()
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, s := range g.Specs {
					ts := s.(*ast.TypeSpec)
					if st, ok := ts.Type.(*ast.StructType); ok && sharedShape(st) != "" {
						t.Errorf("%s: %s.%s re-declares kafka.%s", fset.Position(ts.Pos()), name, ts.Name.Name, sharedShape(st))
					}
					if id, ok := ts.Type.(*ast.Ident); ok && id.Name == "uint8" && (ts.Name.Name == "Direction" || ts.Name.Name == "Side") {
						t.Errorf("%s: %s.%s re-declares kafka.Direction", fset.Position(ts.Pos()), name, ts.Name.Name)
					}
					if ts.Assign.IsValid() {
						t.Errorf("%s: %s.%s is an alias: use the type it names", fset.Position(ts.Pos()), name, ts.Name.Name)
					}
				}
			}
		}
	}
}

// sharedShape names the kafka type whose fields st repeats, if any.
func sharedShape(st *ast.StructType) string {
	var names []string
	for _, f := range st.Fields.List {
		if f.Tag != nil {
			return "" // a serialised form (report's JSON), not a stage's type
		}
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	switch strings.Join(names, " ") {
	case "File Frame", "File Frame Time":
		return "FrameRef"
	case "End File Frame Time":
		return "Span"
	case "Broker Client":
		return "Endpoints"
	case "At By Reset Seen":
		return "Close"
	}
	return ""
}

// tlsdec takes its cryptography from the standard library and
// golang.org/x/crypto only: besides kafka it imports nothing else outside
// the standard library.
func TestTLSDecImportsOnlyStdlibAndXCrypto(t *testing.T) {
	pkgs := list(t)
	p, found := pkgs["tlsdec"]
	if !found {
		t.Fatal("package tlsdec is gone")
	}
	for _, imp := range p.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if !strings.Contains(first, ".") || imp == module+"kafka" || strings.HasPrefix(imp, "golang.org/x/crypto/") {
			continue
		}
		t.Errorf("tlsdec imports %s: only the standard library, golang.org/x/crypto and kafka", imp)
	}
}
