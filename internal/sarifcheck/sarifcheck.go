// Package sarifcheck validates SARIF logs against the SARIF 2.1.0 JSON
// schema, for the tests of `analyze -o sarif`; no command uses it.
//
// The schema is the OASIS one (sarif-schema-2.1.0.json, errata 01), as
// the Go module github.com/owenrumney/go-sarif/v3 ships it: as the string
// constant schema of its package pkg/report/v210/sarif, which validates
// that library's own reports with it. No module on the Go proxy ships the
// schema as a .json file, and kidscope keeps no copy of it: the tests read
// that constant out of the module's source in the module cache (go.mod
// requires the module for this; sarifcheck_test.go imports the package so
// that go mod tidy keeps it).
package sarifcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaModule is the module whose source holds the schema, and
// schemaFile the file in it.
const (
	SchemaModule = "github.com/owenrumney/go-sarif/v3"
	schemaFile   = "pkg/report/v210/sarif/schema.go"
	schemaConst  = "schema"
)

// SchemaID is the schema's id: the test that it is the OASIS schema of
// 2.1.0, not another draft of it.
const SchemaID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

var (
	once     sync.Once
	compiled *jsonschema.Schema
	loadErr  error
)

// SchemaText returns the schema's JSON text, read from the module cache
// (downloading the module at go.mod's version if it is not there yet).
func SchemaText() ([]byte, error) {
	out, err := exec.Command("go", "mod", "download", "-json", SchemaModule).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go mod download %s: %w", SchemaModule, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("go mod download %s: %w", SchemaModule, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download %s: no module directory (%s)", SchemaModule, mod.Error)
	}
	return constString(filepath.Join(mod.Dir, schemaFile), schemaConst)
}

// constString is the value of the string constant name in the Go file.
func constString(path, name string) ([]byte, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		return nil, err
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name != name || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return nil, fmt.Errorf("%s: const %s is not a string literal", path, name)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return nil, fmt.Errorf("%s: const %s: %w", path, name, err)
				}
				return []byte(s), nil
			}
		}
	}
	return nil, fmt.Errorf("%s: no const %s", path, name)
}

// Schema is the compiled schema, with formats (uri, uri-reference,
// date-time) asserted.
func Schema() (*jsonschema.Schema, error) {
	once.Do(func() {
		text, err := SchemaText()
		if err != nil {
			loadErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
		if err != nil {
			loadErr = fmt.Errorf("the SARIF schema: %w", err)
			return
		}
		if m, ok := doc.(map[string]any); !ok || m["id"] != SchemaID {
			loadErr = fmt.Errorf("the SARIF schema of %s is not %s", SchemaModule, SchemaID)
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource(SchemaID, doc); err != nil {
			loadErr = err
			return
		}
		compiled, loadErr = c.Compile(SchemaID)
	})
	return compiled, loadErr
}

// Validate checks one SARIF log's bytes against the schema.
func Validate(log []byte) error {
	sch, err := Schema()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(log))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := sch.Validate(doc); err != nil {
		// %#v lists every failed keyword with its place in the log;
		// the plain text names the schema's root only.
		return fmt.Errorf("%#v", err)
	}
	return nil
}
