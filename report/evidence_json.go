package report

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// The typed evidence of findings as JSON writes it: an expected or seen
// value is an object with a kind, the values of that kind and a context;
// related frames carry their role; the broker's answer is a state and
// codes. The words every format shows (valueText) are made from the same
// object, so what people read and what programs read cannot drift.

// evidenceValue is an expected or seen value, typed: its JSON kind, the
// ID where it has one, the fields of its kind in order, and its context.
// What it says in words is its form's (valueForms).
type evidenceValue struct {
	Kind    string
	ID      string // written when idWritten, in the --uuid form
	Context string // "" is null
	fields  []evidenceField
	// named: words name ZERO and ONE (not in JSON).
	named     bool
	idWritten bool
	words     func(*evidenceValue) string
}

// evidenceField is a field of a value's kind: its JSON name and value.
type evidenceField struct {
	name  string
	value any
}

// field returns the value of a field of the kind.
func (e *evidenceValue) field(name string) any {
	for _, f := range e.fields {
		if f.name == name {
			return f.value
		}
	}
	return nil
}

// valueForm is how the report shows one kind of the rules' values: in
// JSON (kind, context, the fields of the kind) and in words, made from
// the JSON value so that what people read and what programs read cannot
// drift. A kind of rules.Value is one row of valueForms; a JSON kind or
// context the schema does not list yet also goes into
// docs/schema/analysis.schema.json (TestSchemaValueKinds says which).
type valueForm struct {
	// kind is the JSON kind; "" for one ID, whose kind is id, zero or one
	// by its value.
	kind string
	ctx  string
	// withID writes the value's ID (always, for kind "").
	withID bool
	// named: the words name ZERO and ONE (an ID of kind "").
	named bool
	// name, when set, is the kind's name on the wire (ValueKindNames),
	// telling it apart from another kind that JSON writes alike but for
	// the value (a null ClientId, an empty member ID) or only in words
	// (ZERO and ONE named).
	name string
	// fields are the JSON fields of the kind, after kind and id.
	fields func(v rules.Value) []evidenceField
	words  func(e *evidenceValue) string
}

