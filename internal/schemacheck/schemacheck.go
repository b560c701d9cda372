// Package schemacheck compiles docs/schema/analysis.schema.json, the JSON
// Schema of analyze's json document and ndjson lines, for the tests of
// report and of the command; no command uses it.
package schemacheck

import (
	"os"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Analysis compiles the schema file at path: the document's schema, and
// that of one ndjson line. Formats are asserted (date-time, and the like).
func Analysis(path string) (doc, line *jsonschema.Schema, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	raw, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("analysis.schema.json", raw); err != nil {
		return nil, nil, err
	}
	if doc, err = c.Compile("analysis.schema.json"); err != nil {
		return nil, nil, err
	}
	if line, err = c.Compile("analysis.schema.json#/$defs/ndjson_line"); err != nil {
		return nil, nil, err
	}
	return doc, line, nil
}
