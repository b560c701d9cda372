package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/report/internal/textdoc"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files of report/testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./report -update rewrites it after review)\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

func render(t *testing.T, a *Analysis, opt AnalysisOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteAnalysis(&buf, a, opt); err != nil {
		t.Fatalf("WriteAnalysis %s: %v", opt.Format, err)
	}
	return buf.Bytes()
}

func TestAnalysisGolden(t *testing.T) {
	cases := []struct {
		name string
		a    func() *Analysis
		opt  AnalysisOptions
	}{
		{"incident.table", incidentAnalysis, AnalysisOptions{Format: "table"}},
		{"incident.verbose.table", incidentAnalysis, AnalysisOptions{Format: "table", Verbose: true}},
		{"incident.md", incidentAnalysis, AnalysisOptions{Format: "markdown", Verbose: true}},
		{"incident.json", incidentAnalysis, AnalysisOptions{Format: "json"}},
		{"incident.ndjson", incidentAnalysis, AnalysisOptions{Format: "ndjson"}},
		{"incident.csv", incidentAnalysis, AnalysisOptions{Format: "csv"}},
		{"quiet-rfc4122.table", quietAnalysis, AnalysisOptions{Format: "table", UUID: UUIDRFC4122}},
		{"quiet-rfc4122.md", quietAnalysis, AnalysisOptions{Format: "markdown", UUID: UUIDRFC4122}},
		{"quiet-rfc4122.json", quietAnalysis, AnalysisOptions{Format: "json", UUID: UUIDRFC4122}},
		{"quiet-rfc4122.ndjson", quietAnalysis, AnalysisOptions{Format: "ndjson", UUID: UUIDRFC4122}},
		{"quiet-rfc4122.csv", quietAnalysis, AnalysisOptions{Format: "csv", UUID: UUIDRFC4122}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, "analysis_"+c.name+".golden", render(t, c.a(), c.opt))
		})
	}
}

func TestAnalysisFormats(t *testing.T) {
	for _, f := range []string{"table", "json", "ndjson", "csv", "markdown"} {
		if !ValidAnalyzeFormat(f) {
			t.Errorf("ValidAnalyzeFormat(%q) = false", f)
		}
	}
	if ValidAnalyzeFormat("yaml") {
		t.Error("ValidAnalyzeFormat(yaml) = true")
	}
	var buf bytes.Buffer
	if err := WriteAnalysis(&buf, incidentAnalysis(), AnalysisOptions{Format: "yaml"}); err == nil {
		t.Error("WriteAnalysis yaml: no error")
	}
	// Nothing at all: every format still writes its frame.
	for _, f := range []string{"table", "json", "ndjson", "csv", "markdown"} {
		for _, v := range []bool{false, true} {
			if out := render(t, &Analysis{}, AnalysisOptions{Format: f, Verbose: v, Color: v}); len(out) == 0 {
				t.Errorf("%s of an empty analysis is empty", f)
			}
		}
	}
}

// lookup follows a key path ("findings.connection.client") through maps and
// the first element of arrays.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		if arr, ok := v.([]any); ok {
			if len(arr) == 0 {
				return nil, false
			}
			v = arr[0]
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// cliJSONNames are the names docs/design/cli.md's Output section says the JSON
// document holds; none may be renamed.
var cliJSONNames = []string{
	"schema_version",
	"summary", "summary.files", "summary.packets", "summary.bytes", "summary.connections",
	"summary.requests", "summary.responses", "summary.findings_by_severity", "summary.findings_by_severity.error",
	"findings", "findings.id", "findings.rule", "findings.severity", "findings.file", "findings.frame", "findings.related_frames",
	"findings.connection", "findings.connection.client", "findings.connection.broker",
	"findings.api_key", "findings.api_name", "findings.api_version", "findings.correlation_id",
	"findings.expected", "findings.seen", "findings.broker_answer", "findings.message",
	"connections", "connections.client", "connections.broker", "connections.client_id", "connections.instance_id",
	"connections.profile", "connections.mid_stream", "connections.requests", "connections.responses", "connections.gaps",
	"instances",
	"brokers", "brokers.broker", "brokers.kip1313", "brokers.evidence_frames",
}

