package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kidscope/kidscope/internal/schemacheck"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

const schemaFile = "../docs/schema/analysis.schema.json"

// analysisSchemas compiles the JSON Schema of the document, and of one
// ndjson line.
func analysisSchemas(t *testing.T) (doc, line *jsonschema.Schema) {
	t.Helper()
	doc, line, err := schemacheck.Analysis(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	return doc, line
}

func validate(t *testing.T, s *jsonschema.Schema, what string, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return s.Validate(v)
}

// validateOutput validates a json document or each ndjson line.
func validateOutput(t *testing.T, doc, line *jsonschema.Schema, what string, out []byte, ndjson bool) {
	t.Helper()
	if !ndjson {
		if err := validate(t, doc, what, out); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if err := validate(t, line, what, sc.Bytes()); err != nil {
			t.Errorf("%s line %d: %v", what, n, err)
		}
	}
}

// allValues is a finding for each kind of value the rules make, as
// expected and as seen, with each role of related frame and each state of
// answer.
func allValues() *Analysis {
	a := quietAnalysis()
	base := a.Result.Findings[0]
	var fs []rules.Finding
	answers := []rules.Answer{{State: rules.Answered, Codes: []int16{0, 42}}, {State: rules.NoResponse},
		{State: rules.NoResponseByDesign}, {State: rules.ClosedByBroker}, {}}
	for k := rules.ValueKind(1); newEvidenceValue(rules.Value{Kind: k}, UUIDKafka.format) != nil; k++ {
		for _, u := range []kafka.UUID{instA, {}, {15: 1}} {
			f := base
			v := rules.Value{Kind: k, ID: u, Text: "member \"x\"\n", Addr: ad("10.2.0.5"), Version: 3, Code: 79}
			f.Expected, f.Seen = v, v
			f.Related = []rules.Related{{Frame: fr(0, 3), Role: rules.Role(int(k)%8 + 1)}}
			f.Answer = answers[int(k)%len(answers)]
			fs = append(fs, f)
		}
	}
	a.Result.Findings = fs
	return a
}

// TestAnalysisSchema: every golden JSON and NDJSON output, an empty
// analysis, and findings with every kind of value are valid by
// docs/schema/analysis.schema.json; one field more or one kind unknown
// is not.
func TestAnalysisSchema(t *testing.T) {
	doc, line := analysisSchemas(t)
	goldens, _ := filepath.Glob("testdata/analysis_*json.golden")
	if len(goldens) < 4 {
		t.Fatalf("%d JSON goldens", len(goldens))
	}
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		validateOutput(t, doc, line, g, b, strings.HasSuffix(g, ".ndjson.golden"))
	}
	for _, f := range []string{"json", "ndjson"} {
		for _, uuid := range []UUIDForm{UUIDKafka, UUIDRFC4122} {
			for name, a := range map[string]*Analysis{"empty": {}, "all values": allValues(), "capped": cappedAnalysis()} {
				validateOutput(t, doc, line, name+" "+f, render(t, a, AnalysisOptions{Format: f, UUID: uuid}), f == "ndjson")
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteRunLine(&buf, incidentAnalysis().Run); err != nil {
		t.Fatal(err)
	}
	validateOutput(t, doc, line, "run line", buf.Bytes(), true)

	// Drift: a field the schema does not name, a kind or role it does not
	// know, a wrong type, are refused.
	good := render(t, incidentAnalysis(), AnalysisOptions{Format: "json"})
	for _, c := range []struct{ from, to string }{
		{`"schema_version": 2,`, `"schema_version": 2, "extra": 1,`},
		{`"schema_version": 2`, `"schema_version": 1`},
		{`"rule": "header-id-changed",`, `"rule": "header-id-changed", "extra": 1,`},
		{`"kind": "no-id"`, `"kind": "no-id", "id": "AAAAAAAAAAAAAAAAAAAAAA"`},
		{`"kind": "no-id"`, `"kind": "nothing"`},
		{`"role": "established"`, `"role": "establishing"`},
		{`"state": "answered"`, `"state": "NONE"`},
		{`"sha256": "e3b0`, `"sha256": "E3B0`},
		{`"packets": 48213,`, `"packets": 48213, "extra": 1,`},
		{`"kip1313": "mixed",`, `"kip1313": "mixed", "extra": 1,`},
		{`"telemetry_ids": [`, `"extra": 1, "telemetry_ids": [`},
		{`"mid_stream": false,`, `"mid_stream": false, "extra": 1,`},
		{`"workers": 8,`, `"workers": 8, "extra": 1,`},
		{`"context": null`, `"context": "body"`},
		{`"id": "4ea4520edebb333f375d5e1a05a1ada2",`, ``},
		{`"id": "4ea4520edebb333f375d5e1a05a1ada2"`, `"id": "4EA4520EDEBB333F375D5E1A05A1ADA2"`},
		{`"id": "4ea4520edebb333f375d5e1a05a1ada2"`, `"id": "4ea4520e-debb-333f-375d-5e1a05a1ada2"`},
	} {
		bad := strings.Replace(string(good), c.from, c.to, 1)
		if bad == string(good) {
			t.Fatalf("%q is not in the output", c.from)
		}
		if err := validate(t, doc, c.to, []byte(bad)); err == nil {
			t.Errorf("with %s: valid", c.to)
		}
	}
	nd := string(render(t, incidentAnalysis(), AnalysisOptions{Format: "ndjson"}))
	for _, c := range []struct{ from, to string }{
		{`{"kind":"summary",`, `{"kind":"summary","extra":1,`},
		{`{"kind":"run",`, `{"kind":"runs",`},
		{`{"kind":"finding",`, `{"kind":"finding","extra":1,`},
		{`{"kind":"connection",`, `{"kind":"connection","extra":1,`},
	} {
		i := strings.Index(nd, c.from)
		if i < 0 {
			t.Fatalf("%q is not in the output", c.from)
		}
		l := nd[i:]
		l = strings.Replace(l[:strings.IndexByte(l, '\n')], c.from, c.to, 1)
		if err := validate(t, line, c.to, []byte(l)); err == nil {
			t.Errorf("with %s: valid", c.to)
		}
	}
}

// TestEvidenceValues: every kind of value the rules make has a kind JSON
// names, and values that read differently are different in JSON (the
// words are made from the JSON value, so JSON holds all they say).
func TestEvidenceValues(t *testing.T) {
	seen := map[string]rules.ValueKind{}
	words := map[string]string{}
	n := 0
	for k := rules.ValueKind(1); ; k++ {
		v := rules.Value{Kind: k, ID: instA, Text: "t", Addr: ad("10.2.0.5"), Version: 3, Code: 79}
		e := newEvidenceValue(v, UUIDKafka.format)
		if e == nil {
			break
		}
		n++
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		text := e.text()
		if text == "" {
			t.Errorf("kind %d %s: no words", k, b)
		}
		if prev, ok := words[string(b)]; ok && prev != text {
			t.Errorf("%s reads %q and %q", b, prev, text)
		}
		words[string(b)] = text
		if other, ok := seen[text]; ok && k != rules.ValueIDNamed {
			t.Errorf("kinds %d and %d both read %q", other, k, text)
		}
		seen[text] = k
	}
	if n != int(rules.ValueNotKafka) {
		t.Errorf("%d kinds typed, want %d: a kind of rules.Value has no JSON", n, rules.ValueNotKafka)
	}
	for r := rules.RoleEstablished; r <= rules.RolePrevious; r++ {
		if roleName(r) == "related" {
			t.Errorf("role %d has no name", r)
		}
	}
	// The typed value carries the raw strings (JSON escapes them); the
	// words quote and escape them.
	e := newEvidenceValue(rules.Value{Kind: rules.ValueMemberID, Text: "m\x1b[31m"}, UUIDKafka.format)
	if b, _ := json.Marshal(e); string(b) != `{"kind":"member-id","member_id":"m\u001b[31m","context":null}` {
		t.Errorf("member-id JSON %s", b)
	}
	if strings.ContainsRune(e.text(), 0x1b) {
		t.Errorf("words %q hold an escape", e.text())
	}
	null := newEvidenceValue(rules.Value{Kind: rules.ValueNullClientID}, UUIDKafka.format)
	if b, _ := json.Marshal(null); string(b) != `{"kind":"client-id","client_id":null,"context":null}` {
		t.Errorf("null ClientId JSON %s", b)
	}
	z := newEvidenceValue(rules.Value{Kind: rules.ValueBodyID}, UUIDRFC4122.format)
	if b, _ := json.Marshal(z); string(b) != `{"kind":"zero","id":"00000000-0000-0000-0000-000000000000","context":"body"}` {
		t.Errorf("ZERO body ID JSON %s", b)
	}
}

// TestSchemaValueKinds: the JSON Schema's value kinds and their contexts
// are exactly those valueForms makes: a new kind of value that brings a
// JSON kind or context needs it in docs/schema/analysis.schema.json, and
// one no rule makes any more goes from there.
func TestSchemaValueKinds(t *testing.T) {
	raw, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			Value struct {
				OneOf []struct {
					Properties struct {
						Kind    struct{ Const string }
						Context struct{ Enum []*string }
					}
				}
			}
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	inSchema := map[string]bool{}
	for _, o := range doc.Defs.Value.OneOf {
		for _, c := range o.Properties.Context.Enum {
			ctx := ""
			if c != nil {
				ctx = *c
			}
			inSchema[o.Properties.Kind.Const+" "+ctx] = true
		}
	}
	made, madeKinds := map[string]bool{}, map[string]bool{}
	for k, f := range valueForms {
		kinds := []string{f.kind}
		if f.kind == "" {
			kinds = []string{"id", "zero", "one"}
		}
		for _, kind := range kinds {
			made[kind+" "+f.ctx], madeKinds[kind] = true, true
			if !inSchema[kind+" "+f.ctx] {
				t.Errorf("value kind %d: kind %q with context %q is not in %s", k, kind, f.ctx, schemaFile)
			}
		}
	}
	for kc := range inSchema {
		kind, ctx, _ := strings.Cut(kc, " ")
		if ctx != "" && !made[kc] {
			t.Errorf("%s: kind %q with context %q: no value makes it", schemaFile, kind, ctx)
		}
		if !madeKinds[kind] {
			t.Errorf("%s: kind %q: no value makes it", schemaFile, kind)
		}
	}
}
