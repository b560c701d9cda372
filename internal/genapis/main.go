// Command genapis writes decode/apis_gen.go: the table of Kafka API keys the
// decoder uses to name requests and to pick their header versions.
//
// It reads every *Request.json in Apache Kafka's message schemas (JSON with
// // line comments), takes apiKey, name, validVersions and flexibleVersions,
// applies the overlay below (what changed after the schemas were taken), and
// writes a gofmt'ed Go file. The output is committed, so building kidscope
// never needs the schemas.
//
// Usage, from the module root:
//
//	go run ./internal/genapis -messages ../shared/kafka-protocol/messages -o decode/apis_gen.go
//
// decode/apis.go carries the matching //go:generate line.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// none marks "no version" in versions and the overlay.
const none = -1

// api is one row of the generated table; it mirrors decode.API.
type api struct {
	Key          int16
	Name         string
	MinVersion   int16
	MaxVersion   int16
	FlexibleFrom int16 // none when never flexible
	HeaderV3From int16 // none when no version uses request header v3
	Notes        []string
}

// overlayEntry is one fact newer than the schemas.
//
//   - Name: the key's current name. For a key absent from the schemas the
//     entry adds it (versions MinVersion..MaxVersion, flexible from its first
//     version); for a present key it renames it.
//   - MaxVersion: raise the key's max version to this (never lowered). A
//     version added this way is flexible (request header v2) unless
//     HeaderV3From maps it to header v3.
//   - HeaderV3From: the first version that uses request header v3 (KIP-1313),
//     or none.
type overlayEntry struct {
	Key          int16
	Name         string
	MinVersion   int16
	MaxVersion   int16
	HeaderV3From int16
	Note         string
}

// overlay returns what /work/shared/spec/PROTOCOL.md ("Versions since the
// schemas were taken" and "Request header") says changed after the schemas
// (apache/kafka trunk of 2024-10-25) were taken. Versions that Kafka 4.0
// removed are not removed here: captures from older clusters still hold them,
// so min versions stay as the schemas give them. Likewise the share-group RPCs
// 76–79 keep v0, which 4.1 dropped.
func overlay() []overlayEntry {
	return []overlayEntry{
		// Added in Kafka 4.0–4.1 (PROTOCOL.md, "Versions since the schemas were taken").
		{Key: 0, MaxVersion: 13, HeaderV3From: none, Note: "Produce v12–13"},
		{Key: 1, MaxVersion: 18, HeaderV3From: none, Note: "Fetch v18"},
		{Key: 2, MaxVersion: 10, HeaderV3From: none, Note: "ListOffsets v10"},
		{Key: 3, MaxVersion: 13, HeaderV3From: none, Note: "Metadata v13"},
		{Key: 8, MaxVersion: 10, HeaderV3From: none, Note: "OffsetCommit v10"},
		{Key: 9, MaxVersion: 10, HeaderV3From: none, Note: "OffsetFetch v10"},
		{Key: 15, MaxVersion: 6, HeaderV3From: none, Note: "DescribeGroups v6"},
		{Key: 18, MaxVersion: 5, HeaderV3From: none, Note: "ApiVersions v5 (2026 trunk)"},
		{Key: 22, MaxVersion: 6, HeaderV3From: none, Note: "InitProducerId v6"},
		{Key: 28, MaxVersion: 5, HeaderV3From: none, Note: "TxnOffsetCommit v5"},
		{Key: 45, MaxVersion: 1, HeaderV3From: none, Note: "AlterPartitionReassignments v1"},
		{Key: 52, MaxVersion: 2, HeaderV3From: none, Note: "Vote v2"},
		{Key: 57, MaxVersion: 2, HeaderV3From: none, Note: "UpdateFeatures v2"},
		{Key: 60, MaxVersion: 2, HeaderV3From: none, Note: "DescribeCluster v2"},
		{Key: 66, MaxVersion: 2, HeaderV3From: none, Note: "ListTransactions v2"},
		{Key: 68, MaxVersion: 1, HeaderV3From: none, Note: "ConsumerGroupHeartbeat v1"},
		{Key: 69, MaxVersion: 1, HeaderV3From: none, Note: "ConsumerGroupDescribe v1"},
		{Key: 74, Name: "ListConfigResources", MaxVersion: 1, HeaderV3From: none, Note: "renamed from ListClientMetricsResources; v1"},
		{Key: 76, MaxVersion: 1, HeaderV3From: none, Note: "ShareGroupHeartbeat v1"},
		{Key: 77, MaxVersion: 1, HeaderV3From: none, Note: "ShareGroupDescribe v1"},
		{Key: 78, MaxVersion: 1, HeaderV3From: none, Note: "ShareFetch v1"},
		{Key: 79, MaxVersion: 1, HeaderV3From: none, Note: "ShareAcknowledge v1"},
		{Key: 88, Name: "StreamsGroupHeartbeat", MaxVersion: 1, HeaderV3From: none, Note: "new key; v1 (KIP-1331, Kafka 4.4)"},
		{Key: 89, Name: "StreamsGroupDescribe", MaxVersion: 0, HeaderV3From: none, Note: "new key"},
		{Key: 90, Name: "DescribeShareGroupOffsets", MaxVersion: 0, HeaderV3From: none, Note: "new key"},
		{Key: 91, Name: "AlterShareGroupOffsets", MaxVersion: 0, HeaderV3From: none, Note: "new key"},
		{Key: 92, Name: "DeleteShareGroupOffsets", MaxVersion: 0, HeaderV3From: none, Note: "new key"},

		// Request header v3 (KIP-1313 as accepted, Kafka 4.5 trunk; PROTOCOL.md,
		// "Request header"): the versions mapped to it so far. Each is a version
		// newer than the schemas.
		{Key: 47, MaxVersion: 1, HeaderV3From: 1, Note: "OffsetDelete v1, header v3"},
		{Key: 71, MaxVersion: 1, HeaderV3From: 1, Note: "GetTelemetrySubscriptions v1, header v3"},
		{Key: 72, MaxVersion: 1, HeaderV3From: 1, Note: "PushTelemetry v1, header v3 (announced)"},
		{Key: 83, MaxVersion: 1, HeaderV3From: 1, Note: "InitializeShareGroupState v1, header v3"},
		{Key: 84, MaxVersion: 1, HeaderV3From: 1, Note: "ReadShareGroupState v1, header v3"},
		{Key: 85, MaxVersion: 1, HeaderV3From: 1, Note: "WriteShareGroupState v1, header v3"},
		{Key: 86, MaxVersion: 1, HeaderV3From: 1, Note: "DeleteShareGroupState v1, header v3"},
		{Key: 87, MaxVersion: 1, HeaderV3From: 1, Note: "ReadShareGroupStateSummary v1, header v3"},
	}
}

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "genapis:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("genapis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	messages := fs.String("messages", "", "directory of Kafka message schemas (*Request.json)")
	out := fs.String("o", "", "output Go file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *messages == "" || *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return errors.New("need -messages DIR and -o FILE")
	}
	apis, warnings, err := readSchemas(*messages)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "genapis: warning:", w)
	}
	table, err := applyOverlay(apis, overlay())
	if err != nil {
		return err
	}
	src, err := render(table)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, src, 0o644)
}

