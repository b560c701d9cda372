package sarifcheck

import (
	"strings"
	"testing"

	// The package whose source holds the schema: imported so that go mod
	// tidy keeps its module required (sarifcheck.go).
	_ "github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
)

func TestSchemaLoads(t *testing.T) {
	text, err := SchemaText()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), `"title": "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"`) {
		t.Errorf("the schema text is not SARIF 2.1.0's: %.200s", text)
	}
	if _, err := Schema(); err != nil {
		t.Fatal(err)
	}
}

// TestValidateRejects: the validation can fail, on what SARIF 2.1.0 §3
// forbids.
func TestValidateRejects(t *testing.T) {
	good := `{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "kidscope"}}, "results": [
		{"ruleId": "r", "level": "error", "message": {"text": "m"}}]}]}`
	if err := Validate([]byte(good)); err != nil {
		t.Fatalf("a minimal valid log: %v", err)
	}
	for name, doc := range map[string]string{
		"no version":      `{"runs": []}`,
		"other version":   `{"version": "2.0.0", "runs": []}`,
		"no driver name":  `{"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]}`,
		"bad level":       strings.Replace(good, `"error"`, `"fatal"`, 1),
		"no message":      strings.Replace(good, `, "message": {"text": "m"}`, ``, 1),
		"unknown top key": `{"version": "2.1.0", "runs": [], "extra": 1}`,
		"startLine 0": `{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "k"}}, "results": [{"message": {"text": "m"},
			"locations": [{"physicalLocation": {"artifactLocation": {"uri": "x"}, "region": {"startLine": 0}}}]}]}]}`,
		"bad uri":  `{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "k"}}, "artifacts": [{"location": {"uri": "%zz"}}]}]}`,
		"not json": `{"version": `,
	} {
		if err := Validate([]byte(doc)); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}