func TestAnalysisJSONNames(t *testing.T) {
	for _, a := range []*Analysis{incidentAnalysis(), quietAnalysis(), {}} {
		var doc map[string]any
		if err := json.Unmarshal(render(t, a, AnalysisOptions{Format: "json"}), &doc); err != nil {
			t.Fatal(err)
		}
		for _, p := range cliJSONNames {
			if strings.Contains(p, ".") && len(a.Result.Findings) == 0 && len(a.Result.Brokers) == 0 {
				continue // an empty result has no elements to look into
			}
			if _, ok := lookup(doc, p); !ok {
				t.Errorf("JSON has no %s", p)
			}
		}
		if doc["schema_version"] != float64(AnalysisSchemaVersion) || AnalysisSchemaVersion != 2 {
			t.Errorf("schema_version = %v", doc["schema_version"])
		}
		for _, k := range []string{"findings", "connections", "instances", "brokers"} {
			if _, ok := doc[k].([]any); !ok {
				t.Errorf("%s is %T, want an array (never null)", k, doc[k])
			}
		}
	}

	// Values: null where docs/design/cli.md says so, each finding listed, IPv6 in brackets.
	a := incidentAnalysis()
	var doc struct {
		Summary struct {
			Files              []string       `json:"files"`
			FindingsBySeverity map[string]int `json:"findings_by_severity"`
		} `json:"summary"`
		Findings    []map[string]any `json:"findings"`
		Connections []map[string]any `json:"connections"`
		Brokers     []map[string]any `json:"brokers"`
	}
	if err := json.Unmarshal(render(t, a, AnalysisOptions{Format: "json"}), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings) != len(a.Result.Findings) {
		t.Errorf("%d findings in JSON, want each of %d", len(doc.Findings), len(a.Result.Findings))
	}
	if got := doc.Summary.FindingsBySeverity; got["error"] != 5 || got["warning"] != 4 || got["info"] != 10 {
		t.Errorf("findings_by_severity = %v", got)
	}
	answers := map[any]bool{}
	for _, f := range doc.Findings {
		answers[f["broker_answer"]] = true
		if f["rule"] == rules.StreamGap && f["broker_answer"] != nil {
			t.Errorf("stream-gap broker_answer = %v, want null", f["broker_answer"])
		}
		if f["rule"] == rules.StreamGap && f["api_key"] != nil {
			t.Errorf("stream-gap api_key = %v, want null", f["api_key"])
		}
		if f["file"] != a.Files[0] && f["file"] != a.Files[1] {
			t.Errorf("file = %v", f["file"])
		}
	}
	for _, want := range []any{"INVALID_REQUEST", "NONE", nil, noResponseText, closedByBrokerText} {
		if !answers[want] {
			t.Errorf("no finding with broker_answer %v", want)
		}
	}
	v6 := doc.Connections[2]
	if v6["client"] != "[2001:db8:10::7]:40112" || v6["broker"] != "[2001:db8::11]:9092" {
		t.Errorf("IPv6 connection = %v → %v", v6["client"], v6["broker"])
	}
	old := doc.Connections[3]
	if old["instance_id"] != nil || old["profile"] != nil {
		t.Errorf("old client: instance_id %v, profile %v, want null", old["instance_id"], old["profile"])
	}
	if doc.Connections[0]["instance_id"] != instA.String() || doc.Connections[0]["profile"] != "seed" {
		t.Errorf("connection 1: instance_id %v, profile %v", doc.Connections[0]["instance_id"], doc.Connections[0]["profile"])
	}
	if doc.Connections[4]["client_id"] != nil {
		t.Errorf("client_id of a connection without one = %v, want null", doc.Connections[4]["client_id"])
	}
	verdicts := map[any]bool{}
	for _, b := range doc.Brokers {
		verdicts[b["kip1313"]] = true
	}
	for _, v := range []string{"enforces", "ignores", "mixed", "unknown"} {
		if !verdicts[v] {
			t.Errorf("no broker with kip1313 %q", v)
		}
	}

	// rfc4122: structured UUIDs and the ones inside expected/seen.
	var q struct {
		Findings    []map[string]any `json:"findings"`
		Connections []map[string]any `json:"connections"`
	}
	if err := json.Unmarshal(render(t, incidentAnalysis(), AnalysisOptions{Format: "json", UUID: UUIDRFC4122}), &q); err != nil {
		t.Fatal(err)
	}
	if q.Connections[0]["instance_id"] != instA.RFC4122() {
		t.Errorf("rfc4122 instance_id = %v", q.Connections[0]["instance_id"])
	}
	if e, _ := lookup(q.Findings[1], "expected.id"); e != instA.RFC4122() {
		t.Errorf("rfc4122 expected = %v", q.Findings[1]["expected"])
	}
	if e, _ := lookup(q.Findings[1], "seen.id"); e != otherX.RFC4122() {
		t.Errorf("rfc4122 seen = %v", q.Findings[1]["seen"])
	}
}

