package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// release builds a release from literal schemas, by file name.
func testRelease(t *testing.T, name string, files map[string]string) release {
	t.Helper()
	r, err := readRelease(writeFiles(t, files))
	if err != nil {
		t.Fatal(err)
	}
	r.name = name
	return r
}

func schemaJSON(key int, name, valid, flexible string) string {
	return fmt.Sprintf(`{"apiKey": %d, "type": "request", "name": "%sRequest", "validVersions": %q, "flexibleVersions": %q}`,
		key, name, valid, flexible)
}

// A key's versions span every release; a newer release's "none" (a key it
// removed) and its raised minimum remove nothing; the name is the newest.
func TestJoinReleases(t *testing.T) {
	older := testRelease(t, "old.jar", map[string]string{
		"ProduceRequest.json":                    schemaJSON(0, "Produce", "0-11", "9+"),
		"ControlledShutdownRequest.json":         schemaJSON(7, "ControlledShutdown", "0-3", "3+"),
		"ListClientMetricsResourcesRequest.json": schemaJSON(74, "ListClientMetricsResources", "0", "0+"),
	})
	newer := testRelease(t, "new.jar", map[string]string{
		"ProduceRequest.json":               schemaJSON(0, "Produce", "3-13", "9+"),
		"ControlledShutdownRequest.json":    schemaJSON(7, "ControlledShutdown", "none", "none"),
		"ListConfigResourcesRequest.json":   schemaJSON(74, "ListConfigResources", "0-1", "0+"),
		"StreamsGroupHeartbeatRequest.json": schemaJSON(88, "StreamsGroupHeartbeat", "0-1", "0+"),
	})
	got := join([]release{older, newer})
	want := map[int16]api{
		0:  {Key: 0, Name: "Produce", MinVersion: 0, MaxVersion: 13, FlexibleFrom: 9, HeaderV3From: none},
		7:  {Key: 7, Name: "ControlledShutdown", MinVersion: 0, MaxVersion: 3, FlexibleFrom: 3, HeaderV3From: none},
		74: {Key: 74, Name: "ListConfigResources", MinVersion: 0, MaxVersion: 1, FlexibleFrom: 0, HeaderV3From: none},
		88: {Key: 88, Name: "StreamsGroupHeartbeat", MinVersion: 0, MaxVersion: 1, FlexibleFrom: 0, HeaderV3From: none},
	}
	if len(got) != len(want) {
		t.Fatalf("join = %d keys, want %d", len(got), len(want))
	}
	for k, w := range want {
		if g := got[k]; g == nil || g.Name != w.Name || g.MinVersion != w.MinVersion || g.MaxVersion != w.MaxVersion ||
			g.FlexibleFrom != w.FlexibleFrom || g.HeaderV3From != w.HeaderV3From {
			t.Errorf("key %d = %+v, want %+v", k, g, w)
		}
	}
	if older.apis[0].MaxVersion != 11 || older.apis[0].MinVersion != 0 || newer.apis[0].MinVersion != 3 {
		t.Error("join modified its input")
	}
}

// A jar is read like a directory: the *Request.json under common/message/.
func TestReadReleaseJar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kafka-clients-x.jar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range map[string]string{
		"common/message/FetchRequest.json":  schemaJSON(1, "Fetch", "4-18", "12+"),
		"common/message/FetchResponse.json": `{"apiKey": 1, "type": "response", "name": "FetchResponse"}`,
		"org/apache/kafka/Other.class":      "binary",
		"elsewhere/MetadataRequest.json":    schemaJSON(3, "Metadata", "0-13", "9+"),
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := readRelease(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.apis) != 1 || r.apis[1] == nil || r.apis[1].MinVersion != 4 || r.apis[1].MaxVersion != 18 || r.name != "kafka-clients-x.jar" {
		t.Errorf("release = %+v", r)
	}
}

