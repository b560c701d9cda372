package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The fields of a frame record, by their JSON names: what -e selects, and
// the columns of the text formats (csv, tsv, fields). The table has its
// own layout (frames_table.go).

// frameField is one field of a FrameRecord.
type frameField struct {
	name string
	// text is the value in the text formats ("" when unknown), its
	// multiple values (error_codes) joined by agg.
	text func(r *FrameRecord, agg string) string
	// captured marks a string that comes from the capture or the command
	// line (an ID, a file name): it is escaped, and guarded against
	// spreadsheet formulas where the format asks for it. Numbers are not.
	captured bool
	// value is what JSON writes.
	value func(r *FrameRecord) any
}

var frameFields = []*frameField{
	{name: "file", captured: true, text: func(r *FrameRecord, _ string) string { return r.File }, value: func(r *FrameRecord) any { return r.File }},
	{name: "frame", text: func(r *FrameRecord, _ string) string { return strconv.FormatInt(r.Frame, 10) }, value: func(r *FrameRecord) any { return r.Frame }},
	{name: "time", text: func(r *FrameRecord, _ string) string { return r.Time }, value: func(r *FrameRecord) any { return r.Time }},
	{name: "client", captured: true, text: func(r *FrameRecord, _ string) string { return r.Client }, value: func(r *FrameRecord) any { return r.Client }},
	{name: "broker", captured: true, text: func(r *FrameRecord, _ string) string { return r.Broker }, value: func(r *FrameRecord) any { return r.Broker }},
	{name: "connection_id", text: func(r *FrameRecord, _ string) string { return strconv.Itoa(r.ConnectionID) }, value: func(r *FrameRecord) any { return r.ConnectionID }},
	{name: "direction", captured: true, text: func(r *FrameRecord, _ string) string { return r.Direction }, value: func(r *FrameRecord) any { return r.Direction }},
	{name: "api_key", text: func(r *FrameRecord, _ string) string { return optInt(r.APIKey) }, value: func(r *FrameRecord) any { return r.APIKey }},
	{name: "api_name", captured: true, text: func(r *FrameRecord, _ string) string { return r.APIName }, value: func(r *FrameRecord) any { return r.APIName }},
	{name: "api_version", text: func(r *FrameRecord, _ string) string { return optInt(r.APIVersion) }, value: func(r *FrameRecord) any { return r.APIVersion }},
	{name: "correlation_id", text: func(r *FrameRecord, _ string) string { return strconv.Itoa(int(r.CorrelationID)) }, value: func(r *FrameRecord) any { return r.CorrelationID }},
	{name: "client_id", captured: true, text: func(r *FrameRecord, _ string) string { return optStr(r.ClientID) }, value: func(r *FrameRecord) any { return r.ClientID }},
	{name: "instance_id", captured: true, text: func(r *FrameRecord, _ string) string { return optStr(r.InstanceID) }, value: func(r *FrameRecord) any { return r.InstanceID }},
	{name: "error_code", text: func(r *FrameRecord, _ string) string { return optInt(r.ErrorCode) }, value: func(r *FrameRecord) any { return r.ErrorCode }},
	{name: "error_name", captured: true, text: func(r *FrameRecord, _ string) string { return r.ErrorName }, value: func(r *FrameRecord) any { return r.ErrorName }},
	{name: "error_codes", text: func(r *FrameRecord, agg string) string { return codeList(r.ErrorCodes, agg) }, value: func(r *FrameRecord) any { return r.ErrorCodes }},
	{name: "request_frame", text: func(r *FrameRecord, _ string) string { return optFrame(r.RequestFrame) }, value: func(r *FrameRecord) any { return r.RequestFrame }},
	{name: "request_file", captured: true, text: func(r *FrameRecord, _ string) string { return r.RequestFile }, value: func(r *FrameRecord) any { return r.RequestFile }},
	{name: "response_frame", text: func(r *FrameRecord, _ string) string { return optFrame(r.ResponseFrame) }, value: func(r *FrameRecord) any { return r.ResponseFrame }},
	{name: "response_file", captured: true, text: func(r *FrameRecord, _ string) string { return r.ResponseFile }, value: func(r *FrameRecord) any { return r.ResponseFile }},
	{name: "latency", text: func(r *FrameRecord, _ string) string { return optSeconds(r.Latency) }, value: func(r *FrameRecord) any { return r.Latency }},
	{name: "telemetry_instance_id", captured: true, text: func(r *FrameRecord, _ string) string { return optStr(r.TelemetryInstanceID) }, value: func(r *FrameRecord) any { return r.TelemetryInstanceID }},
	{name: "subscription_id", text: func(r *FrameRecord, _ string) string { return optInt32(r.SubscriptionID) }, value: func(r *FrameRecord) any { return r.SubscriptionID }},
	{name: "terminating", text: func(r *FrameRecord, _ string) string { return optBool(r.Terminating) }, value: func(r *FrameRecord) any { return r.Terminating }},
	{name: "compression_type", text: func(r *FrameRecord, _ string) string { return optInt8(r.CompressionType) }, value: func(r *FrameRecord) any { return r.CompressionType }},
	{name: "metrics_length", text: func(r *FrameRecord, _ string) string { return optLen(r.MetricsLength) }, value: func(r *FrameRecord) any { return r.MetricsLength }},
	{name: "member_id", captured: true, text: func(r *FrameRecord, _ string) string { return optStr(r.MemberID) }, value: func(r *FrameRecord) any { return r.MemberID }},
}

