package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// schemasDir is shared/kafka-protocol/messages, a sibling of the module root.
const schemasDir = "../../../shared/kafka-protocol/messages"

// TestRegenerateMatchesCommitted regenerates the table into a temp file and
// compares it with the committed decode/apis_gen.go.
func TestRegenerateMatchesCommitted(t *testing.T) {
	if _, err := os.Stat(schemasDir); err != nil {
		t.Skipf("Kafka message schemas not found at %s (shared/ is not beside the module): %v", schemasDir, err)
	}
	out := filepath.Join(t.TempDir(), "apis_gen.go")
	var stderr bytes.Buffer
	if err := run([]string{"-messages", schemasDir, "-o", out}, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../decode/apis_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("decode/apis_gen.go is stale: run `go generate ./decode` and commit the result\n%s", firstDiff(got, want))
	}
	if stderr.Len() != 0 {
		t.Errorf("unexpected warnings: %s", stderr.String())
	}
}

// TestSchemasTable checks rows of the generated table against the schemas
// and the overlay.
func TestSchemasTable(t *testing.T) {
	if _, err := os.Stat(schemasDir); err != nil {
		t.Skipf("Kafka message schemas not found at %s: %v", schemasDir, err)
	}
	apis, warnings, err := readSchemas(schemasDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	rows, err := applyOverlay(apis, overlay())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 93 {
		t.Fatalf("%d rows, want keys 0-92", len(rows))
	}
	for i, r := range rows {
		if int(r.Key) != i {
			t.Fatalf("row %d has key %d", i, r.Key)
		}
		// Min versions come from the schemas: the versions Kafka 4.0
		// removed stay decodable.
		if s, ok := apis[r.Key]; ok && r.MinVersion != s.MinVersion {
			t.Errorf("key %d: min %d, schemas say %d", r.Key, r.MinVersion, s.MinVersion)
		}
	}
	// The overlay does not modify what readSchemas returned.
	if apis[0].MaxVersion != 11 || apis[74].Name != "ListClientMetricsResources" {
		t.Errorf("schemas changed by the overlay: %+v %+v", apis[0], apis[74])
	}
	check := func(key int16, name string, lo, hi, flex, v3 int16) {
		t.Helper()
		r := rows[key]
		if r.Name != name || r.MinVersion != lo || r.MaxVersion != hi || r.FlexibleFrom != flex || r.HeaderV3From != v3 {
			t.Errorf("key %d = %+v, want %s %d-%d flex %d v3 %d", key, r, name, lo, hi, flex, v3)
		}
	}
	check(0, "Produce", 0, 13, 9, none)
	check(1, "Fetch", 0, 18, 12, none)
	check(17, "SaslHandshake", 0, 1, none, none)
	check(18, "ApiVersions", 0, 5, 3, none)
	check(47, "OffsetDelete", 0, 1, 1, 1)
	check(74, "ListConfigResources", 0, 1, 0, none)
	check(88, "StreamsGroupHeartbeat", 0, 1, 0, none)
}

func TestStripComments(t *testing.T) {
	in := `// header
{
  "a": "x // not a comment", // a comment
  "b": "quote \" // still string", "c": "\\" // comment after escaped backslash
}
// trailing`
	want := `
{
  "a": "x // not a comment", 
  "b": "quote \" // still string", "c": "\\" 
}
`
	if got := string(stripComments([]byte(in))); got != want {
		t.Errorf("stripComments:\n%q\nwant\n%q", got, want)
	}
}

func TestParseRanges(t *testing.T) {
	for _, tt := range []struct {
		in     string
		lo, hi int16
		bad    bool
	}{
		{"0", 0, 0, false},
		{"0-11", 0, 11, false},
		{" 3-12 ", 3, 12, false},
		{"none", none, none, false},
		{"", 0, 0, true},
		{"3+", 0, 0, true},
		{"5-3", 0, 0, true},
		{"x", 0, 0, true},
		{"-1", 0, 0, true},
		{"0-40000", 0, 0, true},
	} {
		lo, hi, err := parseRange(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && (lo != tt.lo || hi != tt.hi)) {
			t.Errorf("parseRange(%q) = %d, %d, %v", tt.in, lo, hi, err)
		}
	}
	for _, tt := range []struct {
		in   string
		from int16
		bad  bool
	}{
		{"9+", 9, false},
		{"0+", 0, false},
		{"none", none, false},
		{"9", 0, true},
		{"", 0, true},
		{"1-2", 0, true},
	} {
		from, err := parseFlexible(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && from != tt.from) {
			t.Errorf("parseFlexible(%q) = %d, %v", tt.in, from, err)
		}
	}
}

func TestApplyOverlay(t *testing.T) {
	base := map[int16]*api{
		0: {Key: 0, Name: "Produce", MinVersion: 0, MaxVersion: 11, FlexibleFrom: 9, HeaderV3From: none},
		2: {Key: 2, Name: "ListOffsets", MinVersion: 0, MaxVersion: 10, FlexibleFrom: 6, HeaderV3From: none},
		3: {Key: 3, Name: "Old", MinVersion: 0, MaxVersion: 0, FlexibleFrom: 0, HeaderV3From: none},
		5: {Key: 5, Name: "Rigid", MinVersion: 0, MaxVersion: 0, FlexibleFrom: none, HeaderV3From: none},
		6: {Key: 6, Name: "Newer", MinVersion: 0, MaxVersion: 3, FlexibleFrom: 0, HeaderV3From: none},
	}
	rows, err := applyOverlay(base, []overlayEntry{
		{Key: 0, MaxVersion: 13, HeaderV3From: none},
		{Key: 2, MaxVersion: 9, HeaderV3From: none},                // lower than the schemas: no change
		{Key: 3, Name: "New", MaxVersion: 1, HeaderV3From: none},   // rename
		{Key: 4, Name: "Added", MaxVersion: 0, HeaderV3From: none}, // absent: added
		{Key: 5, MaxVersion: 1, HeaderV3From: 1},                   // never flexible: v1 added flexible, header v3
		{Key: 6, Name: "Newer", MaxVersion: 1, HeaderV3From: none}, // already newer than the overlay
		{Key: 7, Name: "Added7", MinVersion: 1, MaxVersion: 2, HeaderV3From: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []api{
		{Key: 0, Name: "Produce", MinVersion: 0, MaxVersion: 13, FlexibleFrom: 9, HeaderV3From: none, Notes: []string{"max 11→13"}},
		{Key: 2, Name: "ListOffsets", MinVersion: 0, MaxVersion: 10, FlexibleFrom: 6, HeaderV3From: none},
		{Key: 3, Name: "New", MinVersion: 0, MaxVersion: 1, FlexibleFrom: 0, HeaderV3From: none, Notes: []string{"renamed from Old", "max 0→1"}},
		{Key: 4, Name: "Added", MinVersion: 0, MaxVersion: 0, FlexibleFrom: 0, HeaderV3From: none, Notes: []string{"added"}},
		{Key: 5, Name: "Rigid", MinVersion: 0, MaxVersion: 1, FlexibleFrom: 1, HeaderV3From: 1, Notes: []string{"max 0→1", "header v3 from v1"}},
		{Key: 6, Name: "Newer", MinVersion: 0, MaxVersion: 3, FlexibleFrom: 0, HeaderV3From: none},
		{Key: 7, Name: "Added7", MinVersion: 1, MaxVersion: 2, FlexibleFrom: 1, HeaderV3From: 2, Notes: []string{"added", "header v3 from v2"}},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		g, w := rows[i], want[i]
		if g.Key != w.Key || g.Name != w.Name || g.MinVersion != w.MinVersion || g.MaxVersion != w.MaxVersion ||
			g.FlexibleFrom != w.FlexibleFrom || g.HeaderV3From != w.HeaderV3From || strings.Join(g.Notes, "|") != strings.Join(w.Notes, "|") {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	if base[0].MaxVersion != 11 || base[3].Name != "Old" || base[5].FlexibleFrom != none {
		t.Error("applyOverlay modified its input")
	}

	for name, e := range map[string]overlayEntry{
		"absent key without name": {Key: 9, MaxVersion: 0, HeaderV3From: none},
		"header v3 outside range": {Key: 0, MaxVersion: 0, HeaderV3From: 20},
		"header v3 not flexible":  {Key: 5, MaxVersion: 0, HeaderV3From: 0},
		"empty version range":     {Key: 0, MinVersion: 2, MaxVersion: 1, HeaderV3From: none},
		"header v3 below min":     {Key: 7, Name: "X", MinVersion: 1, MaxVersion: 1, HeaderV3From: 0},
	} {
		if _, err := applyOverlay(base, []overlayEntry{e}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadSchemas(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"FooRequest.json": `// c
{ "apiKey": 3, "type": "request", "name": "FooRequest",
  // Version 1 adds nothing.
  "validVersions": "0-1", "flexibleVersions": "none", "fields": [] }`,
		"BarRequest.json": `{ "apiKey": 4, "type": "request", "name": "BarRequest",
  "validVersions": "2", "flexibleVersions": "0+", "latestVersionUnstable": true,
  "headerVersions": {"2": 3} }`,
		"FooResponse.json": `{ "apiKey": 3, "type": "response", "name": "FooResponse" }`,
	})
	apis, warnings, err := readSchemas(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(apis) != 2 {
		t.Fatalf("apis = %+v", apis)
	}
	if a := apis[3]; a.Name != "Foo" || a.MinVersion != 0 || a.MaxVersion != 1 || a.FlexibleFrom != none || a.HeaderV3From != none {
		t.Errorf("Foo = %+v", a)
	}
	if a := apis[4]; a.Name != "Bar" || a.MinVersion != 2 || a.MaxVersion != 2 || a.FlexibleFrom != 0 {
		t.Errorf("Bar = %+v", a)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "headerVersions") {
		t.Errorf("warnings = %v", warnings)
	}

	for name, files := range map[string]map[string]string{
		"duplicate key": {
			"ARequest.json": `{"apiKey": 1, "type": "request", "name": "ARequest", "validVersions": "0", "flexibleVersions": "none"}`,
			"BRequest.json": `{"apiKey": 1, "type": "request", "name": "BRequest", "validVersions": "0", "flexibleVersions": "none"}`,
		},
		"no files":      {"README.md": "x"},
		"bad json":      {"ARequest.json": `{"apiKey": 1,,}`},
		"not a request": {"ARequest.json": `{"apiKey": 1, "type": "response", "name": "ARequest", "validVersions": "0", "flexibleVersions": "none"}`},
		"missing key":   {"ARequest.json": `{"type": "request", "name": "ARequest", "validVersions": "0", "flexibleVersions": "none"}`},
		"bad name":      {"ARequest.json": `{"apiKey": 1, "type": "request", "name": "Request", "validVersions": "0", "flexibleVersions": "none"}`},
		"bad versions":  {"ARequest.json": `{"apiKey": 1, "type": "request", "name": "ARequest", "validVersions": "0+", "flexibleVersions": "none"}`},
		"none versions": {"ARequest.json": `{"apiKey": 1, "type": "request", "name": "ARequest", "validVersions": "none", "flexibleVersions": "none"}`},
		"bad flexible":  {"ARequest.json": `{"apiKey": 1, "type": "request", "name": "ARequest", "validVersions": "0", "flexibleVersions": "1"}`},
	} {
		if _, _, err := readSchemas(writeFiles(t, files)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"-messages", "x"},
		{"-o", "x"},
		{"-messages", "x", "-o", "y", "extra"},
		{"-nosuchflag"},
	} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("run(%q): no error", args)
		}
	}
	if err := run([]string{"-messages", t.TempDir(), "-o", filepath.Join(t.TempDir(), "x.go")}, io.Discard); err == nil {
		t.Error("run with an empty schema dir: no error")
	}
}

func TestRenderIsGofmtAndDeterministic(t *testing.T) {
	rows := []api{
		{Key: 0, Name: "Produce", MinVersion: 0, MaxVersion: 13, FlexibleFrom: 9, HeaderV3From: none, Notes: []string{"max 11→13"}},
		{Key: 2, Name: "Skip", MinVersion: 0, MaxVersion: 0, FlexibleFrom: 0, HeaderV3From: none},
	}
	a, err := render(rows)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := render(rows)
	if !bytes.Equal(a, b) {
		t.Error("render is not deterministic")
	}
	for _, want := range []string{
		"// Code generated",
		"DO NOT EDIT.",
		"package decode",
		`0: {Key: 0, Name: "Produce", MinVersion: 0, MaxVersion: 13, FlexibleFrom: 9, HeaderV3From: -1}, // overlay: max 11→13`,
		`2: {Key: 2, Name: "Skip"`,
	} {
		if !strings.Contains(string(a), want) {
			t.Errorf("render output lacks %q:\n%s", want, a)
		}
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d:\n regenerated: %q\n committed:   %q", i+1, gl, wl)
		}
	}
	return "no line differs"
}