// -check passes on the file -o wrote and fails, naming the first line,
// on a file that differs.
func TestRunCheck(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"OffsetDeleteRequest.json":               schemaJSON(47, "OffsetDelete", "0", "none"),
		"GetTelemetrySubscriptionsRequest.json":  schemaJSON(71, "GetTelemetrySubscriptions", "0", "0+"),
		"PushTelemetryRequest.json":              schemaJSON(72, "PushTelemetry", "0", "0+"),
		"InitializeShareGroupStateRequest.json":  schemaJSON(83, "InitializeShareGroupState", "0", "0+"),
		"ReadShareGroupStateRequest.json":        schemaJSON(84, "ReadShareGroupState", "0", "0+"),
		"WriteShareGroupStateRequest.json":       schemaJSON(85, "WriteShareGroupState", "0-1", "0+"),
		"DeleteShareGroupStateRequest.json":      schemaJSON(86, "DeleteShareGroupState", "0", "0+"),
		"ReadShareGroupStateSummaryRequest.json": schemaJSON(87, "ReadShareGroupStateSummary", "0-1", "0+"),
	})
	out := filepath.Join(t.TempDir(), "apis_gen.go")
	var stderr bytes.Buffer
	if err := run([]string{"-schemas", dir, "-o", out}, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if err := run([]string{"-schemas", dir, "-check", out}, &stderr); err != nil {
		t.Errorf("-check of what -o wrote: %v", err)
	}
	b, _ := os.ReadFile(out)
	stale := filepath.Join(t.TempDir(), "stale.go")
	if err := os.WriteFile(stale, bytes.Replace(b, []byte("MaxVersion: 2"), []byte("MaxVersion: 1"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run([]string{"-schemas", dir, "-check", stale}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "line ") {
		t.Errorf("-check of a stale file: %v", err)
	}
}

// The committed table: every key the overlay maps to header v3, and the
// versions the releases it names added, are there.
func TestCommittedTable(t *testing.T) {
	src, err := os.ReadFile("../../decode/apis_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range overlay() {
		want := fmt.Sprintf("{Key: %d, ", e.Key)
		row := ""
		for _, l := range strings.Split(string(src), "\n") {
			if strings.Contains(l, want) {
				row = l
			}
		}
		if !strings.Contains(row, fmt.Sprintf("MaxVersion: %d, ", e.MaxVersion)) || !strings.Contains(row, fmt.Sprintf("HeaderV3From: %d}", e.HeaderV3From)) {
			t.Errorf("overlay %q is not in decode/apis_gen.go: %q", e.Note, row)
		}
	}
	if !strings.Contains(string(src), "kafka-clients-4.4.0.jar") {
		t.Error("decode/apis_gen.go is not generated from kafka-clients 4.4.0")
	}
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
		{Key: 3, Name: "New", MaxVersion: 1, HeaderV3From: none},   // rename
		{Key: 4, Name: "Added", MaxVersion: 0, HeaderV3From: none}, // absent: added
		{Key: 5, MaxVersion: 1, HeaderV3From: 1},                   // never flexible: v1 added flexible, header v3
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
		"lower than the schemas":  {Key: 2, MaxVersion: 9, HeaderV3From: none},
		"already in the schemas":  {Key: 6, Name: "Newer", MaxVersion: 1, HeaderV3From: none},
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
	r, err := readRelease(dir)
	if err != nil {
		t.Fatal(err)
	}
	apis, warnings := r.apis, r.warnings
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
		"no files":          {"README.md": "x"},
		"bad json":          {"ARequest.json": `{"apiKey": 1,,}`},
		"not a request":     {"ARequest.json": `{"apiKey": 1, "type": "response", "name": "ARequest", "validVersions": "0", "flexibleVersions": "none"}`},
		"missing key":       {"ARequest.json": `{"type": "request", "name": "ARequest", "validVersions": "0", "flexibleVersions": "none"}`},
		"bad name":          {"ARequest.json": `{"apiKey": 1, "type": "request", "name": "Request", "validVersions": "0", "flexibleVersions": "none"}`},
		"bad versions":      {"ARequest.json": `{"apiKey": 1, "type": "request", "name": "ARequest", "validVersions": "0+", "flexibleVersions": "none"}`},
		"only removed keys": {"ARequest.json": `{"apiKey": 1, "type": "request", "name": "ARequest", "validVersions": "none", "flexibleVersions": "none"}`},
		"bad flexible":      {"ARequest.json": `{"apiKey": 1, "type": "request", "name": "ARequest", "validVersions": "0", "flexibleVersions": "1"}`},
	} {
		if r, err := readRelease(writeFiles(t, files)); err == nil && len(r.apis) > 0 {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"-schemas", "x"},
		{"-o", "x"},
		{"-schemas", "x", "-o", "y", "-check", "z"},
		{"-schemas", "x", "-o", "y", "extra"},
		{"-nosuchflag"},
	} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("run(%q): no error", args)
		}
	}
	if err := run([]string{"-schemas", t.TempDir(), "-o", filepath.Join(t.TempDir(), "x.go")}, io.Discard); err == nil {
		t.Error("run with an empty schema dir: no error")
	}
}

func TestRenderIsGofmtAndDeterministic(t *testing.T) {
	rows := []api{
		{Key: 0, Name: "Produce", MinVersion: 0, MaxVersion: 13, FlexibleFrom: 9, HeaderV3From: none, Notes: []string{"max 11→13"}},
		{Key: 2, Name: "Skip", MinVersion: 0, MaxVersion: 0, FlexibleFrom: 0, HeaderV3From: none},
	}
	a, err := render(rows, []string{"a.jar"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := render(rows, []string{"a.jar"})
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
