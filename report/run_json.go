package report

import (
	"io"
	"time"
)

// RunInfo is what made a report: kidscope's version, the options that
// shape its results, and its inputs. The command fills it (the hashes of
// the inputs are I/O, done there); JSON and NDJSON write it.
type RunInfo struct {
	Version string
	Options RunOptions
	Inputs  []Input
}

// RunOptions are the options that shape the results, as given (rule
// globs, port ranges and --header-v3 entries unexpanded) or, for the caps,
// as in effect after --memory-limit shared it out.
type RunOptions struct {
	Ports       []string // --port
	Profile     string   // --profile
	HeaderV3    []string // --header-v3 KEY:MINVERSION
	Rules       []string // --rule
	SkipRules   []string // --skip-rule
	MinSeverity string   // --min-severity
	Filter      string   // --filter; "" none
	BPFRaw      string   // --bpf-raw (a file name or the program); "" none
	UUID        string   // --uuid
	TLSKeyLogs  []string // --tls-keylog file names
	Workers     int
	MaxFrame    int
	// Caps in effect.
	MaxConnections         int
	MaxBuffer              int
	MaxBufferPerConnection int
	MaxResyncBuffer        int64
	MaxBodyBuffer          int64
	// live only.
	Snaplen     int
	IdleTimeout time.Duration
}

// Input kinds.
const (
	InputFile      = "file"
	InputStdin     = "stdin"
	InputInterface = "interface"
	InputTopic     = "topic" // kidscope fleet's Kafka topic
)

// Input is one input of the run: a capture file, standard input or (live)
// an interface.
type Input struct {
	Kind string // InputFile, InputStdin, InputInterface
	Name string // as given ("-" is stdin)
	// Size and SHA256 are those of the bytes read (hex); Size is nil when
	// unknown, SHA256 "" when not computed, and Unhashed then says why.
	Size     *int64
	SHA256   string
	Unhashed string
}

type optionsJSON struct {
	Ports                  []string `json:"ports"`
	Profile                string   `json:"profile"`
	HeaderV3               []string `json:"header_v3"`
	Rules                  []string `json:"rules"`
	SkipRules              []string `json:"skip_rules"`
	MinSeverity            string   `json:"min_severity"`
	Filter                 *string  `json:"filter"`
	BPFRaw                 *string  `json:"bpf_raw"`
	UUID                   string   `json:"uuid"`
	TLSKeyLogs             []string `json:"tls_keylogs"`
	Workers                int      `json:"workers"`
	MaxFrame               int      `json:"max_frame"`
	MaxConnections         int      `json:"max_connections"`
	MaxBuffer              int      `json:"max_buffer"`
	MaxBufferPerConnection int      `json:"max_buffer_per_connection"`
	MaxResyncBuffer        int64    `json:"max_resync_buffer"`
	MaxBodyBuffer          int64    `json:"max_body_buffer"`
	Snaplen                *int     `json:"snaplen"`
	IdleTimeoutSeconds     *float64 `json:"idle_timeout_seconds"`
}

type inputJSON struct {
	Kind     string  `json:"kind"`
	Name     string  `json:"name"`
	Size     *int64  `json:"size"`
	SHA256   *string `json:"sha256"`
	Unhashed *string `json:"unhashed"`
}

// runJSON is the run's part of the document, and of the NDJSON run line.
type runJSON struct {
	KidscopeVersion *string      `json:"kidscope_version"`
	Options         *optionsJSON `json:"options"`
	Inputs          []inputJSON  `json:"inputs"`
}

func list(s []string) []string { return append([]string{}, s...) }

// newRunJSON: null version and options when the report was made without
// them (a program of its own, not the command).
func newRunJSON(r *RunInfo) runJSON {
	j := runJSON{Inputs: []inputJSON{}}
	if r == nil {
		return j
	}
	j.KidscopeVersion = optText(r.Version)
	o := &r.Options
	j.Options = &optionsJSON{
		Ports: list(o.Ports), Profile: o.Profile, HeaderV3: list(o.HeaderV3), Rules: list(o.Rules), SkipRules: list(o.SkipRules),
		MinSeverity: o.MinSeverity, Filter: optText(o.Filter), BPFRaw: optText(o.BPFRaw), UUID: o.UUID,
		TLSKeyLogs: list(o.TLSKeyLogs), Workers: o.Workers, MaxFrame: o.MaxFrame,
		MaxConnections: o.MaxConnections, MaxBuffer: o.MaxBuffer, MaxBufferPerConnection: o.MaxBufferPerConnection,
		MaxResyncBuffer: o.MaxResyncBuffer, MaxBodyBuffer: o.MaxBodyBuffer,
	}
	if o.Snaplen > 0 {
		n := o.Snaplen
		j.Options.Snaplen = &n
	}
	if o.IdleTimeout > 0 {
		s := o.IdleTimeout.Seconds()
		j.Options.IdleTimeoutSeconds = &s
	}
	for _, in := range r.Inputs {
		ij := inputJSON{Kind: in.Kind, Name: in.Name, Size: in.Size, SHA256: optText(in.SHA256), Unhashed: optText(in.Unhashed)}
		if in.SHA256 != "" {
			ij.Unhashed = nil
		}
		j.Inputs = append(j.Inputs, ij)
	}
	return j
}

type ndjsonRun struct {
	Kind          string `json:"kind"`
	SchemaVersion int    `json:"schema_version"`
	runJSON
}

// WriteRunLine writes the NDJSON line of kind "run" (schema_version,
// kidscope_version, options, inputs) in one Write: what `live` streams
// first, before its findings.
func WriteRunLine(w io.Writer, r *RunInfo) error {
	b, err := marshalLine(ndjsonRun{"run", AnalysisSchemaVersion, newRunJSON(r)})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
