// Command genapis writes decode/apis_gen.go: the table of Kafka API keys the
// decoder uses to name requests and to pick their header versions.
//
// It reads the request schemas (common/message/*Request.json, JSON with //
// line comments) inside released Apache Kafka client jars, oldest first,
// takes apiKey, name, validVersions and flexibleVersions, and joins them: a
// key's versions are every version some release knew, since captures of
// older clusters still hold versions a newer release dropped ("none" in a
// newer schema removes nothing), and its name is the newest release's. It
// then applies the overlay below (what no released jar has yet) and writes
// a gofmt'ed Go file. The output is committed, so building kidscope never
// needs the jars.
//
// scripts/gen-apis.sh fetches the jars from Maven Central and runs it:
//
//	go run ./internal/genapis -schemas kafka-clients-3.9.1.jar -schemas kafka-clients-4.4.0.jar -o decode/apis_gen.go
//
// With -check instead of -o it compares with the file and fails if the
// table would change (CI runs that).
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"io"
	"os"
	pathpkg "path"
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

// overlay returns what no released client jar has yet: request header v3
// (KIP-1313 as accepted, aimed at Kafka 4.5; docs/design/protocol.md,
// "Request header"), the versions mapped to it so far. An entry that a
// newer jar makes redundant is an error, so the overlay shrinks as Kafka
// releases what it describes.
func overlay() []overlayEntry {
	return []overlayEntry{
		{Key: 47, MaxVersion: 1, HeaderV3From: 1, Note: "OffsetDelete v1, header v3"},
		{Key: 71, MaxVersion: 1, HeaderV3From: 1, Note: "GetTelemetrySubscriptions v1, header v3"},
		{Key: 72, MaxVersion: 1, HeaderV3From: 1, Note: "PushTelemetry v1, header v3 (announced)"},
		{Key: 83, MaxVersion: 1, HeaderV3From: 1, Note: "InitializeShareGroupState v1, header v3"},
		{Key: 84, MaxVersion: 1, HeaderV3From: 1, Note: "ReadShareGroupState v1, header v3"},
		// Kafka 4.4.0 released v1 of keys 85 and 87 (KIP-1226) on header
		// v2, so KIP-1313's version of each is the next one.
		{Key: 85, MaxVersion: 2, HeaderV3From: 2, Note: "WriteShareGroupState v2, header v3"},
		{Key: 86, MaxVersion: 1, HeaderV3From: 1, Note: "DeleteShareGroupState v1, header v3"},
		{Key: 87, MaxVersion: 2, HeaderV3From: 2, Note: "ReadShareGroupStateSummary v2, header v3"},
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
	var sources []string
	fs.Func("schemas", "a client jar (or a directory) of Kafka request schemas, oldest release first; repeatable", func(s string) error {
		sources = append(sources, s)
		return nil
	})
	out := fs.String("o", "", "output Go file")
	check := fs.String("check", "", "compare with this Go file instead of writing one; fail if it differs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(sources) == 0 || (*out == "") == (*check == "") || fs.NArg() != 0 {
		fs.Usage()
		return errors.New("need -schemas JAR (repeatable) and one of -o FILE or -check FILE")
	}
	var releases []release
	for _, src := range sources {
		r, err := readRelease(src)
		if err != nil {
			return err
		}
		for _, w := range r.warnings {
			fmt.Fprintf(stderr, "genapis: warning: %s: %s\n", filepath.Base(src), w)
		}
		releases = append(releases, r)
	}
	table, err := applyOverlay(join(releases), overlay())
	if err != nil {
		return err
	}
	src, err := render(table, releaseNames(releases))
	if err != nil {
		return err
	}
	if *check != "" {
		committed, err := os.ReadFile(*check)
		if err != nil {
			return err
		}
		if !bytes.Equal(committed, src) {
			return fmt.Errorf("%s is not what these schemas give: run scripts/gen-apis.sh and commit the result\n%s", *check, firstDiff(src, committed))
		}
		return nil
	}
	return os.WriteFile(*out, src, 0o644)
}

// release is the request schemas of one Kafka release.
type release struct {
	name     string // the jar's or directory's base name
	apis     map[int16]*api
	warnings []string
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

// readRelease reads every *Request.json of a jar (or zip) or a directory,
// keyed by API key. A schema whose validVersions is "none" (a key the
// release removed) is left out.
func readRelease(path string) (release, error) {
	r := release{name: filepath.Base(path), apis: map[int16]*api{}}
	files, err := requestSchemas(path)
	if err != nil {
		return r, err
	}
	if len(files) == 0 {
		return r, fmt.Errorf("no *Request.json in %s", path)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a, warn, err := parseSchema(files[n])
		if err != nil {
			return r, fmt.Errorf("%s: %s: %w", r.name, n, err)
		}
		if warn != "" {
			r.warnings = append(r.warnings, n+": "+warn)
		}
		if a == nil {
			continue
		}
		if prev, ok := r.apis[a.Key]; ok {
			return r, fmt.Errorf("%s: %s: api key %d already defined by %sRequest", r.name, n, a.Key, prev.Name)
		}
		r.apis[a.Key] = a
	}
	return r, nil
}

// requestSchemas returns the bytes of the *Request.json files of a
// directory or of a jar (any directory inside it), by base name.
func requestSchemas(path string) (map[string][]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	if st.IsDir() {
		files, err := filepath.Glob(filepath.Join(path, "*Request.json"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			out[filepath.Base(f)] = b
		}
		return out, nil
	}
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer z.Close()
	for _, f := range z.File {
		base := pathpkg.Base(f.Name)
		if !strings.HasSuffix(base, "Request.json") || !strings.HasPrefix(f.Name, "common/message/") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, f.Name, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, f.Name, err)
		}
		out[base] = b
	}
	return out, nil
}

// join makes one table of the releases, oldest first: a key's versions
// span every version any release knew, its name and flexible versions are
// the newest release's that has it.
func join(releases []release) map[int16]*api {
	out := map[int16]*api{}
	for _, r := range releases {
		for k, a := range r.apis {
			prev, ok := out[k]
			c := *a
			if ok {
				c.MinVersion = min(prev.MinVersion, a.MinVersion)
				c.MaxVersion = max(prev.MaxVersion, a.MaxVersion)
				if a.FlexibleFrom == none {
					// A release that knew fewer versions had none
					// flexible; an older one's flexible versions stay.
					c.FlexibleFrom = prev.FlexibleFrom
				}
			}
			out[k] = &c
		}
	}
	return out
}

func releaseNames(rs []release) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.name)
	}
	return out
}

// parseSchema parses one request schema; nil when its validVersions is
// "none" (the release removed the key).
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
		return nil, "", nil
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
			if len(changed) == 0 && e.HeaderV3From == none {
				return nil, fmt.Errorf("overlay %q for key %d changes nothing: the schemas have it; remove the entry", e.Note, e.Key)
			}
			a.Notes = append(a.Notes, changed...)
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
func render(rows []api, sources []string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `// Code generated by internal/genapis from the request schemas of %s
// and the overlay in internal/genapis/main.go. DO NOT EDIT.

package decode`, strings.Join(sources, ", "))
	b.WriteString(`

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
