package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/rules"
)

// SARIF 2.1.0 output (`analyze -o sarif`), for GitHub code scanning and
// the other CI viewers that read it.
//
// It is written by hand with encoding/json, as the other formats are,
// rather than through a SARIF library (go-sarif would do): kidscope uses
// a small part of SARIF, its types here fix the field order the goldens
// hold, the binary gains no dependency, and the tests validate every log
// against the standard's own schema (internal/sarifcheck), which is what a
// library would have to be trusted for.
//
// A capture is a binary file, and SARIF has no frames: each result's
// location is the capture file as given on the command line, at line 1
// (GitHub code scanning displays a location only with region.startLine,
// and the upload action fingerprints only a location that has one),
// with the frame and the connection in the message, in the location's
// properties and as a logical location. The related frames are
// relatedLocations. partialFingerprints hold a hash of the rule, the
// connection's endpoints, the API and the IDs, so that GitHub takes a
// finding of a capture analysed again for the same alert.

// SARIFSchemaURI is the $schema of the output: the OASIS schema of SARIF
// 2.1.0 (errata 01), the one the tests validate against.
const SARIFSchemaURI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

// sarifMaxResults is GitHub code scanning's limit of results in a run:
// an upload over it is rejected whole. The findings past it are counted
// in the run's properties, as those past the engine's cap are.
const sarifMaxResults = 25000

// sarifFingerprintKey names kidscope's entry of partialFingerprints; the
// version changes when what it hashes changes.
const sarifFingerprintKey = "kidscopeFinding/v1"

// SARIFInvocation is what the command knows of its run that the analysis
// does not hold: the tool's version and how the run ended.
type SARIFInvocation struct {
	ToolVersion string
	// ExitCode is the code the command exits with.
	ExitCode int
	// Successful is false when the run did not read its inputs to the
	// end (interrupted, or an input that stopped the run): findings at
	// --fail-on are a successful run that found something.
	Successful bool
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Artifacts   []sarifArtifact   `json:"artifacts"`
	Results     []sarifResult     `json:"results"`
	Properties  sarifRunProps     `json:"properties"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name    string      `json:"name"`
	Version string      `json:"version,omitempty"`
	Rules   []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	ShortDescription     sarifText       `json:"shortDescription"`
	FullDescription      sarifText       `json:"fullDescription"`
	Help                 sarifText       `json:"help"`
	DefaultConfiguration sarifRuleConfig `json:"defaultConfiguration"`
	Properties           sarifRuleProps  `json:"properties"`
}

type sarifRuleConfig struct {
	Level string `json:"level"`
}

type sarifRuleProps struct {
	// Tags are what GitHub filters alerts by.
	Tags    []string `json:"tags"`
	Section string   `json:"section,omitempty"`
	Profile string   `json:"profile,omitempty"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool                `json:"executionSuccessful"`
	ExitCode            int                 `json:"exitCode"`
	Notifications       []sarifNotification `json:"toolExecutionNotifications"`
}

type sarifNotification struct {
	Level   string    `json:"level"`
	Message sarifText `json:"message"`
}

type sarifArtifactLocation struct {
	URI         string     `json:"uri,omitempty"`
	URIBaseID   string     `json:"uriBaseId,omitempty"`
	Index       *int       `json:"index,omitempty"`
	Description *sarifText `json:"description,omitempty"`
}

type sarifArtifact struct {
	Location sarifArtifactLocation `json:"location"`
	Roles    []string              `json:"roles"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           sarifRegion           `json:"region"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
}

type sarifFrameProps struct {
	File  string  `json:"file"`
	Frame int64   `json:"frame"`
	Time  *string `json:"time,omitempty"`
	Role  string  `json:"role,omitempty"`
}