// schema is the part of a message schema the table needs.
type schema struct {
	APIKey           *int16 `json:"apiKey"`
	Type             string `json:"type"`
	Name             string `json:"name"`
	ValidVersions    string `json:"validVersions"`
	FlexibleVersions string `json:"flexibleVersions"`
	// HeaderVersions appears in Kafka 4.5 trunk schemas (KIP-1313); this
	// generator does not read it yet, and warns when it is present.
	HeaderVersions json.RawMessage `json:"headerVersions"`
}

// readSchemas reads every *Request.json in dir, keyed by API key.
func readSchemas(dir string) (map[int16]*api, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*Request.json"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no *Request.json in %s", dir)
	}
	sort.Strings(files)
	apis := make(map[int16]*api)
	var warnings []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		a, warn, err := parseSchema(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		if warn != "" {
			warnings = append(warnings, filepath.Base(f)+": "+warn)
		}
		if prev, ok := apis[a.Key]; ok {
			return nil, nil, fmt.Errorf("%s: api key %d already defined by %sRequest", filepath.Base(f), a.Key, prev.Name)
		}
		apis[a.Key] = a
	}
	return apis, warnings, nil
}

// parseSchema parses one request schema.
func parseSchema(raw []byte) (*api, string, error) {
	var s schema
	if err := json.Unmarshal(stripComments(raw), &s); err != nil {
		return nil, "", err
	}
	if s.Type != "request" {
		return nil, "", fmt.Errorf("type %q, want request", s.Type)
	}
	if s.APIKey == nil || *s.APIKey < 0 {
		return nil, "", errors.New("missing or negative apiKey")
	}
	name, ok := strings.CutSuffix(s.Name, "Request")
	if !ok || name == "" {
		return nil, "", fmt.Errorf("name %q does not end in Request", s.Name)
	}
	lo, hi, err := parseRange(s.ValidVersions)
	if err != nil {
		return nil, "", fmt.Errorf("validVersions: %w", err)
	}
	if lo == none {
		return nil, "", errors.New(`validVersions is "none"`)
	}
	flex, err := parseFlexible(s.FlexibleVersions)
	if err != nil {
		return nil, "", fmt.Errorf("flexibleVersions: %w", err)
	}
	var warn string
	if len(s.HeaderVersions) > 0 {
		warn = "headerVersions is present but not read; header v3 comes from the overlay only"
	}
	return &api{
		Key: *s.APIKey, Name: name,
		MinVersion: lo, MaxVersion: hi,
		FlexibleFrom: flex, HeaderV3From: none,
	}, warn, nil
}

