package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/result"
)

// UUIDForm is how UUIDs are written.
type UUIDForm int

const (
	UUIDKafka   UUIDForm = iota // URL-safe base64 without padding, as Kafka prints
	UUIDRFC4122                 // 8-4-4-4-12 hexadecimal
)

// ParseUUIDForm reads the --uuid flag's value.
func ParseUUIDForm(s string) (UUIDForm, error) {
	switch s {
	case "kafka", "":
		return UUIDKafka, nil
	case "rfc4122":
		return UUIDRFC4122, nil
	}
	return 0, fmt.Errorf("--uuid %q: want kafka or rfc4122", s)
}

func (f UUIDForm) format(u kafka.UUID) string {
	if f == UUIDRFC4122 {
		return u.RFC4122()
	}
	return u.String()
}

// FrameRecord is one Kafka message as `kidscope frames` lists it. Pointer
// fields are null in JSON when unknown (an unmatched response has no API).
type FrameRecord struct {
	File          string  `json:"file"`
	Frame         int64   `json:"frame"`
	Time          string  `json:"time"`
	Client        string  `json:"client"`
	Broker        string  `json:"broker"`
	Direction     string  `json:"direction"`
	APIKey        *int16  `json:"api_key"`
	APIName       string  `json:"api_name"`
	APIVersion    *int16  `json:"api_version"`
	CorrelationID int32   `json:"correlation_id"`
	ClientID      *string `json:"client_id"`
	InstanceID    *string `json:"instance_id"`
	// ErrorCode speaks for the response: its top-level ErrorCode, or the
	// code every nested item carries; null when neither exists (no code,
	// or items that disagree: ErrorCodes lists them).
	ErrorCode  *int16      `json:"error_code"`
	ErrorName  string      `json:"error_name,omitempty"`
	ErrorCodes []ErrorCode `json:"error_codes,omitempty"`
}

// ErrorCode is one Kafka error code with its name.
type ErrorCode struct {
	Code int16  `json:"code"`
	Name string `json:"name"`
}

// errorText names codes as the text formats do: "INVALID_REQUEST (42)".
func errorText(codes []ErrorCode) string {
	var b []byte
	for i, c := range codes {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, c.Name...)
		b = append(b, " ("...)
		b = strconv.AppendInt(b, int64(c.Code), 10)
		b = append(b, ')')
	}
	return string(b)
}

// NewFrameRecord builds the record of a request or response event.
func NewFrameRecord(file string, c kafka.Endpoints, e *decode.Event, form UUIDForm) FrameRecord {
	m := &e.Msg
	r := FrameRecord{
		File: file, Frame: e.At.Frame, Time: e.At.Time.UTC().Format(time.RFC3339Nano),
		Client: c.Client.String(), Broker: c.Broker.String(), Direction: e.Side.Carries(),
	}
	if e.Side == kafka.ToBroker || m.Matched {
		key, ver := m.Request.APIKey, m.Request.APIVersion
		r.APIKey, r.APIVersion, r.APIName = &key, &ver, decode.APIName(key)
	}
	if e.Side == kafka.ToBroker {
		r.CorrelationID = m.Request.CorrelationID
		if !m.Request.ClientIDNull && m.Request.HeaderVersion > 0 {
			id := m.Request.ClientID
			r.ClientID = &id
		}
		if m.Request.HasInstanceID {
			id := form.format(m.Request.InstanceID)
			r.InstanceID = &id
		}
		return r
	}
	r.CorrelationID = m.Response.CorrelationID
	codes := m.Codes()
	for _, c := range codes {
		r.ErrorCodes = append(r.ErrorCodes, ErrorCode{c, decode.ErrorName(c)})
	}
	if len(codes) == 1 {
		code := codes[0]
		r.ErrorCode, r.ErrorName = &code, r.ErrorCodes[0].Name
	}
	return r
}

// FramesSummary is the closing line of `kidscope frames`.
type FramesSummary struct {
	Packets      int64 `json:"packets"`
	Bytes        int64 `json:"bytes"`
	Connections  int64 `json:"connections"`
	Requests     int64 `json:"requests"`
	Responses    int64 `json:"responses"`
	Unmatched    int64 `json:"unmatched"`
	Gaps         int64 `json:"gaps"`
	Resyncs      int64 `json:"resyncs"`
	DecodeErrors int64 `json:"decode_errors"`
	NotKafka     int64 `json:"not_kafka"`
	SASLTokens   int64 `json:"sasl_tokens"`
	CutPackets   int64 `json:"cut_packets"`
}

// NewFramesSummary takes the figures of a run.
func NewFramesSummary(s *result.Summary) FramesSummary {
	return FramesSummary{
		Packets: s.Capture.Packets, Bytes: s.Capture.Bytes, Connections: s.Connections,
		Requests: s.Requests, Responses: s.Responses, Unmatched: s.Unmatched, Gaps: s.Gaps,
		Resyncs: s.Resyncs, DecodeErrors: s.Malformed + s.Capture.Malformed,
		NotKafka: s.NotKafka, SASLTokens: s.SASLTokens, CutPackets: s.Capture.Cut,
	}
}

func (s FramesSummary) String() string {
	return fmt.Sprintf("%d packets, %d bytes, %d connections, %d requests, %d responses, %d unmatched, %d gaps, %d resyncs, %d decode errors",
		s.Packets, s.Bytes, s.Connections, s.Requests, s.Responses, s.Unmatched, s.Gaps, s.Resyncs, s.DecodeErrors)
}