// defaultTextFields are the columns of csv and tsv without -e: the CSV's
// first columns as they always were, then the ones added since.
var defaultTextFields = []string{"file", "frame", "client", "broker", "direction", "api_key", "api_name", "api_version",
	"correlation_id", "client_id", "instance_id", "error_code", "error_codes",
	"time", "connection_id", "request_frame", "response_frame", "latency"}

// FrameFieldNames lists the names -e takes, in the order of the JSON record.
func FrameFieldNames() []string {
	names := make([]string, len(frameFields))
	for i, f := range frameFields {
		names[i] = f.name
	}
	return names
}

func lookupFields(names []string) ([]*frameField, error) {
	out := make([]*frameField, 0, len(names))
	for _, n := range names {
		i := 0
		for i < len(frameFields) && frameFields[i].name != n {
			i++
		}
		if i == len(frameFields) {
			return nil, fmt.Errorf("unknown field %q: the fields are %s", shown(n), strings.Join(FrameFieldNames(), ", "))
		}
		out = append(out, frameFields[i])
	}
	return out, nil
}

// FieldsNeedResponse reports whether the fields of a request's row depend
// on its response (response_frame, response_file, latency): only then must
// the command hold a request's row until its response comes. No fields
// means every field.
func FieldsNeedResponse(names []string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		switch n {
		case "response_frame", "response_file", "latency":
			return true
		}
	}
	return false
}

// Seconds is a duration written in seconds: a JSON number with up to nine
// decimals, nine decimals in the text formats (as tshark writes its time
// deltas), exact to the nanosecond either way.
type Seconds time.Duration

// text writes s with nine decimals, from its nanoseconds (no float).
func (s Seconds) text() string {
	n := int64(s)
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%09d", sign, n/1e9, n%1e9)
}

// MarshalJSON writes s as a number, without trailing zeros.
func (s Seconds) MarshalJSON() ([]byte, error) {
	t := strings.TrimRight(s.text(), "0")
	return []byte(strings.TrimSuffix(t, ".")), nil
}

func optSeconds(p *Seconds) string {
	if p == nil {
		return ""
	}
	return p.text()
}

func optFrame(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

func optInt(p *int16) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(int(*p))
}

func optInt32(p *int32) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(int(*p))
}

func optInt8(p *int8) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(int(*p))
}

