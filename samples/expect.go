package samples

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Expectation is what NAME.expect.json holds: what `kidscope analyze` with
// its default options (--profile auto) and -p set to Ports must find in the
// capture. Its shape is stable; fields may be added, none renamed:
//
//	{ "name": "hdr-seed-changed",
//	  "description": "one line",
//	  "file": "hdr-seed-changed.pcapng",
//	  "ports": [9092],
//	  "findings": [ { "rule": "header-id-changed", "severity": "error",
//	                  "client": "10.0.1.10:51044", "broker": "10.0.0.2:9092",
//	                  "frame": 17, "related_frames": [4] } ],
//	  "connections": [ { "client": "10.0.1.10:51044", "broker": "10.0.0.2:9092",
//	                     "profile": "seed" | "accepted" | null, "mid_stream": false } ],
//	  "brokers": [ { "broker": "10.0.0.2:9092",
//	                 "kip1313": "enforces" | "ignores" | "mixed" | "unknown" } ] }
//
// findings lists every finding, info ones included, sorted by frame, then
// rule; frame follows docs/design/rules.md §1 (the frame where the message the finding
// concerns is complete: the request's, or the response's for findings
// about the broker's answer). related_frames is present only where
// docs/design/rules.md names a related frame (samples/README.md says which).
// connections lists every TCP connection of the capture in the order they
// start; brokers every broker endpoint, in the order of Scenario.Brokers.
// IPv6 endpoints are written [addr]:port.
type Expectation struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	File        string          `json:"file"`
	Ports       []uint16        `json:"ports"`
	Findings    []Finding       `json:"findings"`
	Connections []Connection    `json:"connections"`
	Brokers     []BrokerVerdict `json:"brokers"`
}

// Finding is one expected finding.
type Finding struct {
	Rule          string `json:"rule"`
	Severity      string `json:"severity"`
	Client        string `json:"client"`
	Broker        string `json:"broker"`
	Frame         int    `json:"frame"`
	RelatedFrames []int  `json:"related_frames,omitempty"`
}

// Connection is one expected row of the connections table.
type Connection struct {
	Client    string  `json:"client"`
	Broker    string  `json:"broker"`
	Profile   *string `json:"profile"`
	MidStream bool    `json:"mid_stream"`
}

// BrokerVerdict is one expected row of the brokers table.
type BrokerVerdict struct {
	Broker  string `json:"broker"`
	KIP1313 string `json:"kip1313"`
}

// JSON is the expectation file's bytes: indented, with a final newline.
func (e *Expectation) JSON() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		panic(err) // plain values: cannot fail
	}
	return buf.Bytes()
}

// ExpectFile is the name of a scenario's expectation file.
func ExpectFile(name string) string { return name + ".expect.json" }

// Written is one file written.
type Written struct {
	Scenario string
	Path     string
	Bytes    int
}

// Write builds one scenario and writes its capture and expectation into
// dir, which must exist.
func Write(dir string, s *Scenario) ([]Written, error) {
	b, err := Build(s)
	if err != nil {
		return nil, err
	}
	return b.WriteTo(dir)
}

// WriteTo writes the built capture and expectation into dir.
func (b *Built) WriteTo(dir string) ([]Written, error) {
	var out []Written
	for _, f := range []struct {
		name string
		data []byte
	}{{b.File, b.Capture}, {ExpectFile(b.Scenario.Name), b.Expect.JSON()}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return out, err
		}
		out = append(out, Written{Scenario: b.Scenario.Name, Path: p, Bytes: len(f.data)})
	}
	return out, nil
}

// WriteAll writes every scenario, the large ones included, into dir
// (created if missing).
func WriteAll(dir string) ([]Written, error) {
	return writeList(dir, All())
}

// WriteSmall writes the scenarios committed under samples/captures.
func WriteSmall(dir string) ([]Written, error) {
	return writeList(dir, Small())
}

func writeList(dir string, list []*Scenario) ([]Written, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []Written
	for _, s := range list {
		w, err := Write(dir, s)
		out = append(out, w...)
		if err != nil {
			return out, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
	}
	return out, nil
}

// All is every scenario, in the order the README lists them.
func All() []*Scenario {
	var out []*Scenario
	for _, t := range sections {
		for _, list := range t.lists {
			group := list()
			for i := range group {
				out = append(out, &group[i])
			}
		}
	}
	return out
}

// A section is a part of README.md's list of scenarios: its title, a
// note under it, and the lists of scenarios it shows.
type section struct {
	title, note string
	lists       []func() []Scenario
}

// sections are the scenarios, in README.md's order.
var sections = []section{
	{title: "Header rules under both profiles, each with a clean twin that differs in one detail",
		lists: []func() []Scenario{headerScenarios}},
	{title: "The seed's table, telemetry and the broker's telemetry answers",
		lists: []func() []Scenario{tableScenarios, telemetryScenarios}},
	{title: "Groups", lists: []func() []Scenario{groupScenarios}},
	{title: "Broker verdicts from any API's answer",
		note: "P sends a changed header ID to broker1, Q to broker2; broker1 answers as Apache Kafka's error " +
			"response for that request does (the top-level ErrorCode where the version has one, else every " +
			"topic, partition or group), broker2 processes the request.",
		lists: []func() []Scenario{verdictScenarios}},
	{title: "Across connections", lists: []func() []Scenario{instanceScenarios}},
	{title: "What the capture cannot show, TCP, links and ports",
		lists: []func() []Scenario{streamScenarios, networkScenarios, largeScenarios}},
	{title: "Quirks of real capture files, read as Wireshark reads them", lists: []func() []Scenario{quirkScenarios}},
}

// Small is every scenario that is committed (all but the large ones).
func Small() []*Scenario {
	var out []*Scenario
	for _, s := range All() {
		if !s.Large {
			out = append(out, s)
		}
	}
	return out
}

// Lookup returns the scenario with this name.
func Lookup(name string) (*Scenario, bool) {
	for _, s := range All() {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}