// FramesWriter writes the records of `kidscope frames` in one format.
type FramesWriter interface {
	Add(r *FrameRecord) error
	// Finish writes what closes the output (the table, the summary).
	Finish(s FramesSummary) error
}

// NewFramesWriter returns a writer of format table, json, ndjson or csv.
// Every format but table streams: memory does not grow with the capture.
func NewFramesWriter(w io.Writer, format string) (FramesWriter, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	switch format {
	case "table", "":
		return &framesTable{w: bw, max: maxFrameRows}, nil
	case "json":
		return &framesJSON{w: bw}, nil
	case "ndjson":
		return &framesNDJSON{w: bw, enc: json.NewEncoder(bw)}, nil
	case "csv":
		return &framesCSV{w: bw, c: csv.NewWriter(bw)}, nil
	}
	return nil, fmt.Errorf("-o %q: frames writes table, json, ndjson or csv", format)
}

var frameColumns = []string{"file", "frame", "client", "broker", "direction", "api_key", "api_name", "api_version",
	"correlation_id", "client_id", "instance_id", "error_code", "error_codes"}

func optInt(p *int16) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(int(*p))
}

func optStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// fields are the record's CSV cells, its strings through shownCell.
func (r *FrameRecord) fields() []string {
	return []string{shownCell(r.File), strconv.FormatInt(r.Frame, 10), shownCell(r.Client), shownCell(r.Broker), shownCell(r.Direction),
		optInt(r.APIKey), shownCell(r.APIName), optInt(r.APIVersion), strconv.Itoa(int(r.CorrelationID)), shownCell(optStr(r.ClientID)),
		shownCell(optStr(r.InstanceID)), optInt(r.ErrorCode), codeList(r.ErrorCodes)}
}

// codeList joins the numbers of codes with ";" (a CSV cell).
func codeList(codes []ErrorCode) string {
	var b []byte
	for i, c := range codes {
		if i > 0 {
			b = append(b, ';')
		}
		b = strconv.AppendInt(b, int64(c.Code), 10)
	}
	return string(b)
}

type framesCSV struct {
	w      *bufio.Writer
	c      *csv.Writer
	headed bool
}

func (f *framesCSV) Add(r *FrameRecord) error {
	if !f.headed {
		f.headed = true
		if err := f.c.Write(frameColumns); err != nil {
			return err
		}
	}
	return f.c.Write(r.fields())
}

func (f *framesCSV) Finish(FramesSummary) error {
	if !f.headed {
		if err := f.c.Write(frameColumns); err != nil {
			return err
		}
	}
	f.c.Flush()
	if err := f.c.Error(); err != nil {
		return err
	}
	return f.w.Flush()
}

type framesNDJSON struct {
	w   *bufio.Writer
	enc *json.Encoder
}

type ndjsonFrame struct {
	Kind string `json:"kind"`
	*FrameRecord
}

func (f *framesNDJSON) Add(r *FrameRecord) error { return f.enc.Encode(ndjsonFrame{"frame", r}) }

func (f *framesNDJSON) Finish(s FramesSummary) error {
	if err := f.enc.Encode(struct {
		Kind string `json:"kind"`
		FramesSummary
	}{"summary", s}); err != nil {
		return err
	}
	return f.w.Flush()
}

type framesJSON struct {
	w *bufio.Writer
	n int
}

func (f *framesJSON) Add(r *FrameRecord) error {
	if f.n == 0 {
		f.w.WriteString("{\"schema_version\":1,\"frames\":[\n")
	} else {
		f.w.WriteString(",\n")
	}
	f.n++
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = f.w.Write(b)
	return err
}

func (f *framesJSON) Finish(s FramesSummary) error {
	if f.n == 0 {
		f.w.WriteString("{\"schema_version\":1,\"frames\":[")
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.w, "\n],\"summary\":%s}\n", b)
	return f.w.Flush()
}

// framesTable collects rows and renders them at the end: column widths need
// every row. It is for reading small captures, and keeps the first
// maxFrameRows; the other formats stream every record.
type framesTable struct {
	w       *bufio.Writer
	rows    [][]string
	max     int
	dropped int64
}

// maxFrameRows caps the rows the frames table keeps.
const maxFrameRows = 100000

func (f *framesTable) Add(r *FrameRecord) error {
	if len(f.rows) >= f.max {
		f.dropped++
		return nil
	}
	api := r.APIName
	if r.APIKey != nil {
		api = fmt.Sprintf("%s(%d) v%s", r.APIName, *r.APIKey, optInt(r.APIVersion))
	}
	code := errorText(r.ErrorCodes)
	dir := "→"
	if r.Direction == "response" {
		dir = "←"
	}
	row := []string{r.File, strconv.FormatInt(r.Frame, 10), r.Client, dir, r.Broker, api,
		strconv.Itoa(int(r.CorrelationID)), optStr(r.ClientID), optStr(r.InstanceID), code}
	for i := range row {
		row[i] = shown(row[i])
	}
	f.rows = append(f.rows, row)
	return nil
}

func (f *framesTable) Finish(s FramesSummary) error {
	if len(f.rows) > 0 {
		t := tablewriter.NewTable(f.w, tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header("FILE", "FRAME", "CLIENT", "", "BROKER", "API", "CORR", "CLIENT ID", "INSTANCE ID", "ERROR")
		if err := t.Bulk(f.rows); err != nil {
			return err
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if f.dropped > 0 {
		fmt.Fprintf(f.w, "%s not listed: the table keeps the first %s (-o csv, json and ndjson write every one)\n",
			plural(f.dropped, "message", "messages"), commas(int64(len(f.rows))))
	}
	fmt.Fprintln(f.w, s.String())
	return f.w.Flush()
}