type sarifLocation struct {
	ID               *int            `json:"id,omitempty"`
	PhysicalLocation sarifPhysical   `json:"physicalLocation"`
	LogicalLocations []sarifLogical  `json:"logicalLocations,omitempty"`
	Message          sarifText       `json:"message"`
	Properties       sarifFrameProps `json:"properties"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	RelatedLocations    []sarifLocation   `json:"relatedLocations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          sarifResultProps  `json:"properties"`
}

// sarifResultProps are the finding's evidence as analyze's JSON has it:
// capture strings in them are escaped (shown), as in the message.
type sarifResultProps struct {
	// ID is the finding's stable ID (FindingID), as -o json's id: not a
	// fingerprint, which would make each frame's finding an alert of its
	// own (partialFingerprints says what is the same alert).
	ID            string   `json:"id"`
	File          string   `json:"file"`
	Frame         int64    `json:"frame"`
	Time          *string  `json:"time,omitempty"`
	Client        string   `json:"client"`
	Broker        string   `json:"broker"`
	ConnectionID  int      `json:"connectionId"`
	APIKey        *int16   `json:"apiKey,omitempty"`
	APIName       string   `json:"apiName,omitempty"`
	APIVersion    *int16   `json:"apiVersion,omitempty"`
	CorrelationID *int32   `json:"correlationId,omitempty"`
	Expected      string   `json:"expected,omitempty"`
	Seen          string   `json:"seen,omitempty"`
	BrokerAnswer  string   `json:"brokerAnswer,omitempty"`
	AfterGap      bool     `json:"afterGap"`
	Also          []string `json:"also,omitempty"`
	Count         int64    `json:"count"`
}

// sarifRunProps say what the results do not: the true counts of what
// the caps left out.
type sarifRunProps struct {
	// FindingsTotal counts every finding made (of the rules kept),
	// FindingsListed those that are results, FindingsNotListed the rest:
	// past the engine's cap (--memory-limit's share) or GitHub's limit of
	// results in a run.
	FindingsTotal      int64             `json:"findingsTotal"`
	FindingsListed     int               `json:"findingsListed"`
	FindingsNotListed  int64             `json:"findingsNotListed"`
	FindingsBySeverity severityCounts    `json:"findingsBySeverity"`
	FindingsByRule     map[string]int64  `json:"findingsByRule"`
	FindingCounts      []sarifGroupCount `json:"findingCounts"`
	// What the report's other caps left out.
	ConnectionsNotListed       int64 `json:"connectionsNotListed"`
	InstancesNotListed         int64 `json:"instancesNotListed"`
	BrokerConnectionsNotListed int64 `json:"brokerConnectionsNotListed"`
	ConnectionsNotAnalysed     int64 `json:"connectionsNotAnalysed"`
	Interrupted                bool  `json:"interrupted"`
}

// sarifGroupCount is one rule on one connection: every finding made of
// it, and how many of them are results.
type sarifGroupCount struct {
	Rule         string `json:"rule"`
	ConnectionID int    `json:"connectionId"`
	Count        int64  `json:"count"`
	Listed       int    `json:"listed"`
}

// sarifLevel maps a severity to SARIF's levels.
func sarifLevel(s rules.Severity) string {
	switch s {
	case rules.Error:
		return "error"
	case rules.Warning:
		return "warning"
	}
	return "note"
}