// valueForms are the forms of every kind of value the rules make.
var valueForms = map[rules.ValueKind]valueForm{
	rules.ValueID:          {words: idWords},
	rules.ValueIDNamed:     {named: true, name: "named-id", words: idWords},
	rules.ValueNoID:        {kind: "no-id", words: fixed("no ID")},
	rules.ValueNonReserved: {kind: "non-reserved-id", words: fixed("a non-reserved ID")},
	rules.ValueFirstV3ID: {kind: "non-reserved-id", ctx: "first-header-v3-request",
		words: fixed("a non-reserved ID in the first header-v3 request")},
	rules.ValueNoIDFirst: {kind: "no-id", ctx: "first-flexible-request-carried-none",
		words: fixed("no ID (the first flexible-header request carried none)")},
	rules.ValueNoIDRepeated:   {kind: "no-id", ctx: "already-established", words: fixed("no ID (already established)")},
	rules.ValueHeaderID:       {kind: "any-id", ctx: "header", words: fixed("a header instance ID")},
	rules.ValueNoIDAnywhere:   {kind: "no-id", ctx: "header-or-connection", words: fixed("no ID in the header or on the connection")},
	rules.ValueNullClientID:   {kind: "client-id", name: "null-client-id", fields: clientIDField(false), words: clientIDWords},
	rules.ValueClientID:       {kind: "client-id", fields: clientIDField(true), words: clientIDWords},
	rules.ValueHeaderBodyID:   {ctx: "body-as-header", words: func(e *evidenceValue) string { return "body ID " + e.idText() + " (the header's)" }},
	rules.ValueBodyID:         {ctx: "body", named: true, words: func(e *evidenceValue) string { return "body ID " + e.idText() }},
	rules.ValueNoPushAfterEnd: {kind: "no-push", ctx: "after-terminating-push", words: fixed("no push after the terminating one")},
	rules.ValuePushFor:        {kind: "push", withID: true, words: func(e *evidenceValue) string { return "push for " + e.idText() }},
	rules.ValueExchangedID:    {kind: "exchanged-id", words: fixed("an ID a GetTelemetrySubscriptions exchange produced")},
	rules.ValueNewID:          {kind: "new-id", words: fixed("a new client instance ID")},
	rules.ValueEchoOrZero:     {kind: "id-or-zero", withID: true, words: func(e *evidenceValue) string { return e.idText() + " (echoed) or ZERO" }},
	rules.ValueSeenElsewhereID: {ctx: "seen-on-another-connection",
		words: func(e *evidenceValue) string { return e.idText() + " (already seen on another connection)" }},
	rules.ValueAccepted: {kind: "accepted", words: fixed("the request accepted")},
	rules.ValueErrorCode: {kind: "error-code",
		fields: func(v rules.Value) []evidenceField {
			return []evidenceField{{"error_code", v.Code}, {"error_name", decode.ErrorName(v.Code)}}
		},
		words: func(e *evidenceValue) string { return e.field("error_name").(string) }},
	rules.ValueMemberID:          {kind: "member-id", fields: memberIDField(true), words: memberIDWords},
	rules.ValueGeneratedMemberID: {kind: "generated-member-id", words: fixed("a client-generated member ID")},
	rules.ValueEmptyMemberID:     {kind: "member-id", name: "empty-member-id", fields: memberIDField(false), words: memberIDWords},
	rules.ValueJoinGroupV4: {kind: "min-api-version", fields: apiVersionField(decode.KeyJoinGroup, "min_api_version", 4),
		words: func(e *evidenceValue) string {
			return apiVersionWords(e, "min_api_version") + "+ for MEMBER_ID_REQUIRED"
		}},
	rules.ValueJoinGroupVersion: {kind: "api-version", fields: apiVersionField(decode.KeyJoinGroup, "api_version", 0),
		words: func(e *evidenceValue) string { return apiVersionWords(e, "api_version") }},
	rules.ValueOneAddress: {kind: "address", ctx: "where-first-used", fields: addressField,
		words: func(e *evidenceValue) string { return "one client address (" + e.field("address").(string) + ")" }},
	rules.ValueAlsoFrom: {ctx: "also-from-address", fields: addressField,
		words: func(e *evidenceValue) string { return e.idText() + " also from " + e.field("address").(string) }},
	rules.ValueOtherConnection: {ctx: "other-open-connection",
		words: func(e *evidenceValue) string { return e.idText() + " (as its other open connection)" }},
	rules.ValueNotKafka: {kind: "not-kafka",
		fields: func(v rules.Value) []evidenceField { return []evidenceField{{"what", v.Text}} },
		words:  func(e *evidenceValue) string { return e.field("what").(string) }},
}

func fixed(s string) func(*evidenceValue) string { return func(*evidenceValue) string { return s } }

func idWords(e *evidenceValue) string { return e.idText() }

// clientIDField is a ClientId as sent, or null.
func clientIDField(set bool) func(rules.Value) []evidenceField {
	return func(v rules.Value) []evidenceField {
		if !set {
			return []evidenceField{{"client_id", (*string)(nil)}}
		}
		s := v.Text
		return []evidenceField{{"client_id", &s}}
	}
}

func clientIDWords(e *evidenceValue) string {
	if s := e.field("client_id").(*string); s != nil {
		return "ClientId " + quote(*s)
	}
	return "a null ClientId"
}

// memberIDField is a member ID as sent ("" for an empty one).
func memberIDField(set bool) func(rules.Value) []evidenceField {
	return func(v rules.Value) []evidenceField {
		if !set {
			return []evidenceField{{"member_id", ""}}
		}
		return []evidenceField{{"member_id", v.Text}}
	}
}

func memberIDWords(e *evidenceValue) string {
	if m := e.field("member_id").(string); m != "" {
		return "member ID " + quote(m)
	}
	return "an empty member ID"
}

