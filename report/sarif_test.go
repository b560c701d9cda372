package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/kidscope/kidscope/internal/sarifcheck"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// sarifOpt is what the goldens' command would have said of its run.
var sarifOpt = AnalysisOptions{Format: "sarif", SARIF: SARIFInvocation{ToolVersion: "v0.0.0-test", ExitCode: 1, Successful: true}}

func renderSARIF(t *testing.T, a *Analysis, opt AnalysisOptions) (out []byte, doc map[string]any) {
	t.Helper()
	out = render(t, a, opt)
	if err := sarifcheck.Validate(out); err != nil {
		t.Fatalf("not valid SARIF 2.1.0: %v\n%s", err, out)
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	return out, doc
}

// TestSARIFGolden: the SARIF of the hand-built analyses, valid against
// the SARIF 2.1.0 schema and as reviewed.
func TestSARIFGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		a    func() *Analysis
		opt  AnalysisOptions
	}{
		{"incident", incidentAnalysis, sarifOpt},
		{"quiet-rfc4122", quietAnalysis, AnalysisOptions{Format: "sarif", UUID: UUIDRFC4122,
			SARIF: SARIFInvocation{ToolVersion: "v0.0.0-test", Successful: true}}},
		{"capped", cappedAnalysis, sarifOpt},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := renderSARIF(t, c.a(), c.opt)
			golden(t, "analysis_"+c.name+".sarif.golden", out)
		})
	}
	// Nothing at all is a valid log too.
	renderSARIF(t, &Analysis{}, AnalysisOptions{Format: "sarif"})
}