func TestAnalysisTableWidthAndColour(t *testing.T) {
	short := []func() *Analysis{
		func() *Analysis { return shortValues(incidentAnalysis()) },
		func() *Analysis { return shortValues(quietAnalysis()) },
		quietAnalysis,
	}
	for _, mk := range short {
		for _, verbose := range []bool{false, true} {
			out := render(t, mk(), AnalysisOptions{Format: "table", Verbose: verbose})
			for i, l := range strings.Split(string(out), "\n") {
				if w := twwidth.Width(l); w > termWidth {
					t.Errorf("line %d is %d columns wide:\n%s", i+1, w, l)
				}
			}
			if bytes.ContainsRune(out, 0x1b) {
				t.Error("ANSI escape without Color")
			}
		}
	}
	for _, f := range []string{"markdown", "json", "ndjson", "csv"} {
		if out := render(t, incidentAnalysis(), AnalysisOptions{Format: f, Color: true, Verbose: true}); bytes.ContainsRune(out, 0x1b) {
			t.Errorf("ANSI escape in %s", f)
		}
	}
	col := render(t, incidentAnalysis(), AnalysisOptions{Format: "table", Color: true})
	if !bytes.Contains(col, []byte(ansiError+"Errors"+ansiReset)) || !bytes.Contains(col, []byte(ansiWarning+"Warnings"+ansiReset)) {
		t.Errorf("no coloured severity words with Color:\n%s", col)
	}
	// Colour changes nothing but the escapes.
	plainOut := render(t, incidentAnalysis(), AnalysisOptions{Format: "table"})
	if stripped := stripANSI(string(col)); stripped != string(plainOut) {
		t.Errorf("coloured table differs from the plain one beyond escapes:\n%s", stripped)
	}
}

func stripANSI(s string) string {
	for _, c := range []string{ansiReset, ansiError, ansiWarning, ansiInfo} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}

func TestAnalysisTableContent(t *testing.T) {
	out := string(render(t, incidentAnalysis(), AnalysisOptions{Format: "table"}))
	// docs/design/cli.md's order of sections.
	last := -1
	for _, h := range []string{"SUMMARY", "FINDINGS", "CONNECTIONS (6)", "CLIENT INSTANCES (2)", "BROKERS (4)", "OLD/NEW CLIENT × OLD/NEW BROKER"} {
		i := strings.Index(out, "\n"+h)
		if h == "SUMMARY" {
			i = strings.Index(out, h)
		}
		if i < 0 || i < last {
			t.Errorf("section %q missing or out of order", h)
		}
		last = i
	}
	if strings.Count(out, "header-id-changed") != 1 {
		t.Errorf("header-id-changed is in %d rows, want one grouped row", strings.Count(out, "header-id-changed"))
	}
	if !strings.Contains(out, "×3") {
		t.Error("no ×3 count for the grouped row")
	}
	if !strings.Contains(out, "10 info findings (7 rows) hidden; -v shows them.") {
		t.Error("no note of the hidden info findings")
	}
	if strings.Contains(out, instA.String()) && strings.Contains(out, "│ "+instA.String()) {
		t.Error("a full UUID in a table column; tables shorten them")
	}
	if !strings.Contains(out, instA.String()[:minAbbrev]+"…") {
		t.Error("no shortened instance ID")
	}
	verbose := string(render(t, incidentAnalysis(), AnalysisOptions{Format: "table", Verbose: true}))
	if !strings.Contains(verbose, "header-id-repeated") || !strings.Contains(verbose, "×4") {
		t.Error("-v does not show the info findings grouped")
	}
}

