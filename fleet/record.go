package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

// SchemaVersion is the version of the records agents publish. A fleet
// skips, and counts, records of a later version: a change that an older
// fleet cannot read raises it. Schema 2 names what schema 1 numbered
// (value kinds, roles, answer states, streams: report's names); a fleet
// reads both (schema1.go).
const SchemaVersion = 2

// Record types.
const (
	TypeAgent       = "agent"       // who publishes, and its counts so far
	TypeObservation = "observation" // an input of the rules across connections
	TypeFinding     = "finding"     // a finding of the agent's own engine
	// An agent run's report, when it stops (agentreport.go).
	TypeConnection = "connection" // a row of its connections table
	TypeInstance   = "instance"   // a client instance ID it saw
	TypeBroker     = "broker"     // a broker it saw, and what its answers said
	TypeSummary    = "summary"    // its totals, after the rows
)

// Record is one Kafka record's value, as JSON: an agent's description, an
// observation or a finding, each stamped with the agent, its run and the
// record's place among the run's records.
type Record struct {
	Schema int    `json:"schema"`
	Type   string `json:"type"`
	Agent  string `json:"agent"`
	// Run tells two runs of one agent apart: frame numbers start again
	// with each.
	Run string `json:"run"`
	// Seq numbers the run's records from 1, in the order they were made.
	Seq         uint64           `json:"seq"`
	Hello       *Hello           `json:"hello,omitempty"`
	Observation *WireObservation `json:"observation,omitempty"`
	Finding     *WireFinding     `json:"finding,omitempty"`
	Connection  *WireConnection  `json:"connection,omitempty"`
	Instance    *WireInstance    `json:"instance,omitempty"`
	Broker      *WireBroker      `json:"broker,omitempty"`
	Summary     *WireSummary     `json:"summary,omitempty"`
}

// Hello describes an agent and counts what it published: it is sent
// first, then every few seconds and when the agent stops.
type Hello struct {
	Time      time.Time `json:"time"`
	Source    string    `json:"source"` // the interface, or the capture files
	Version   string    `json:"kidscope_version"`
	Published int64     `json:"published"` // records handed to the producer before this one
	Dropped   int64     `json:"dropped"`   // records dropped: buffer full, or not delivered
	Stopping  bool      `json:"stopping,omitempty"`
}

// Ref is a frame of an agent: the file it wrote (or the interface it
// captured on, when it wrote none), the frame number and its time.
type Ref struct {
	File  string    `json:"file"`
	Frame int64     `json:"frame"`
	Time  time.Time `json:"time"`
}

// WireConn is a connection as an agent numbered it.
type WireConn struct {
	ID        int    `json:"id"`
	Client    string `json:"client"`
	Broker    string `json:"broker"`
	MidStream bool   `json:"mid_stream,omitempty"`
	First     Ref    `json:"first"`
}

// WireObservation is a rules.Observation.
type WireObservation struct {
	Kind     string      `json:"kind"` // open, request, response, close
	Conn     WireConn    `json:"conn"`
	Instance string      `json:"instance,omitempty"` // the connection's first header ID
	At       Ref         `json:"at"`
	Message  *WireMsg    `json:"message,omitempty"`
	Header   []WireCand  `json:"header_rules,omitempty"`
	Close    *WireClosed `json:"close,omitempty"`
	// AfterGap: bytes of the connection were lost before it.
	AfterGap bool `json:"after_gap,omitempty"`
}

// WireMsg is what the rules read of a request or response: its header, the
// body fields of the telemetry and group APIs (IDs, never metric payloads)
// and a response's error codes.
type WireMsg struct {
	Side          string  `json:"side"` // request, response
	APIKey        int16   `json:"api_key"`
	APIVersion    int16   `json:"api_version"`
	HeaderVersion int     `json:"header_version"`
	CorrelationID int32   `json:"correlation_id"`
	ClientID      *string `json:"client_id"` // null: a null ClientId
	Tag0          string  `json:"instance_id,omitempty"`
	NoResponse    bool    `json:"no_response,omitempty"`
	// Responses.
	RequestAt  *Ref      `json:"request_at,omitempty"`
	Matched    bool      `json:"matched,omitempty"`
	ErrorCode  *int16    `json:"error_code,omitempty"`
	Nested     []int16   `json:"nested_codes,omitempty"`
	NestedRead bool      `json:"nested_read,omitempty"`
	Body       *WireBody `json:"body,omitempty"`
}