func sarifRun0(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	runs, _ := doc["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	return runs[0].(map[string]any)
}

// TestSARIFResults: one result per finding, each pointing at its rule in
// the catalogue, at the level of its severity, at its file and frame.
func TestSARIFResults(t *testing.T) {
	a := incidentAnalysis()
	_, doc := renderSARIF(t, a, sarifOpt)
	run := sarifRun0(t, doc)
	driver := run["tool"].(map[string]any)["driver"].(map[string]any)
	if driver["name"] != "kidscope" || driver["version"] != "v0.0.0-test" {
		t.Errorf("driver %v %v", driver["name"], driver["version"])
	}
	ruleList := driver["rules"].([]any)
	if len(ruleList) < len(rules.Catalog()) {
		t.Errorf("%d rules, the catalogue has %d", len(ruleList), len(rules.Catalog()))
	}
	results := run["results"].([]any)
	if len(results) != len(a.Result.Findings) {
		t.Fatalf("%d results for %d findings", len(results), len(a.Result.Findings))
	}
	levels := map[rules.Severity]string{rules.Error: "error", rules.Warning: "warning", rules.Info: "note"}
	for i, x := range results {
		r := x.(map[string]any)
		f := &a.Result.Findings[i]
		rule := ruleList[int(r["ruleIndex"].(float64))].(map[string]any)
		if r["ruleId"] != f.Rule || rule["id"] != f.Rule {
			t.Errorf("result %d: ruleId %v, rules[ruleIndex] %v, want %s", i, r["ruleId"], rule["id"], f.Rule)
		}
		if r["level"] != levels[f.Severity] {
			t.Errorf("result %d: level %v for %s", i, r["level"], f.Severity)
		}
		if cat, ok := rules.Lookup(f.Rule); ok {
			if rule["shortDescription"].(map[string]any)["text"] != cat.Summary ||
				rule["defaultConfiguration"].(map[string]any)["level"] != levels[cat.Severity] {
				t.Errorf("rule %s: not the catalogue's summary and level: %v", f.Rule, rule)
			}
		}
		msg := r["message"].(map[string]any)["text"].(string)
		if want := fmt.Sprintf("Frame %d, %s → %s: ", f.At.Frame, f.Conn.Client, f.Conn.Broker); !strings.HasPrefix(msg, want) {
			t.Errorf("result %d: message %q does not start with %q", i, msg, want)
		}
		loc := r["locations"].([]any)[0].(map[string]any)
		phys := loc["physicalLocation"].(map[string]any)
		art := phys["artifactLocation"].(map[string]any)
		if art["uri"] != fileName(a.Files, f.At.File) || art["uriBaseId"] != "%SRCROOT%" {
			t.Errorf("result %d: artifact %v, want %s under %%SRCROOT%%", i, art, fileName(a.Files, f.At.File))
		}
		if phys["region"].(map[string]any)["startLine"] != 1.0 {
			t.Errorf("result %d: region %v", i, phys["region"])
		}
		if got := loc["properties"].(map[string]any)["frame"]; got != float64(f.At.Frame) {
			t.Errorf("result %d: frame %v, want %d", i, got, f.At.Frame)
		}
		if rel := r["relatedLocations"].([]any); len(rel) != len(f.Related) {
			t.Errorf("result %d: %d related locations for %d related frames", i, len(rel), len(f.Related))
		} else {
			for j, y := range rel {
				if got := y.(map[string]any)["properties"].(map[string]any)["frame"]; got != float64(f.Related[j].Frame.Frame) {
					t.Errorf("result %d: related %d is frame %v, want %d", i, j, got, f.Related[j].Frame.Frame)
				}
			}
		}
		fp := r["partialFingerprints"].(map[string]any)[sarifFingerprintKey]
		if s, _ := fp.(string); len(s) != 64 {
			t.Errorf("result %d: fingerprint %v", i, fp)
		}
	}
	artifacts := run["artifacts"].([]any)
	if len(artifacts) != len(a.Files) {
		t.Errorf("%d artifacts for %d files", len(artifacts), len(a.Files))
	}
	inv := run["invocations"].([]any)[0].(map[string]any)
	if inv["executionSuccessful"] != true || inv["exitCode"] != 1.0 {
		t.Errorf("invocation %v", inv)
	}
}

// TestSARIFFingerprint: the same finding in another run (another frame,
// another correlation ID) has the same fingerprint; another rule, other
// endpoints or other IDs have another.
func TestSARIFFingerprint(t *testing.T) {
	base := rules.Finding{Rule: rules.HeaderIDChanged, Severity: rules.Error, At: at(0, 10, 0),
		Conn:   kafka.Endpoints{Client: ap("10.0.1.10:51044"), Broker: ap("10.0.0.2:9092")},
		HasAPI: true, APIKey: 3, APIVersion: 12, CorrelationID: 4, Expected: id(instA), Seen: id(otherX)}
	fp := sarifFingerprint(&base)
	same := base
	same.At, same.CorrelationID = at(0, 99, 3), 77
	if sarifFingerprint(&same) != fp {
		t.Error("another frame and correlation ID changed the fingerprint")
	}
	for name, change := range map[string]func(*rules.Finding){
		"rule":   func(f *rules.Finding) { f.Rule = rules.HeaderIDLate },
		"client": func(f *rules.Finding) { f.Conn.Client = ap("10.0.1.10:51045") },
		"broker": func(f *rules.Finding) { f.Conn.Broker = ap("10.0.0.3:9092") },
		"seen":   func(f *rules.Finding) { f.Seen = id(otherY) },
		"api":    func(f *rules.Finding) { f.APIKey = 0 },
	} {
		f := base
		change(&f)
		if sarifFingerprint(&f) == fp {
			t.Errorf("another %s kept the fingerprint", name)
		}
	}
	// --uuid writes IDs another way, not other IDs.
	a := &Analysis{Files: []string{"x.pcapng"}, Result: rules.Result{Findings: []rules.Finding{base}}}
	_, d1 := renderSARIF(t, a, AnalysisOptions{Format: "sarif"})
	_, d2 := renderSARIF(t, a, AnalysisOptions{Format: "sarif", UUID: UUIDRFC4122})
	fps := func(doc map[string]any) any {
		return sarifRun0(t, doc)["results"].([]any)[0].(map[string]any)["partialFingerprints"]
	}
	if fmt.Sprint(fps(d1)) != fmt.Sprint(fps(d2)) {
		t.Error("--uuid changed the fingerprint")
	}
}

// TestSARIFCaps: what the engine's cap left out is counted in the run's
// properties with the true numbers, and said in a notification.
func TestSARIFCaps(t *testing.T) {
	a := cappedAnalysis()
	_, doc := renderSARIF(t, a, sarifOpt)
	run := sarifRun0(t, doc)
	if n := len(run["results"].([]any)); n != 20 {
		t.Errorf("%d results, want the 20 findings listed", n)
	}
	p := run["properties"].(map[string]any)
	for k, want := range map[string]float64{"findingsTotal": 2500, "findingsListed": 20, "findingsNotListed": 2480,
		"connectionsNotListed": 26, "instancesNotListed": 28, "brokerConnectionsNotListed": 4, "connectionsNotAnalysed": 100000} {
		if p[k] != want {
			t.Errorf("properties.%s = %v, want %v", k, p[k], want)
		}
	}
	if got := p["findingsBySeverity"].(map[string]any)["error"]; got != 2500.0 {
		t.Errorf("findingsBySeverity.error = %v, want 2500", got)
	}
	g := p["findingCounts"].([]any)[0].(map[string]any)
	if g["count"] != 2500.0 || g["listed"] != 20.0 {
		t.Errorf("findingCounts[0] = %v, want count 2500, listed 20", g)
	}
	notes := run["invocations"].([]any)[0].(map[string]any)["toolExecutionNotifications"].([]any)
	if len(notes) == 0 || !strings.Contains(fmt.Sprint(notes[0]), "2,480 of 2,500 findings are not listed") {
		t.Errorf("no notification of the findings not listed: %v", notes)
	}
}

// TestSARIFResultLimit: past GitHub's limit of results in a run, the
// findings are counted, not listed: an upload over it would be rejected.
func TestSARIFResultLimit(t *testing.T) {
	f := rules.Finding{Rule: rules.HeaderIDChanged, Severity: rules.Error, At: at(0, 10, 0), ConnID: 1,
		Conn: kafka.Endpoints{Client: ap("10.0.1.10:51044"), Broker: ap("10.0.0.2:9092")}}
	fs := make([]rules.Finding, sarifMaxResults+5)
	for i := range fs {
		fs[i] = f
		fs[i].At.Frame = int64(i + 1)
	}
	a := &Analysis{Files: []string{"x.pcapng"}, Result: rules.Result{Findings: fs}}
	doc := newSARIFLog(a, sarifOpt)
	run := &doc.Runs[0]
	if len(run.Results) != sarifMaxResults || run.Properties.FindingsNotListed != 5 || run.Properties.FindingsTotal != int64(len(fs)) {
		t.Errorf("%d results, %d not listed of %d, want %d, 5 of %d", len(run.Results), run.Properties.FindingsNotListed,
			run.Properties.FindingsTotal, sarifMaxResults, len(fs))
	}
	if g := run.Properties.FindingCounts[0]; g.Listed != sarifMaxResults || g.Count != int64(len(fs)) {
		t.Errorf("group %+v", g)
	}
}

// TestSARIFArtifactURIs: relative names stay relative to %SRCROOT%,
// absolute ones are file URIs, and what a URI may not hold is
// percent-encoded.
func TestSARIFArtifactURIs(t *testing.T) {
	for _, c := range []struct{ name, uri, base string }{
		{"captures/run 1.pcapng", "captures/run%201.pcapng", "%SRCROOT%"},
		{"x.pcap", "x.pcap", "%SRCROOT%"},
		{"../x.pcap", "../x.pcap", "%SRCROOT%"},
		{"a:b.pcap", "./a:b.pcap", "%SRCROOT%"},
		{"/tmp/x #1.pcapng", "file:///tmp/x%20%231.pcapng", ""},
		{"ca\x1bp\u202e.pcap", "ca%1Bp%E2%80%AE.pcap", "%SRCROOT%"},
	} {
		got := sarifArtifactLoc(c.name)
		if got.URI != c.uri || got.URIBaseID != c.base {
			t.Errorf("%q: uri %q base %q, want %q %q", c.name, got.URI, got.URIBaseID, c.uri, c.base)
		}
	}
	if got := sarifArtifactLoc("stdin"); got.URI != "" || got.Description == nil {
		t.Errorf("stdin: %+v", got)
	}
}

// TestSARIFHostileStrings: a capture's strings reach no SARIF string
// raw: every string of the log, once decoded, is free of control and
// format characters (GitHub shows them on a web page, CI logs in
// terminals).
func TestSARIFHostileStrings(t *testing.T) {
	for _, field := range hostileFields {
		t.Run(field.name, func(t *testing.T) {
			a := quietAnalysis()
			field.plant(a)
			a.Files = []string{"cap" + hostile + ".pcapng"}
			_, doc := renderSARIF(t, a, sarifOpt)
			walkStrings(doc, func(path, s string) {
				for _, r := range s {
					if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar) {
						t.Errorf("%s holds %q raw: %q", path, r, s)
						return
					}
				}
			})
			out := render(t, a, sarifOpt)
			if field.inCSV && !bytes.Contains(out, []byte(`\\x1b`)) {
				t.Errorf("the escaped string is missing:\n%s", out)
			}
		})
	}
}

// walkStrings calls fn with every string of a decoded JSON value, keys
// too.
func walkStrings(v any, fn func(path, s string)) {
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case string:
			fn(path, x)
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case map[string]any:
			for k, e := range x {
				fn(path+" key", k)
				walk(path+"."+k, e)
			}
		}
	}
	walk("$", v)
}