func optLen(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func optBool(p *bool) string {
	if p == nil {
		return ""
	}
	return strconv.FormatBool(*p)
}

func optStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// codeList joins the numbers of codes with agg.
func codeList(codes []ErrorCode, agg string) string {
	var b []byte
	for i, c := range codes {
		if i > 0 {
			b = append(b, agg...)
		}
		b = strconv.AppendInt(b, int64(c.Code), 10)
	}
	return string(b)
}

// appendJSONFields appends the fields of r as JSON object members, then
// the closing brace.
func appendJSONFields(b []byte, r *FrameRecord, fields []*frameField) ([]byte, error) {
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.name) // names are plain ASCII
		b = append(b, ':')
		v, err := json.Marshal(f.value(r))
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.name, err)
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// FramesOptions choose the output of `kidscope frames`.
type FramesOptions struct {
	// Format is table, json, ndjson, csv, tsv or fields (tsv without its
	// header line, as tshark -T fields writes).
	Format string
	// Fields are the fields to write, by JSON name (-e); none: all of
	// them (json, ndjson) or defaultTextFields (csv, tsv, fields).
	Fields []string
	// Header writes the field names first: nil takes the format's
	// default (yes for csv and tsv, no for fields).
	Header *bool
	// Separator parts fields: 0 takes the format's (',' or a tab).
	Separator rune
	// Quote wraps every value of tsv and fields in this character ('"'
	// or '\''), doubling it inside; 0 does not. CSV quotes as RFC 4180
	// does.
	Quote rune
	// Aggregator joins the values of a multi-valued field (error_codes):
	// "" takes the format's (";" in CSV as it always was, "," in tsv and
	// fields as tshark's -E aggregator; the other of the two when the
	// separator is that one).
	Aggregator string
}

// TextFormat reports whether a format writes fields as text (csv, tsv,
// fields): the formats -E shapes.
func TextFormat(format string) bool {
	return format == "csv" || format == "tsv" || format == "fields"
}