// WireBody holds the body fields the rules read.
type WireBody struct {
	InstanceID      string  `json:"client_instance_id,omitempty"`
	SubscriptionID  int32   `json:"subscription_id,omitempty"`
	Terminating     bool    `json:"terminating,omitempty"`
	GroupID         string  `json:"group_id,omitempty"`
	MemberID        string  `json:"member_id,omitempty"`
	GroupInstanceID *string `json:"group_instance_id,omitempty"`
	MemberEpoch     int32   `json:"member_epoch,omitempty"`
	GenerationID    int32   `json:"generation_id,omitempty"`
}

// WireClosed is how a connection ended.
type WireClosed struct {
	Seen     bool   `json:"seen"`
	Reset    bool   `json:"reset,omitempty"`
	ByBroker bool   `json:"by_broker,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	NotKafka string `json:"not_kafka,omitempty"`
	TLS      string `json:"tls,omitempty"`
	// Unanswered requests, for the connections table.
	Unanswered int64 `json:"unanswered,omitempty"`
}

// WireCand is a candidate finding (a header rule of a request).
type WireCand struct {
	Rule     string        `json:"rule"`
	Expected WireValue     `json:"expected"`
	Seen     WireValue     `json:"seen"`
	Related  []WireRelated `json:"related,omitempty"`
}

// WireValue is a rules.Value. Kind is a name of report.ValueKindNames,
// "" for none.
type WireValue struct {
	Kind    string `json:"kind,omitempty"`
	ID      string `json:"id,omitempty"`
	Text    string `json:"text,omitempty"`
	Addr    string `json:"addr,omitempty"`
	Version int16  `json:"version,omitempty"`
	Code    int16  `json:"code,omitempty"`
}

// WireRelated is a related frame with its role (report.RoleNames).
type WireRelated struct {
	Ref  Ref    `json:"ref"`
	Role string `json:"role"`
}

// WireFinding is a rules.Finding of an agent.
type WireFinding struct {
	Rule          string        `json:"rule"`
	At            Ref           `json:"at"`
	Related       []WireRelated `json:"related,omitempty"`
	Conn          WireConn      `json:"conn"`
	APIKey        int16         `json:"api_key"`
	APIVersion    int16         `json:"api_version"`
	HasAPI        bool          `json:"has_api,omitempty"`
	CorrelationID int32         `json:"correlation_id"`
	Expected      WireValue     `json:"expected"`
	Seen          WireValue     `json:"seen"`
	// AnswerState is a name of report.AnswerStateNames, "" for a finding
	// about no request.
	AnswerState string  `json:"answer_state,omitempty"`
	AnswerCodes []int16 `json:"answer_codes,omitempty"`
	// StreamKind is a name of report.StreamKindNames, "" for a finding
	// about a request; StreamSide the side of its bytes (kafka.Direction's
	// name).
	StreamKind string   `json:"stream_kind,omitempty"`
	StreamSide string   `json:"stream_side,omitempty"`
	Resynced   bool     `json:"resynced,omitempty"`
	Skipped    int64    `json:"skipped,omitempty"`
	AfterGap   bool     `json:"after_gap,omitempty"`
	Also       []string `json:"also,omitempty"`
	Count      int64    `json:"count,omitempty"`
}

// Files names an agent's frames: the name of file index i of its run.
type Files func(i int) string

// refOf is a frame in the wire form.
func refOf(f kafka.FrameRef, files Files) Ref {
	return Ref{File: files(f.File), Frame: f.Frame, Time: f.Time.UTC()}
}

func idText(u kafka.UUID) string { return u.String() }

func connOf(c kafka.Conn, files Files) WireConn {
	return WireConn{ID: c.ID, Client: c.Client.String(), Broker: c.Broker.String(), MidStream: c.MidStream[kafka.ToBroker], First: refOf(c.First, files)}
}

// nameOf is v's name in names, "" for none; a value without a name (a
// kind added to the rules, not to report's table) gets one that no
// reader knows, so that a fleet refuses the record rather than misread it.
func nameOf[T comparable](names report.Names[T], v, none T) string {
	if v == none {
		return ""
	}
	if s, ok := names.Name(v); ok {
		return s
	}
	return fmt.Sprintf("unnamed-%v", v)
}

func valueOf(v rules.Value) WireValue {
	w := WireValue{Kind: nameOf(report.ValueKindNames, v.Kind, rules.ValueNone), Text: v.Text, Version: v.Version, Code: v.Code}
	if v.ID != (kafka.UUID{}) {
		w.ID = idText(v.ID)
	}
	if v.Addr.IsValid() {
		w.Addr = v.Addr.String()
	}
	return w
}

func relatedOf(rs []rules.Related, files Files) []WireRelated {
	var out []WireRelated
	for _, r := range rs {
		out = append(out, WireRelated{Ref: refOf(r.Frame, files), Role: nameOf(report.RoleNames, r.Role, 0)})
	}
	return out
}

// EncodeObservation is an observation in the wire form.
func EncodeObservation(o *rules.Observation, files Files) *WireObservation {
	w := &WireObservation{Conn: connOf(o.Conn, files), At: refOf(o.At(), files), AfterGap: o.AfterGap}
	if o.HasInstance {
		w.Instance = idText(o.Instance)
	}
	switch o.Kind {
	case rules.ObservedOpen:
		w.Kind = "open"
	case rules.ObservedRequest, rules.ObservedResponse:
		w.Kind = "request"
		if o.Kind == rules.ObservedResponse {
			w.Kind = "response"
		}
		w.Message = msgOf(&o.Event, files)
		for _, c := range o.Header {
			w.Header = append(w.Header, WireCand{Rule: c.Rule, Expected: valueOf(c.Expected), Seen: valueOf(c.Seen), Related: relatedOf(c.Related, files)})
		}
	case rules.ObservedClose:
		w.Kind = "close"
		ci := &o.Close
		w.Close = &WireClosed{Seen: ci.Seen, Reset: ci.Reset, ByBroker: ci.By == kafka.ToClient, ClientID: ci.ClientID,
			NotKafka: ci.NotKafka, TLS: ci.TLS, Unanswered: ci.Counters.Unanswered}
	}
	return w
}

func msgOf(ev *decode.Event, files Files) *WireMsg {
	m := &ev.Msg
	h := &m.Request
	w := &WireMsg{Side: ev.Side.Carries(), APIKey: h.APIKey, APIVersion: h.APIVersion, HeaderVersion: h.HeaderVersion,
		CorrelationID: h.CorrelationID, NoResponse: m.NoResponse}
	if !h.ClientIDNull {
		id := h.ClientID
		w.ClientID = &id
	}
	if h.HasInstanceID {
		w.Tag0 = idText(h.InstanceID)
	}
	if ev.Kind == decode.EventResponse {
		r := refOf(m.RequestAt, files)
		w.RequestAt, w.Matched, w.NestedRead = &r, m.Matched, m.NestedRead
		w.CorrelationID = m.Response.CorrelationID
		if m.HasErrorCode {
			c := m.ErrorCode
			w.ErrorCode = &c
		}
		w.Nested = slices.Clone(m.Nested) // the event's, which the pipeline reuses; encoded later
	}
	if m.HasBody {
		b := &m.Body
		w.Body = &WireBody{SubscriptionID: b.SubscriptionID, Terminating: b.Terminating, GroupID: b.GroupID, MemberID: b.MemberID,
			GroupInstanceID: b.GroupInstanceID, MemberEpoch: b.MemberEpoch, GenerationID: b.GenerationID}
		if b.HasInstanceID {
			w.Body.InstanceID = idText(b.InstanceID)
		}
	}
	return w
}

// EncodeFinding is a finding in the wire form.
func EncodeFinding(f *rules.Finding, conn kafka.Conn, files Files) *WireFinding {
	w := &WireFinding{Rule: f.Rule, At: refOf(f.At, files), Related: relatedOf(f.Related, files), Conn: connOf(conn, files),
		APIKey: f.APIKey, APIVersion: f.APIVersion, HasAPI: f.HasAPI, CorrelationID: f.CorrelationID,
		Expected: valueOf(f.Expected), Seen: valueOf(f.Seen), AnswerState: nameOf(report.AnswerStateNames, f.Answer.State, rules.NotAnswerable),
		AnswerCodes: slices.Clone(f.Answer.Codes), StreamKind: nameOf(report.StreamKindNames, f.Stream.Kind, rules.AboutRequest),
		Resynced: f.Stream.Resynced, Skipped: f.Stream.Skipped, AfterGap: f.AfterGap, Also: slices.Clone(f.Also), Count: f.Count}
	if f.Stream.Kind != rules.AboutRequest {
		w.StreamSide = f.Stream.Side.String()
	}
	return w
}

// ErrFutureSchema is the error of a record whose schema is newer than this
// fleet reads.
var ErrFutureSchema = errors.New("a later schema than this kidscope reads")

// maxRecord bounds the record a fleet decodes.
const maxRecord = 1 << 20

// Decode parses a record's value. Its error says why the record cannot be
// read (it is counted and skipped).
func Decode(b []byte) (*Record, error) {
	if len(b) > maxRecord {
		return nil, fmt.Errorf("record of %d bytes, over %d", len(b), maxRecord)
	}
	// The schema first: what follows it depends on it.
	var head struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("not a kidscope record: %w", err)
	}
	if head.Schema > SchemaVersion {
		return nil, fmt.Errorf("schema %d: %w", head.Schema, ErrFutureSchema)
	}
	if head.Schema == 1 {
		up, err := upgradeSchema1(b)
		if err != nil {
			return nil, fmt.Errorf("not a kidscope record of schema 1: %w", err)
		}
		b = up
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not a kidscope record: %w", err)
	}
	switch {
	case r.Schema < 1:
		return nil, errors.New("not a kidscope record: no schema")
	case r.Agent == "" || r.Run == "":
		return nil, errors.New("a record without its agent or run")
	}
	switch r.Type {
	case TypeAgent:
		if r.Hello == nil {
			return nil, errors.New("an agent record without its description")
		}
	case TypeObservation:
		if r.Observation == nil {
			return nil, errors.New("an observation record without its observation")
		}
	case TypeFinding:
		if r.Finding == nil {
			return nil, errors.New("a finding record without its finding")
		}
	case TypeConnection, TypeInstance, TypeBroker, TypeSummary:
		if r.Connection == nil && r.Type == TypeConnection || r.Instance == nil && r.Type == TypeInstance ||
			r.Broker == nil && r.Type == TypeBroker || r.Summary == nil && r.Type == TypeSummary {
			return nil, fmt.Errorf("a %s record without its %s", r.Type, r.Type)
		}
	default:
		return nil, fmt.Errorf("record type %q: %w", r.Type, ErrFutureSchema)
	}
	return &r, nil
}

// decoder turns wire values back into the rules' values, numbering files
// and connections as the fleet does.
type decoder struct {
	file func(name string) int
	err  error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) ref(r Ref) kafka.FrameRef {
	return kafka.FrameRef{File: d.file(r.File), Frame: r.Frame, Time: r.Time}
}

func (d *decoder) id(s string) kafka.UUID {
	u, err := kafka.ParseUUID(s)
	if err != nil {
		d.fail(err)
	}
	return u
}

func (d *decoder) addrPort(s string) netip.AddrPort {
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		d.fail(fmt.Errorf("address %q: %w", s, err))
	}
	return a
}

func (d *decoder) conn(w WireConn, id int) kafka.Conn {
	c := kafka.Conn{ID: id, Endpoints: kafka.Endpoints{Client: d.addrPort(w.Client), Broker: d.addrPort(w.Broker)}, First: d.ref(w.First)}
	c.MidStream[kafka.ToBroker] = w.MidStream
	return c
}

// named is the value named s in names, none for "". A name this kidscope
// does not know is of a later schema: the record is refused, not misread.
func named[T comparable](d *decoder, names report.Names[T], what, s string, none T) T {
	if s == "" {
		return none
	}
	v, ok := names.Value(s)
	if !ok {
		d.fail(fmt.Errorf("%s %q: %w", what, s, ErrFutureSchema))
	}
	return v
}

func (d *decoder) value(w WireValue) rules.Value {
	v := rules.Value{Kind: named(d, report.ValueKindNames, "value kind", w.Kind, rules.ValueNone), Text: w.Text, Version: w.Version, Code: w.Code}
	if w.ID != "" {
		v.ID = d.id(w.ID)
	}
	if w.Addr != "" {
		a, err := netip.ParseAddr(w.Addr)
		if err != nil {
			d.fail(fmt.Errorf("address %q: %w", w.Addr, err))
		}
		v.Addr = a
	}
	return v
}

func (d *decoder) related(ws []WireRelated) []rules.Related {
	var out []rules.Related
	for _, w := range ws {
		if w.Role == "" {
			d.fail(errors.New("a related frame without its role"))
		}
		out = append(out, rules.Related{Frame: d.ref(w.Ref), Role: named(d, report.RoleNames, "role", w.Role, 0)})
	}
	return out
}

// observation is a wire observation as the replaying engine takes it, on
// the fleet's connection id.
func (d *decoder) observation(w *WireObservation, id int) rules.Observation {
	o := rules.Observation{Conn: d.conn(w.Conn, id), AfterGap: w.AfterGap}
	if w.Instance != "" {
		o.Instance, o.HasInstance = d.id(w.Instance), true
	}
	switch w.Kind {
	case "open":
		o.Kind = rules.ObservedOpen
	case "request", "response":
		o.Kind = rules.ObservedRequest
		if w.Kind == "response" {
			o.Kind = rules.ObservedResponse
		}
		if w.Message == nil {
			d.fail(errors.New("a message observation without its message"))
			return o
		}
		o.Event = d.event(w.Message, o.Kind == rules.ObservedResponse, d.ref(w.At))
		for _, c := range w.Header {
			o.Header = append(o.Header, rules.Candidate{Rule: c.Rule, Expected: d.value(c.Expected), Seen: d.value(c.Seen), Related: d.related(c.Related)})
		}
	case "close":
		o.Kind = rules.ObservedClose
		if w.Close == nil {
			d.fail(errors.New("a close observation without how it closed"))
			return o
		}
		c := w.Close
		o.Close.Close = kafka.Close{Seen: c.Seen, Reset: c.Reset, At: d.ref(w.At)}
		if c.ByBroker {
			o.Close.By = kafka.ToClient
		}
		o.Close.ClientID, o.Close.NotKafka, o.Close.TLS = c.ClientID, c.NotKafka, c.TLS
		o.Close.Counters.Unanswered = c.Unanswered
	default:
		d.fail(fmt.Errorf("observation kind %q: %w", w.Kind, ErrFutureSchema))
	}
	return o
}

func (d *decoder) event(w *WireMsg, response bool, at kafka.FrameRef) decode.Event {
	ev := decode.Event{Kind: decode.EventRequest, Side: kafka.ToBroker, At: at}
	m := &ev.Msg
	h := &m.Request
	h.APIKey, h.APIVersion, h.HeaderVersion, h.CorrelationID, h.Known = w.APIKey, w.APIVersion, w.HeaderVersion, w.CorrelationID, true
	if w.ClientID != nil {
		h.ClientID = *w.ClientID
	} else {
		h.ClientIDNull = true
	}
	if w.Tag0 != "" {
		h.InstanceID, h.HasInstanceID = d.id(w.Tag0), true
	}
	m.NoResponse = w.NoResponse
	if response {
		ev.Kind, ev.Side = decode.EventResponse, kafka.ToClient
		m.Response.CorrelationID, m.Matched, m.NestedRead, m.Nested = w.CorrelationID, w.Matched, w.NestedRead, w.Nested
		if w.RequestAt != nil {
			m.RequestAt = d.ref(*w.RequestAt)
		}
		if w.ErrorCode != nil {
			m.ErrorCode, m.HasErrorCode = *w.ErrorCode, true
		}
	}
	if b := w.Body; b != nil {
		m.HasBody = true
		m.Body = decode.Body{SubscriptionID: b.SubscriptionID, Terminating: b.Terminating, GroupID: b.GroupID, MemberID: b.MemberID,
			GroupInstanceID: b.GroupInstanceID, MemberEpoch: b.MemberEpoch, GenerationID: b.GenerationID}
		if b.InstanceID != "" {
			m.Body.InstanceID, m.Body.HasInstanceID = d.id(b.InstanceID), true
		}
	}
	return ev
}

// side is a stream's side by kafka.Direction's name; "" (a finding about
// a request) is the zero Direction, as the engine leaves it.
func (d *decoder) side(s string) kafka.Direction {
	switch s {
	case "", kafka.ToBroker.String():
		return kafka.ToBroker
	case kafka.ToClient.String():
		return kafka.ToClient
	}
	d.fail(fmt.Errorf("stream side %q: %w", s, ErrFutureSchema))
	return kafka.ToBroker
}

// finding is an agent's finding on the fleet's connection.
func (d *decoder) finding(w *WireFinding, conn kafka.Conn) rules.Finding {
	f := rules.Finding{Rule: w.Rule, At: d.ref(w.At), Related: d.related(w.Related), Conn: conn.Endpoints, ConnID: conn.ID,
		APIKey: w.APIKey, APIVersion: w.APIVersion, HasAPI: w.HasAPI, CorrelationID: w.CorrelationID,
		Expected: d.value(w.Expected), Seen: d.value(w.Seen),
		Answer: rules.Answer{State: named(d, report.AnswerStateNames, "answer state", w.AnswerState, rules.NotAnswerable), Codes: w.AnswerCodes},
		Stream: rules.Stream{Kind: named(d, report.StreamKindNames, "stream kind", w.StreamKind, rules.AboutRequest), Side: d.side(w.StreamSide),
			Resynced: w.Resynced, Skipped: w.Skipped},
		AfterGap: w.AfterGap, Also: w.Also, Count: w.Count}
	r, ok := rules.Lookup(w.Rule)
	if !ok {
		d.fail(fmt.Errorf("rule %q: %w", w.Rule, ErrFutureSchema))
	}
	f.Severity = r.Severity
	return f
}