// sarifRuleName is a rule ID as SARIF's readable rule names are written:
// header-id-changed is HeaderIdChanged.
func sarifRuleName(id string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(id, func(r rune) bool { return r == '-' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

func newSARIFRule(r rules.Rule) sarifRule {
	full := strings.TrimSpace(r.Detail)
	if full == "" {
		full = r.Summary
	}
	help := "Fires when " + r.Summary + ".\n\n" + full
	if r.Why != "" {
		help += "\n\nWhy it matters: " + r.Why
	}
	if r.Fix != "" {
		help += "\n\nHow to fix it: " + r.Fix
	}
	if r.Caveat != "" {
		help += "\n\nWhat the capture cannot show: " + r.Caveat + "."
	}
	if r.Example != "" {
		help += fmt.Sprintf("\n\nExample: the sample scenario %q shows it: kidscope samples DIR, then kidscope analyze DIR/%s.pcapng.", r.Example, r.Example)
	}
	help += "\n\nkidscope rules " + r.ID + " prints this rule."
	tags := []string{"kafka"}
	if r.Profile != "" {
		tags = append(tags, "profile-"+r.Profile)
	}
	sec := r.Group.Title()
	return sarifRule{
		ID: r.ID, Name: sarifRuleName(r.ID),
		ShortDescription: sarifText{r.Summary}, FullDescription: sarifText{full}, Help: sarifText{help},
		DefaultConfiguration: sarifRuleConfig{sarifLevel(r.Severity)},
		Properties:           sarifRuleProps{Tags: tags, Section: sec, Profile: r.Profile},
	}
}

// sarifArtifactLoc is where input file name is, as a SARIF artifact
// location: a relative name as given, relative to %SRCROOT% (the
// repository checkout, for GitHub); an absolute one as a file URI;
// standard input with no URI, which SARIF allows (GitHub needs a file).
func sarifArtifactLoc(name string) sarifArtifactLocation {
	if name == "stdin" {
		return sarifArtifactLocation{Description: &sarifText{"standard input"}}
	}
	slashed := filepath.ToSlash(name)
	if filepath.IsAbs(name) {
		if !strings.HasPrefix(slashed, "/") {
			slashed = "/" + slashed // C:/x is file:///C:/x
		}
		u := url.URL{Scheme: "file", Path: slashed}
		return sarifArtifactLocation{URI: u.String()}
	}
	u := url.URL{Path: slashed}
	s := u.String()
	// A first segment with a colon would read as a scheme: "./" keeps it
	// a path, as RFC 3986 §4.2 says.
	if first, _, _ := strings.Cut(s, "/"); strings.Contains(first, ":") {
		s = "./" + s
	}
	return sarifArtifactLocation{URI: s, URIBaseID: "%SRCROOT%"}
}

// sarifRoleText says why a related frame is related.
func sarifRoleText(r rules.Role) (name, text string) {
	switch r {
	case rules.RoleEstablished:
		return "established", "the request that established the connection's ID, or its absence"
	case rules.RoleAnswer:
		return "answer", "the broker's answer"
	case rules.RoleRequest:
		return "request", "the request the answer is to"
	case rules.RoleAssigned:
		return "assigned", "the answer that gave the client the ID it should have used"
	case rules.RoleTerminated:
		return "terminated", "the terminating push"
	case rules.RoleFirstSeen:
		return "first-seen", "where the ID was first seen from another client or address"
	case rules.RoleOtherConnection:
		return "other-connection", "the first frame of the client's other open connection"
	}
	return "related", "a related frame"
}

// sarifMessage is a finding's one line: its frame and connection (what
// GitHub shows of the location is the file only), the finding's
// message, expected and seen, and the broker's answer; escaped by shown,
// since the capture's strings reach a web page and terminals.
func sarifMessage(f *rules.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Frame %d, %s → %s: %s", f.At.Frame, f.Conn.Client, f.Conn.Broker, findingMessage(f))
	expected, seen := valueText(f.Expected, kafkaUUID), valueText(f.Seen, kafkaUUID)
	if expected != "" || seen != "" {
		fmt.Fprintf(&b, "; expected %s, seen %s", orDash(expected), orDash(seen))
	}
	if f.HasAPI {
		fmt.Fprintf(&b, "; broker answer: %s", answerText(f))
	}
	return shown(b.String())
}

// sarifFingerprint hashes what makes a finding the same one in another
// analysis of the capture: the rule, the connection's endpoints, the API
// and the IDs (in Kafka's form whatever --uuid says), but not the frame
// or the correlation ID, so that a rule's repeats on one connection are
// one alert, as they are one row of the table.
func sarifFingerprint(f *rules.Finding) string {
	h := sha256.New()
	api := ""
	if f.HasAPI {
		api = fmt.Sprintf("%d", f.APIKey)
	}
	for _, s := range []string{f.Rule, f.Conn.Client.String(), f.Conn.Broker.String(), api,
		valueText(f.Expected, kafkaUUID), valueText(f.Seen, kafkaUUID), fmt.Sprintf("%d/%d", f.Stream.Kind, f.Stream.Side)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func newSARIFLog(a *Analysis, opt AnalysisOptions) *sarifLog {
	res := &a.Result
	inv := opt.SARIF
	driver := sarifDriver{Name: "kidscope", Version: inv.ToolVersion, Rules: []sarifRule{}}
	ruleIndex := map[string]int{}
	for _, r := range rules.Catalog() {
		ruleIndex[r.ID] = len(driver.Rules)
		driver.Rules = append(driver.Rules, newSARIFRule(r))
	}
	run := sarifRun{Tool: sarifTool{driver}, Artifacts: []sarifArtifact{}, Results: []sarifResult{}}

	artifactIndex := map[int]int{}
	for i, name := range a.Files {
		loc := sarifArtifactLoc(name)
		artifactIndex[i] = len(run.Artifacts)
		run.Artifacts = append(run.Artifacts, sarifArtifact{Location: loc, Roles: []string{"analysisTarget"}})
	}
	where := func(file int, frame int64) sarifPhysical {
		loc := sarifArtifactLoc(fileName(a.Files, file))
		if k, ok := artifactIndex[file]; ok {
			loc.Index = &k
		}
		return sarifPhysical{ArtifactLocation: loc, Region: sarifRegion{StartLine: 1}}
	}

	listed := min(len(res.Findings), sarifMaxResults)
	for i := range res.Findings[:listed] {
		f := &res.Findings[i]
		k, ok := ruleIndex[f.Rule]
		if !ok { // a rule outside the catalogue still gets a descriptor
			k = len(driver.Rules)
			ruleIndex[f.Rule] = k
			driver.Rules = append(driver.Rules, newSARIFRule(rules.Rule{ID: f.Rule, Severity: f.Severity, Summary: f.Rule}))
		}
		conn := fmt.Sprintf("%s → %s", f.Conn.Client, f.Conn.Broker)
		file := shown(fileName(a.Files, f.At.File))
		r := sarifResult{
			RuleID: f.Rule, RuleIndex: k, Level: sarifLevel(f.Severity), Message: sarifText{sarifMessage(f)},
			Locations: []sarifLocation{{
				PhysicalLocation: where(f.At.File, f.At.Frame),
				LogicalLocations: []sarifLogical{{Name: conn, FullyQualifiedName: fmt.Sprintf("connection %d: %s", f.ConnID, conn)}},
				Message:          sarifText{fmt.Sprintf("frame %d", f.At.Frame)},
				Properties:       sarifFrameProps{File: file, Frame: f.At.Frame, Time: timeText(f.At.Time)},
			}},
			RelatedLocations:    []sarifLocation{},
			PartialFingerprints: map[string]string{sarifFingerprintKey: sarifFingerprint(f)},
			Properties: sarifResultProps{
				ID: FindingID(originOf(a.Files, a.Origins, f.At.File), f), File: file, Frame: f.At.Frame, Time: timeText(f.At.Time),
				Client: f.Conn.Client.String(), Broker: f.Conn.Broker.String(), ConnectionID: f.ConnID,
				Expected: shown(valueText(f.Expected, opt.UUID.format)), Seen: shown(valueText(f.Seen, opt.UUID.format)),
				BrokerAnswer: answerName(f.Answer), AfterGap: f.AfterGap, Also: f.Also, Count: max(f.Count, 1),
			},
		}
		if f.HasAPI {
			key, ver, corr := f.APIKey, f.APIVersion, f.CorrelationID
			r.Properties.APIKey, r.Properties.APIVersion, r.Properties.CorrelationID = &key, &ver, &corr
			r.Properties.APIName = decode.APIName(key)
		}
		for j, rel := range f.Related {
			id := j + 1
			role, text := sarifRoleText(rel.Role)
			relFile := shown(fileName(a.Files, rel.Frame.File))
			r.RelatedLocations = append(r.RelatedLocations, sarifLocation{
				ID: &id, PhysicalLocation: where(rel.Frame.File, rel.Frame.Frame),
				Message:    sarifText{fmt.Sprintf("frame %d: %s", rel.Frame.Frame, text)},
				Properties: sarifFrameProps{File: relFile, Frame: rel.Frame.Frame, Time: timeText(rel.Frame.Time), Role: role},
			})
		}
		run.Results = append(run.Results, r)
	}
	run.Tool.Driver = driver

	totals := severityTotals(res)
	total := max(int64(totals.total()), int64(len(res.Findings))+res.Dropped.Findings)
	p := sarifRunProps{
		FindingsTotal: total, FindingsListed: listed, FindingsNotListed: total - int64(listed),
		FindingsBySeverity: totals, FindingsByRule: findingsByRule(res), FindingCounts: []sarifGroupCount{},
		ConnectionsNotListed: res.Dropped.Connections, InstancesNotListed: res.Dropped.Instances,
		BrokerConnectionsNotListed: res.Dropped.BrokerConnections,
		ConnectionsNotAnalysed:     a.Summary.Reassembly.ConnectionsDropped, Interrupted: a.Summary.Interrupted,
	}
	// The groups count their results, not the findings listed past
	// GitHub's limit.
	at := map[rules.FindingGroup]int{}
	for i := range res.Findings[:listed] {
		f := &res.Findings[i]
		g := rules.FindingGroup{Rule: f.Rule, ConnID: f.ConnID}
		k, ok := at[g]
		if !ok {
			k = len(p.FindingCounts)
			at[g] = k
			p.FindingCounts = append(p.FindingCounts, sarifGroupCount{Rule: f.Rule, ConnectionID: f.ConnID})
		}
		p.FindingCounts[k].Listed++
	}
	inFindings := map[rules.FindingGroup]int{}
	for i := range res.Findings {
		inFindings[rules.FindingGroup{Rule: res.Findings[i].Rule, ConnID: res.Findings[i].ConnID}]++
	}
	for i := range p.FindingCounts {
		g := &p.FindingCounts[i]
		g.Count = int64(groupTotal(res, g.Rule, g.ConnectionID, inFindings[rules.FindingGroup{Rule: g.Rule, ConnID: g.ConnectionID}]))
	}
	run.Properties = p

	notes := []sarifNotification{}
	if p.FindingsNotListed > 0 {
		notes = append(notes, sarifNotification{Level: "warning", Message: sarifText{fmt.Sprintf(
			"%s of %s findings are not listed as results (the report's cap, or GitHub's limit of %s results in a run); the run's properties count them all",
			commas(p.FindingsNotListed), commas(total), commas(sarifMaxResults))}})
	}
	for _, prob := range a.Summary.Problems {
		notes = append(notes, sarifNotification{Level: "warning", Message: sarifText{shown(prob.Error())}})
	}
	if a.Summary.Interrupted {
		notes = append(notes, sarifNotification{Level: "error", Message: sarifText{"interrupted before the end of the input"}})
	}
	run.Invocations = []sarifInvocation{{ExecutionSuccessful: inv.Successful, ExitCode: inv.ExitCode, Notifications: notes}}
	return &sarifLog{Schema: SARIFSchemaURI, Version: "2.1.0", Runs: []sarifRun{run}}
}

func writeAnalysisSARIF(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(newSARIFLog(a, opt)); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