// apiVersionField is a version of one API: v's (version "api_version"),
// or a fixed least one (version "min_api_version").
func apiVersionField(key int16, version string, least int16) func(rules.Value) []evidenceField {
	return func(v rules.Value) []evidenceField {
		ver := v.Version
		if version == "min_api_version" {
			ver = least
		}
		return []evidenceField{{"api_key", key}, {"api_name", decode.APIName(key)}, {version, ver}}
	}
}

func apiVersionWords(e *evidenceValue, version string) string {
	return e.field("api_name").(string) + " v" + strconv.Itoa(int(e.field(version).(int16)))
}

func addressField(v rules.Value) []evidenceField {
	return []evidenceField{{"address", v.Addr.String()}}
}

// newEvidenceValue types the rules' value v, its IDs written by id; nil
// for none.
func newEvidenceValue(v rules.Value, id func(kafka.UUID) string) *evidenceValue {
	f, ok := valueForms[v.Kind]
	if !ok {
		return nil
	}
	e := &evidenceValue{Kind: f.kind, Context: f.ctx, named: f.named, words: f.words}
	if f.kind == "" {
		e.Kind = "id"
		switch {
		case v.ID.IsZero():
			e.Kind = "zero"
		case v.ID.IsOne():
			e.Kind = "one"
		}
	}
	if f.kind == "" || f.withID {
		e.ID, e.idWritten = id(v.ID), true
	}
	if f.fields != nil {
		e.fields = f.fields(v)
	}
	return e
}

// idText is the value's ID in words: ZERO and ONE by name where the form
// names them.
func (e *evidenceValue) idText() string {
	if e.named {
		switch e.Kind {
		case "zero":
			return "ZERO"
		case "one":
			return "ONE"
		}
	}
	return e.ID
}

// text is the value in words, as the table, markdown, CSV and the live
// text lines show it; capture-derived text is as sent (each format
// escapes the whole).
func (e *evidenceValue) text() string {
	if e == nil {
		return ""
	}
	return e.words(e)
}

// MarshalJSON writes kind first, then the ID, the fields of the kind, and
// context.
func (e *evidenceValue) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	var err error
	add := func(name string, v any) {
		if err != nil {
			return
		}
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		if err = enc.Encode(v); err == nil {
			b.Truncate(b.Len() - 1) // Encode's newline
		}
	}
	add("kind", e.Kind)
	if e.idWritten {
		add("id", e.ID)
	}
	for _, f := range e.fields {
		add(f.name, f.value)
	}
	add("context", optText(e.Context))
	if err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// relatedRoles name the roles of related frames (JSON "role").
var relatedRoles = map[rules.Role]string{
	rules.RoleEstablished:     "established",
	rules.RoleAnswer:          "answer",
	rules.RoleRequest:         "request",
	rules.RoleAssigned:        "assigned",
	rules.RoleTerminated:      "terminated",
	rules.RoleFirstSeen:       "first-seen",
	rules.RoleOtherConnection: "other-connection",
	rules.RolePrevious:        "previous",
}

func roleName(r rules.Role) string {
	if s, ok := relatedRoles[r]; ok {
		return s
	}
	return "related"
}

// answerJSON is what became of the request a finding concerns.
type answerJSON struct {
	// State: answered, no-response, none-expected (acks = 0),
	// closed-by-broker.
	State      string          `json:"state"`
	ErrorCodes []errorCodeJSON `json:"error_codes"`
}

type errorCodeJSON struct {
	Code int16  `json:"code"`
	Name string `json:"name"`
}

// newAnswerJSON is nil when the finding concerns no request.
func newAnswerJSON(a rules.Answer) *answerJSON {
	j := &answerJSON{ErrorCodes: []errorCodeJSON{}}
	switch a.State {
	case rules.Answered:
		j.State = "answered"
		for _, c := range a.Codes {
			j.ErrorCodes = append(j.ErrorCodes, errorCodeJSON{Code: c, Name: decode.ErrorName(c)})
		}
	case rules.NoResponse:
		j.State = "no-response"
	case rules.NoResponseByDesign:
		j.State = "none-expected"
	case rules.ClosedByBroker:
		j.State = "closed-by-broker"
	default:
		return nil
	}
	return j
}