func TestAnalysisNDJSON(t *testing.T) {
	a := incidentAnalysis()
	out := render(t, a, AnalysisOptions{Format: "ndjson"})
	kinds := map[string]int{}
	var lastKind string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		k, _ := m["kind"].(string)
		switch k {
		case "finding":
			if _, ok := lookup(m, "connection.client"); !ok {
				t.Errorf("finding line without connection.client: %s", sc.Text())
			}
		case "summary":
			if _, ok := m["findings_by_severity"]; !ok {
				t.Errorf("summary line without findings_by_severity: %s", sc.Text())
			}
		case "run":
			if kinds["run"] > 0 || len(kinds) > 0 {
				t.Errorf("run line not the first: %s", sc.Text())
			}
			if m["schema_version"] != float64(AnalysisSchemaVersion) || m["kidscope_version"] != "v1.4.0" {
				t.Errorf("run line %s", sc.Text())
			}
		case "connection", "instance", "broker":
		default:
			t.Errorf("line of kind %q: %s", k, sc.Text())
		}
		kinds[k]++
		lastKind = k
	}
	want := map[string]int{"finding": len(a.Result.Findings), "connection": len(a.Result.Connections),
		"instance": len(a.Result.Instances), "broker": len(a.Result.Brokers), "summary": 1, "run": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d lines of kind %s, want %d", kinds[k], k, n)
		}
	}
	if lastKind != "summary" {
		t.Errorf("last line is a %s, want the summary", lastKind)
	}
	// live: the run line and the findings went out first.
	live := string(render(t, a, AnalysisOptions{Format: "ndjson", OmitFindings: true, OmitRun: true}))
	if strings.Contains(live, `"kind":"run"`) || strings.Contains(live, `"kind":"finding"`) || !strings.Contains(live, `"kind":"summary"`) {
		t.Errorf("ndjson without run and findings:\n%s", live)
	}
}

func TestWriteFindingLine(t *testing.T) {
	a := incidentAnalysis()
	for i := range a.Result.Findings {
		f := &a.Result.Findings[i]
		var buf bytes.Buffer
		if err := WriteFindingLine(&buf, a.Files, nil, f, UUIDKafka); err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 1 || !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
			t.Fatalf("not one line: %q", buf.String())
		}
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m["kind"] != "finding" || m["rule"] != f.Rule || m["frame"] != float64(f.At.Frame) ||
			m["id"] != FindingID(Origin{File: a.Files[f.At.File]}, f) {
			t.Errorf("line %s", buf.String())
		}
		// An agent's line: the ID is of its agent and run too.
		buf.Reset()
		if err := WriteFindingLine(&buf, a.Files, AgentOrigins("host-1", "r1", a.Files), f, UUIDKafka); err != nil {
			t.Fatal(err)
		}
		if want := FindingID(Origin{"host-1", "r1", a.Files[f.At.File]}, f); !strings.Contains(buf.String(), `"id":"`+want+`"`) || want == m["id"] {
			t.Errorf("agent's line %s: want id %s", buf.String(), want)
		}
		txt := FormatFindingText(a.Files, f, false)
		if strings.ContainsAny(txt, "\n\x1b") || !strings.Contains(txt, f.Rule) || !strings.Contains(txt, f.Conn.Client.String()) {
			t.Errorf("text line %q", txt)
		}
		if col := FormatFindingText(a.Files, f, true); !strings.HasPrefix(col, severityColor(f.Severity)) {
			t.Errorf("coloured text line %q", col)
		}
	}
	got := FormatFindingText(a.Files, &a.Result.Findings[1], false)
	want := "error header-id-changed captures/broker-a.pcapng:117 (related 5, 118) 10.1.4.20:51234 → 10.1.0.11:9092: " +
		"Metadata v12 (correlation 41): a later request carries a non-zero instance ID different from the connection's established one; " +
		"expected " + instA.String() + ", seen " + otherX.String() + "; broker answer: INVALID_REQUEST"
	if got != want {
		t.Errorf("FormatFindingText:\n got %s\nwant %s", got, want)
	}
}