// NewFramesWriter returns a writer of the format opt names. Every format
// but table streams: memory does not grow with the capture.
func NewFramesWriter(w io.Writer, opt FramesOptions) (FramesWriter, error) {
	var fields []*frameField
	if len(opt.Fields) > 0 {
		var err error
		if fields, err = lookupFields(opt.Fields); err != nil {
			return nil, err
		}
	}
	if !TextFormat(opt.Format) && (opt.Header != nil || opt.Separator != 0 || opt.Quote != 0 || opt.Aggregator != "") {
		return nil, fmt.Errorf("-E shapes csv, tsv and fields output, not %s", opt.Format)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	switch opt.Format {
	case "table", "":
		if fields != nil {
			return nil, errors.New("-e selects the fields of tsv, fields, csv, json and ndjson output; the table has its own columns")
		}
		return &framesTable{w: bw, max: maxFrameRows}, nil
	case "json":
		return &framesJSON{w: bw, fields: fields}, nil
	case "ndjson":
		return &framesNDJSON{w: bw, enc: json.NewEncoder(bw), fields: fields}, nil
	case "csv", "tsv", "fields":
		return newFramesText(bw, opt, fields)
	}
	return nil, fmt.Errorf("-o %q: frames writes table, json, ndjson, csv, tsv or fields", opt.Format)
}

// framesText writes csv, tsv and fields: one line per record, the fields
// parted by the separator.
type framesText struct {
	w      *bufio.Writer
	c      *csv.Writer // csv only
	fields []*frameField
	header bool
	headed bool
	sep    rune
	quote  rune
	agg    string
	// guard puts an apostrophe before a captured value a spreadsheet
	// would take for a formula: csv and tsv, the formats spreadsheets
	// open. fields is for scripts, and writes values as they are (escaped).
	guard bool
	cells []string
	line  []byte
}

func newFramesText(w *bufio.Writer, opt FramesOptions, fields []*frameField) (*framesText, error) {
	if fields == nil {
		fields, _ = lookupFields(defaultTextFields)
	}
	f := &framesText{w: w, fields: fields, header: opt.Format != "fields", sep: '\t', quote: opt.Quote,
		agg: ",", guard: opt.Format != "fields", cells: make([]string, len(fields))}
	if opt.Header != nil {
		f.header = *opt.Header
	}
	if opt.Format == "csv" {
		f.sep, f.agg = ',', ";"
	}
	if opt.Separator != 0 {
		f.sep = opt.Separator
	}
	switch {
	case opt.Aggregator != "":
		f.agg = opt.Aggregator
	case strings.ContainsRune(f.agg, f.sep):
		// The default gives way to the separator asked for.
		f.agg = ";"
		if f.sep == ';' {
			f.agg = ","
		}
	}
	if strings.ContainsRune(f.agg, f.sep) {
		return nil, fmt.Errorf("-E aggregator=%s holds the separator: the values of error_codes would read as fields", shown(f.agg))
	}
	if opt.Format == "csv" {
		if opt.Quote != 0 {
			return nil, errors.New("-E quote: csv quotes as RFC 4180 does; quote shapes tsv and fields")
		}
		f.c = csv.NewWriter(w)
		f.c.Comma = f.sep
		// The csv package refuses what would make the file unreadable
		// (a quote, a line break) only when it writes: ask it now.
		if f.sep == '"' || f.sep == '\r' || f.sep == '\n' || f.sep == utf8.RuneError || f.sep == 0xFEFF {
			return nil, fmt.Errorf("-E separator=%q cannot part csv fields", f.sep)
		}
	} else if f.sep == f.quote {
		return nil, fmt.Errorf("-E separator and quote are both %q", f.sep)
	}
	return f, nil
}

// cell is a field's value as the format writes it.
func (f *framesText) cell(fl *frameField, r *FrameRecord) string {
	v := fl.text(r, f.agg)
	if !fl.captured {
		return v
	}
	if f.guard {
		v = shownCell(v)
	} else {
		v = shown(v)
	}
	return v
}

func (f *framesText) writeHeader() error {
	f.headed = true
	if !f.header {
		return nil
	}
	for i, fl := range f.fields {
		f.cells[i] = fl.name
	}
	return f.write(f.cells)
}

func (f *framesText) write(cells []string) error {
	if f.c != nil {
		return f.c.Write(cells)
	}
	b := f.line[:0]
	for i, c := range cells {
		if i > 0 {
			b = utf8.AppendRune(b, f.sep)
		}
		b = f.appendValue(b, c)
	}
	f.line = append(b, '\n')
	_, err := f.w.Write(f.line)
	return err
}

// appendValue writes a value of tsv or fields. Escaped already (shown), it
// holds no tab or line break; quoted, the quote is doubled inside; not
// quoted, a separator inside it is written as an escape, so that every
// line splits into its fields.
func (f *framesText) appendValue(b []byte, v string) []byte {
	if f.quote != 0 {
		b = utf8.AppendRune(b, f.quote)
		for _, r := range v {
			if r == f.quote {
				b = utf8.AppendRune(b, r)
			}
			b = utf8.AppendRune(b, r)
		}
		return utf8.AppendRune(b, f.quote)
	}
	if !strings.ContainsRune(v, f.sep) {
		return append(b, v...)
	}
	for _, r := range v {
		switch {
		case r != f.sep:
			b = utf8.AppendRune(b, r)
		case r < 0x80:
			b = fmt.Appendf(b, `\x%02x`, r)
		default:
			b = fmt.Appendf(b, `\u%04x`, r)
		}
	}
	return b
}

func (f *framesText) Add(r *FrameRecord) error {
	if !f.headed {
		if err := f.writeHeader(); err != nil {
			return err
		}
	}
	for i, fl := range f.fields {
		f.cells[i] = f.cell(fl, r)
	}
	return f.write(f.cells)
}

func (f *framesText) Finish(FramesSummary) error {
	if !f.headed {
		if err := f.writeHeader(); err != nil {
			return err
		}
	}
	if f.c != nil {
		f.c.Flush()
		if err := f.c.Error(); err != nil {
			return err
		}
	}
	return f.w.Flush()
}
