package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

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
// Its JSON names are the field names -e takes (frames_fields.go).
type FrameRecord struct {
	File          string  `json:"file"`
	Frame         int64   `json:"frame"`
	Time          string  `json:"time"`
	Client        string  `json:"client"`
	Broker        string  `json:"broker"`
	ConnectionID  int     `json:"connection_id"`
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
	// RequestFrame is, on a response, the frame of the request it answers;
	// RequestFile names that request's input when it is another one (a
	// connection that runs on into the next file of a rotated capture).
	RequestFrame *int64 `json:"request_frame"`
	RequestFile  string `json:"request_file,omitempty"`
	// ResponseFrame is, on a request, the frame of its response; the
	// command fills it in when the response comes (see its hold).
	ResponseFrame *int64 `json:"response_frame"`
	ResponseFile  string `json:"response_file,omitempty"`
	// Latency is the response's capture time less its request's, on both.
	Latency *Seconds `json:"latency"`
	// What the bodies kidscope reads hold, where the message has it
	// (absent from JSON elsewhere): the GetTelemetrySubscriptions v0 and
	// PushTelemetry v0 body's ClientInstanceId (requests; and the
	// GetTelemetrySubscriptions v0 response's), the SubscriptionId of
	// PushTelemetry requests and GetTelemetrySubscriptions responses,
	// PushTelemetry's Terminating, CompressionType and the length of its
	// metrics (never the metrics), and the MemberId of JoinGroup and
	// ConsumerGroupHeartbeat requests and responses.
	TelemetryInstanceID *string `json:"telemetry_instance_id,omitempty"`
	SubscriptionID      *int32  `json:"subscription_id,omitempty"`
	Terminating         *bool   `json:"terminating,omitempty"`
	CompressionType     *int8   `json:"compression_type,omitempty"`
	MetricsLength       *int    `json:"metrics_length,omitempty"`
	MemberID            *string `json:"member_id,omitempty"`
	// At is Time as a time, for the table's relative TIME column.
	At time.Time `json:"-"`
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

// NewFrameRecord builds the record of a request or response event of
// connection c; files names the inputs by their index. A response's
// request_frame and latency come from the request it answers; a request's
// response_frame is left for SetResponse.
func NewFrameRecord(files []string, c *kafka.Conn, e *decode.Event, form UUIDForm) FrameRecord {
	m := &e.Msg
	r := FrameRecord{
		File: fileName(files, e.At.File), Frame: e.At.Frame, Time: e.At.Time.UTC().Format(time.RFC3339Nano), At: e.At.Time,
		Client: c.Client.String(), Broker: c.Broker.String(), ConnectionID: c.ID, Direction: e.Side.Carries(),
	}
	if e.Side == kafka.ToBroker || m.Matched {
		key, ver := m.Request.APIKey, m.Request.APIVersion
		r.APIKey, r.APIVersion, r.APIName = &key, &ver, decode.APIName(key)
	}
	if m.HasBody {
		r.setBody(e.Side == kafka.ToBroker, m, form)
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
	if m.Matched {
		f, lat := m.RequestAt.Frame, Seconds(e.At.Time.Sub(m.RequestAt.Time))
		r.RequestFrame, r.Latency = &f, &lat
		if m.RequestAt.File != e.At.File {
			r.RequestFile = fileName(files, m.RequestAt.File)
		}
	}
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

// setBody fills the fields of the bodies kidscope reads from m's decoded
// body: which of them a message has depends on its API and direction.
func (r *FrameRecord) setBody(request bool, m *decode.Message, form UUIDForm) {
	b := &m.Body
	switch key := m.Request.APIKey; {
	case key == decode.KeyGetTelemetrySubscriptions || key == decode.KeyPushTelemetry:
		if b.HasInstanceID {
			id := form.format(b.InstanceID)
			r.TelemetryInstanceID = &id
		}
		if request == (key == decode.KeyPushTelemetry) {
			sub := b.SubscriptionID
			r.SubscriptionID = &sub
		}
		if request && key == decode.KeyPushTelemetry {
			term, comp, n := b.Terminating, b.CompressionType, b.MetricsLength
			r.Terminating, r.CompressionType, r.MetricsLength = &term, &comp, &n
		}
	case key == decode.KeyJoinGroup || key == decode.KeyConsumerGroupHeartbeat:
		member := b.MemberID
		r.MemberID = &member
	}
}

// SetResponse links the record of a request to its response's: the
// response's frame (and file, when it is another input) and the latency.
func (r *FrameRecord) SetResponse(resp *FrameRecord) {
	f := resp.Frame
	r.ResponseFrame, r.Latency = &f, resp.Latency
	if resp.File != r.File {
		r.ResponseFile = resp.File
	}
}

// FramesSummary is the closing line of `kidscope frames`. Its counts are
// of the whole run, whatever the filters let through; Listed says how many
// messages they listed.
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
	// OutsideTime counts the packets --from/--to dropped before
	// reassembly (counted in Packets too).
	OutsideTime int64 `json:"outside_time,omitempty"`
	// Listed counts the messages written (requests and responses the
	// filters let through).
	Listed int64 `json:"listed"`
	// Filter is what --api and --connection asked for; nil without them.
	Filter *FramesFilter `json:"filter,omitempty"`
	// UnlinkedRequests counts the requests written before their response
	// came, because the hold of requests awaiting theirs was full: they
	// have no response_frame.
	UnlinkedRequests int64 `json:"unlinked_requests"`
	// Hold is how many messages the hold keeps, for the text line.
	Hold int `json:"-"`
	// Start is the capture time of the first packet: TIME in the table
	// counts from it.
	Start time.Time `json:"-"`
}

// FramesFilter is what the filters of `kidscope frames` let through.
type FramesFilter struct {
	APIKeys     []int16 `json:"api_keys,omitempty"`
	Connections []int   `json:"connections,omitempty"`
	// Scope is --instance, --client and --broker, in the flags' words.
	Scope string `json:"scope,omitempty"`
}

func (f *FramesFilter) String() string {
	var parts []string
	if len(f.APIKeys) > 0 {
		names := make([]string, len(f.APIKeys))
		for i, k := range f.APIKeys {
			names[i] = decode.APIName(k)
		}
		parts = append(parts, "API "+strings.Join(names, ", "))
	}
	if len(f.Connections) > 0 {
		ids := make([]string, len(f.Connections))
		for i, c := range f.Connections {
			ids[i] = strconv.Itoa(c)
		}
		word := "connection "
		if len(ids) > 1 {
			word = "connections "
		}
		parts = append(parts, word+strings.Join(ids, ", "))
	}
	if f.Scope != "" {
		parts = append(parts, f.Scope)
	}
	return strings.Join(parts, "; ")
}

// NewFramesSummary takes the figures of a run. Listed is every message
// until the command sets it.
func NewFramesSummary(s *result.Summary) FramesSummary {
	return FramesSummary{
		Packets: s.Capture.Packets, Bytes: s.Capture.Bytes, Connections: s.Connections,
		Requests: s.Requests, Responses: s.Responses, Unmatched: s.Unmatched, Gaps: s.Gaps,
		Resyncs: s.Resyncs, DecodeErrors: s.Malformed + s.Capture.Malformed,
		NotKafka: s.NotKafka, SASLTokens: s.SASLTokens, CutPackets: s.Capture.Cut,
		Listed: s.Requests + s.Responses, Start: s.First, OutsideTime: s.OutsideTime,
	}
}

func (s FramesSummary) String() string {
	line := fmt.Sprintf("%d packets, %d bytes, %d connections, %d requests, %d responses, %d unmatched, %d gaps, %d resyncs, %d decode errors",
		s.Packets, s.Bytes, s.Connections, s.Requests, s.Responses, s.Unmatched, s.Gaps, s.Resyncs, s.DecodeErrors)
	if s.Filter != nil {
		line += fmt.Sprintf("; %d of %d messages listed (%s)", s.Listed, s.Requests+s.Responses, s.Filter)
	}
	if s.OutsideTime > 0 {
		line += fmt.Sprintf("; %s outside --from/--to, dropped before reassembly", plural(s.OutsideTime, "packet", "packets"))
	}
	if s.UnlinkedRequests > 0 {
		line += fmt.Sprintf("; %s written before their response came (more than %s messages waited): no response_frame on them",
			plural(s.UnlinkedRequests, "request", "requests"), commas(int64(s.Hold)))
	}
	return line
}

// FramesWriter writes the records of `kidscope frames` in one format.
type FramesWriter interface {
	Add(r *FrameRecord) error
	// Finish writes what closes the output (the table, the summary).
	Finish(s FramesSummary) error
}

type framesNDJSON struct {
	w      *bufio.Writer
	enc    *json.Encoder
	fields []*frameField // -e: only these; nil: every field
	buf    []byte
}

type ndjsonFrame struct {
	Kind string `json:"kind"`
	*FrameRecord
}

func (f *framesNDJSON) Add(r *FrameRecord) error {
	if f.fields == nil {
		return f.enc.Encode(ndjsonFrame{"frame", r})
	}
	b, err := appendJSONFields(append(f.buf[:0], `{"kind":"frame",`...), r, f.fields)
	if err != nil {
		return err
	}
	f.buf = append(b, '\n')
	_, err = f.w.Write(f.buf)
	return err
}

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
	w      *bufio.Writer
	n      int
	fields []*frameField // -e: only these; nil: every field
	buf    []byte
}

func (f *framesJSON) Add(r *FrameRecord) error {
	if f.n == 0 {
		f.w.WriteString("{\"schema_version\":1,\"frames\":[\n")
	} else {
		f.w.WriteString(",\n")
	}
	f.n++
	var b []byte
	var err error
	if f.fields == nil {
		b, err = json.Marshal(r)
	} else {
		b, err = appendJSONFields(append(f.buf[:0], '{'), r, f.fields)
		f.buf = b
	}
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