// parseRange parses a schema version range: "N", "N-M", or "none" (none, none).
func parseRange(s string) (lo, hi int16, err error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return none, none, nil
	}
	if strings.HasSuffix(s, "+") {
		return 0, 0, fmt.Errorf("open range %q where a closed one is needed", s)
	}
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = parseVersion(a); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = parseVersion(b); err != nil {
			return 0, 0, err
		}
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("range %q is empty", s)
	}
	return lo, hi, nil
}

// parseFlexible parses flexibleVersions: "N+" gives N, "none" gives none.
func parseFlexible(s string) (int16, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return none, nil
	}
	n, ok := strings.CutSuffix(s, "+")
	if !ok {
		return 0, fmt.Errorf("%q: want \"N+\" or \"none\"", s)
	}
	return parseVersion(n)
}

func parseVersion(s string) (int16, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 16)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad version %q", s)
	}
	return int16(v), nil
}

// stripComments removes // line comments outside JSON strings.
func stripComments(src []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(src))
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			out.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
			out.WriteByte(c)
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			if i < len(src) {
				out.WriteByte('\n')
			}
		default:
			out.WriteByte(c)
		}
	}
	return out.Bytes()
}

// applyOverlay applies the overlay to the schemas' table and returns the
// rows sorted by key. It does not modify apis.
func applyOverlay(apis map[int16]*api, entries []overlayEntry) ([]api, error) {
	table := make(map[int16]*api, len(apis))
	for k, a := range apis {
		c := *a
		c.Notes = append([]string(nil), a.Notes...)
		table[k] = &c
	}
	for _, e := range entries {
		if e.Key < 0 || e.MinVersion < 0 || e.MaxVersion < e.MinVersion {
			return nil, fmt.Errorf("overlay %q for key %d: bad versions %d-%d", e.Note, e.Key, e.MinVersion, e.MaxVersion)
		}
		a, ok := table[e.Key]
		if !ok {
			if e.Name == "" {
				return nil, fmt.Errorf("overlay %q for key %d: key not in the schemas and no name to add it", e.Note, e.Key)
			}
			a = &api{
				Key: e.Key, Name: e.Name,
				MinVersion: e.MinVersion, MaxVersion: e.MaxVersion,
				FlexibleFrom: e.MinVersion, HeaderV3From: none,
			}
			table[e.Key] = a
			a.Notes = append(a.Notes, "added")
		} else {
			var changed []string
			if e.Name != "" && e.Name != a.Name {
				changed = append(changed, fmt.Sprintf("renamed from %s", a.Name))
				a.Name = e.Name
			}
			if e.MaxVersion > a.MaxVersion {
				changed = append(changed, fmt.Sprintf("max %d→%d", a.MaxVersion, e.MaxVersion))
				if a.FlexibleFrom == none {
					// Versions the overlay adds are flexible.
					a.FlexibleFrom = a.MaxVersion + 1
				}
				a.MaxVersion = e.MaxVersion
			}
			if len(changed) > 0 {
				a.Notes = append(a.Notes, changed...)
			}
		}
		if e.HeaderV3From != none {
			if e.HeaderV3From < a.MinVersion || e.HeaderV3From > a.MaxVersion {
				return nil, fmt.Errorf("overlay %q for key %d: header v3 from v%d outside versions %d-%d", e.Note, e.Key, e.HeaderV3From, a.MinVersion, a.MaxVersion)
			}
			if a.FlexibleFrom == none || a.FlexibleFrom > e.HeaderV3From {
				return nil, fmt.Errorf("overlay %q for key %d: header v3 from v%d but the version is not flexible", e.Note, e.Key, e.HeaderV3From)
			}
			if a.HeaderV3From == none || e.HeaderV3From < a.HeaderV3From {
				a.HeaderV3From = e.HeaderV3From
				a.Notes = append(a.Notes, fmt.Sprintf("header v3 from v%d", e.HeaderV3From))
			}
		}
	}
	rows := make([]api, 0, len(table))
	for _, a := range table {
		rows = append(rows, *a)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Key < rows[j].Key })
	return rows, nil
}

// render writes the Go source of the table.
func render(rows []api) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`// Code generated by internal/genapis from Apache Kafka's message schemas
// (shared/kafka-protocol/messages) and the overlay in internal/genapis/main.go. DO NOT EDIT.

package decode

// apiTable is indexed by API key; a zero entry (empty Name) is a key no
// schema defines. FlexibleFrom and HeaderV3From are -1 for "never".
var apiTable = [...]API{
`)
	for _, a := range rows {
		fmt.Fprintf(&b, "\t%d: {Key: %d, Name: %q, MinVersion: %d, MaxVersion: %d, FlexibleFrom: %d, HeaderV3From: %d},",
			a.Key, a.Key, a.Name, a.MinVersion, a.MaxVersion, a.FlexibleFrom, a.HeaderV3From)
		if len(a.Notes) > 0 {
			b.WriteString(" // overlay: " + strings.Join(a.Notes, ", "))
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting generated code: %w", err)
	}
	return src, nil
}