func TestAnalysisCSV(t *testing.T) {
	a := incidentAnalysis()
	recs, err := csv.NewReader(bytes.NewReader(render(t, a, AnalysisOptions{Format: "csv"}))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(a.Result.Findings)+1 {
		t.Fatalf("%d records, want a header and %d findings", len(recs), len(a.Result.Findings))
	}
	// The header is the JSON finding's names, connection split in two.
	var doc struct {
		Findings []map[string]json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal(render(t, a, AnalysisOptions{Format: "json"}), &doc); err != nil {
		t.Fatal(err)
	}
	cols := map[string]bool{}
	for _, c := range recs[0] {
		cols[c] = true
	}
	for k := range doc.Findings[0] {
		if k == "answer" {
			continue // broker_answer in words
		}
		if k == "connection" {
			if !cols["client"] || !cols["broker"] {
				t.Error("csv has no client and broker columns")
			}
			continue
		}
		if !cols[k] {
			t.Errorf("csv has no %s column", k)
		}
	}
	if len(cols) != len(doc.Findings[0]) {
		t.Errorf("csv columns %v are not the JSON finding's names", recs[0])
	}
	if r := recs[2]; r[5] != "5 118" {
		t.Errorf("related_frames = %q, want space-joined", r[5])
	}
	empty := render(t, &Analysis{}, AnalysisOptions{Format: "csv"})
	if string(empty) != strings.Join(findingColumns, ",")+"\n" {
		t.Errorf("csv of nothing = %q", empty)
	}
}

// TestValueText: the words of each kind of typed evidence, with its IDs in
// the chosen form and capture-derived text as sent.
func TestValueText(t *testing.T) {
	k, r := instA.String(), instA.RFC4122()
	cases := []struct {
		v              rules.Value
		kafka, rfc4122 string
	}{
		{id(instA), k, r},
		{named(instA), k, r},
		{named(kafka.UUID{}), "ZERO", "ZERO"},
		{named(kafka.UUID{15: 1}), "ONE", "ONE"},
		{id(kafka.UUID{15: 1}), "AAAAAAAAAAAAAAAAAAAAAQ", "00000000-0000-0000-0000-000000000001"},
		{rules.Value{Kind: rules.ValueHeaderBodyID, ID: instA}, "body ID " + k + " (the header's)", "body ID " + r + " (the header's)"},
		{rules.Value{Kind: rules.ValueBodyID}, "body ID ZERO", "body ID ZERO"},
		{rules.Value{Kind: rules.ValueEchoOrZero, ID: instA}, k + " (echoed) or ZERO", r + " (echoed) or ZERO"},
		{rules.Value{Kind: rules.ValueAlsoFrom, ID: instA, Addr: ad("10.2.0.5")}, k + " also from 10.2.0.5", r + " also from 10.2.0.5"},
		{rules.Value{Kind: rules.ValueOneAddress, Addr: ad("2001:db8::1")}, "one client address (2001:db8::1)", "one client address (2001:db8::1)"},
		// A member or client ID that looks like a UUID is the client's text.
		{rules.Value{Kind: rules.ValueMemberID, Text: "m " + k}, `member ID "m ` + k + `"`, `member ID "m ` + k + `"`},
		{rules.Value{Kind: rules.ValueClientID, Text: k}, `ClientId "` + k + `"`, `ClientId "` + k + `"`},
		{rules.Value{Kind: rules.ValueJoinGroupVersion, Version: 3}, "JoinGroup v3", "JoinGroup v3"},
		{rules.Value{Kind: rules.ValueErrorCode, Code: 42}, "INVALID_REQUEST", "INVALID_REQUEST"},
		{rules.Value{}, "", ""},
	}
	for _, c := range cases {
		if got := valueText(c.v, UUIDKafka.format); got != c.kafka {
			t.Errorf("valueText(%+v, kafka) = %q, want %q", c.v, got, c.kafka)
		}
		if got := valueText(c.v, UUIDRFC4122.format); got != c.rfc4122 {
			t.Errorf("valueText(%+v, rfc4122) = %q, want %q", c.v, got, c.rfc4122)
		}
	}
}

// TestAnswerName: the broker's answer, by what became of the request.
func TestAnswerName(t *testing.T) {
	cases := []struct {
		a    rules.Answer
		want string
	}{
		{rules.Answer{State: rules.Answered, Codes: []int16{42}}, "INVALID_REQUEST"},
		{rules.Answer{State: rules.Answered, Codes: []int16{0, 3}}, "NONE, UNKNOWN_TOPIC_OR_PARTITION"},
		{rules.Answer{State: rules.Answered}, ""},
		{rules.Answer{State: rules.NoResponse}, "no response in capture"},
		{rules.Answer{State: rules.NoResponseByDesign}, "none expected (acks = 0)"},
		{rules.Answer{State: rules.ClosedByBroker}, "connection closed by the broker"},
		{rules.Answer{}, ""},
	}
	for _, c := range cases {
		if got := answerName(c.a); got != c.want {
			t.Errorf("answerName(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
}

// TestFindingMessage: a request's finding says its API, the rule's
// summary and what limits it; a stream's says what the bytes showed.
func TestFindingMessage(t *testing.T) {
	cases := []struct {
		f    rules.Finding
		want string
	}{
		{rules.Finding{Rule: rules.TelemetryPushUnknownID, HasAPI: true, APIKey: 72, APIVersion: 0, CorrelationID: 30, AfterGap: true},
			"PushTelemetry v0 (correlation 30): a PushTelemetry with an ID no GetTelemetrySubscriptions exchange in the capture assigned or accepted" +
				" (the capture may have started after it); bytes of this connection were lost before it"},
		{rules.Finding{Rule: rules.HeaderIDChanged, HasAPI: true, APIKey: 3, APIVersion: 12, CorrelationID: 4, Also: []string{rules.TelemetryBodyMismatch}},
			"Metadata v12 (correlation 4): a later request carries a non-zero instance ID different from the connection's established one; also: telemetry-body-mismatch"},
		{rules.Finding{Rule: rules.StreamGap, Stream: rules.Stream{Kind: rules.LostBytes, Side: kafka.ToClient, Resynced: true, Skipped: 7}},
			"bytes of the responses were lost; the Kafka framing was found again 7 bytes later"},
		{rules.Finding{Rule: rules.StreamGap, Stream: rules.Stream{Kind: rules.LostBytes, Side: kafka.ToBroker}},
			"bytes of the requests were lost and the framing was not found again"},
		{rules.Finding{Rule: rules.StreamNotKafka, Seen: rules.Value{Kind: rules.ValueNotKafka, Text: "TLS"}, Stream: rules.Stream{Kind: rules.NotKafkaBytes}},
			"the bytes on this Kafka port are not Kafka: TLS"},
		{rules.Finding{Rule: rules.StreamUnanswered, Count: 1, Stream: rules.Stream{Kind: rules.UnansweredRequests}},
			"1 request has no response in the capture"},
		{rules.Finding{Rule: rules.StreamUnanswered, Count: 2, Stream: rules.Stream{Kind: rules.UnansweredRequests}},
			"2 requests have no response in the capture"},
	}
	for _, c := range cases {
		if got := findingMessage(&c.f); got != c.want {
			t.Errorf("findingMessage(%s) = %q, want %q", c.f.Rule, got, c.want)
		}
	}
}

func TestWrap(t *testing.T) {
	got := textdoc.Wrap("expected a non-reserved ID in the first header-v3 request", 20)
	want := []string{"expected a", "non-reserved ID in", "the first header-v3", "request"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap = %q", got)
	}
	if got := textdoc.Wrap("abcdefghij", 4); strings.Join(got, "|") != "abcd|efgh|ij" {
		t.Errorf("wrap of a long word = %q", got)
	}
}

func TestMarkdownEscape(t *testing.T) {
	if got := textdoc.MarkdownEscape("a|b_c*d<e>[f]"); got != `a\|b\_c\*d\<e\>\[f\]` {
		t.Errorf("mdEscape = %q", got)
	}
	out := string(render(t, incidentAnalysis(), AnalysisOptions{Format: "markdown", Verbose: true}))
	for _, h := range []string{"# kidscope analyze", "## Summary", "## Findings", "### Errors", "### Warnings", "### Info",
		"## Connections (6)", "## Client instances (2)", "## Brokers (4)", "## Old/new client × old/new broker"} {
		if !strings.Contains(out, "\n"+h) && !strings.HasPrefix(out, h) {
			t.Errorf("markdown has no heading %q", h)
		}
	}
	// Every table row has as many cells as its header.
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "|") && !strings.HasSuffix(l, "|") {
			t.Errorf("broken table row %q", l)
		}
	}
	if !strings.Contains(out, textdoc.MarkdownEscape(instA.String())) {
		t.Error("markdown shortens UUIDs; it should show them whole")
	}
}
