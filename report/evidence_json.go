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

// Kinds of evidence values (JSON "kind").
const (
	kindID              = "id"                  // one ID (id), neither ZERO nor ONE
	kindZero            = "zero"                // the ZERO ID (id is its text form)
	kindOne             = "one"                 // the ONE ID (id is its text form)
	kindNoID            = "no-id"               // no ID at all
	kindNonReserved     = "non-reserved-id"     // any ID but ZERO and ONE
	kindAnyID           = "any-id"              // some ID
	kindNewID           = "new-id"              // a newly assigned ID
	kindExchangedID     = "exchanged-id"        // an ID a GetTelemetrySubscriptions exchange produced
	kindIDOrZero        = "id-or-zero"          // id echoed, or ZERO
	kindPush            = "push"                // a PushTelemetry for id
	kindNoPush          = "no-push"             // no PushTelemetry
	kindClientID        = "client-id"           // a ClientId (client_id, null for a null one)
	kindMemberID        = "member-id"           // a member ID (member_id, "" for an empty one)
	kindGeneratedMember = "generated-member-id" // a member ID the client generated
	kindAccepted        = "accepted"            // the request accepted
	kindErrorCode       = "error-code"          // an error code (error_code, error_name)
	kindAPIVersion      = "api-version"         // a request of one API version
	kindMinAPIVersion   = "min-api-version"     // a request of this API version or later
	kindAddress         = "address"             // a client IP address
	kindNotKafka        = "not-kafka"           // what the bytes are instead of Kafka (what)
)

// Contexts of evidence values (JSON "context"): where the value is, or
// why it is expected.
const (
	ctxFirstV3      = "first-header-v3-request"             // in the connection's first header-v3 request
	ctxFirstNone    = "first-flexible-request-carried-none" // as the first flexible-header request carried none
	ctxEstablished  = "already-established"                 // as the connection already established it
	ctxHeader       = "header"                              // in the request header
	ctxNowhere      = "header-or-connection"                // neither in the header nor established on the connection
	ctxBodyAsHeader = "body-as-header"                      // in the v0 body, the header's ID
	ctxBody         = "body"                                // in the v0 body
	ctxAfterEnd     = "after-terminating-push"              // after the terminating push
	ctxElsewhere    = "seen-on-another-connection"          // already seen on another connection
	ctxAlsoFrom     = "also-from-address"                   // also used from address
	ctxFirstUsed    = "where-first-used"                    // the address the ID was first used from
	ctxOtherConn    = "other-open-connection"               // as the client's other open connection carries
)

// evidenceValue is an expected or seen value, typed. Which fields are
// written depends on Kind (MarshalJSON).
type evidenceValue struct {
	Kind      string
	ID        string  // id kinds, push, id-or-zero: in the --uuid form
	ClientID  *string // client-id: as sent (nil: null)
	MemberID  string  // member-id: as sent
	Code      int16   // error-code
	APIKey    int16   // api-version, min-api-version
	Version   int16   // api-version, min-api-version
	Address   string  // address, and id kinds in context also-from-address
	What      string  // not-kafka
	Context   string  // "" is null
	named     bool    // words: ZERO and ONE by name (not in JSON)
	hasAddr   bool
	idWritten bool
}

// idValue is the value of an ID of kind id, zero or one.
func idValue(u kafka.UUID, id func(kafka.UUID) string, named bool, ctx string) *evidenceValue {
	kind := kindID
	switch {
	case u.IsZero():
		kind = kindZero
	case u.IsOne():
		kind = kindOne
	}
	return &evidenceValue{Kind: kind, ID: id(u), named: named, Context: ctx, idWritten: true}
}

// newEvidenceValue types the rules' value v, its IDs written by id; nil
// for none. Its kind and context are valueKinds'.
func newEvidenceValue(v rules.Value, id func(kafka.UUID) string) *evidenceValue {
	vk, ok := valueKinds[v.Kind]
	if !ok {
		return nil
	}
	switch vk.kind {
	case kindID:
		e := idValue(v.ID, id, vk.named, vk.ctx)
		if v.Kind == rules.ValueAlsoFrom {
			e.Address, e.hasAddr = v.Addr.String(), true
		}
		return e
	case kindPush, kindIDOrZero:
		return &evidenceValue{Kind: vk.kind, ID: id(v.ID), Context: vk.ctx, idWritten: true}
	}
	e := &evidenceValue{Kind: vk.kind, Context: vk.ctx}
	switch v.Kind {
	case rules.ValueClientID:
		s := v.Text
		e.ClientID = &s
	case rules.ValueErrorCode:
		e.Code = v.Code
	case rules.ValueMemberID:
		e.MemberID = v.Text
	case rules.ValueJoinGroupV4:
		e.APIKey, e.Version = decode.KeyJoinGroup, 4
	case rules.ValueJoinGroupVersion:
		e.APIKey, e.Version = decode.KeyJoinGroup, v.Version
	case rules.ValueOneAddress:
		e.Address, e.hasAddr = v.Addr.String(), true
	case rules.ValueNotKafka:
		e.What = v.Text
	}
	return e
}

// text is the value in words, as the table, markdown, CSV and the live
// text lines show it; capture-derived text is as sent (each format
// escapes the whole).
func (e *evidenceValue) text() string {
	if e == nil {
		return ""
	}
	idText := e.ID
	if e.named {
		switch e.Kind {
		case kindZero:
			idText = "ZERO"
		case kindOne:
			idText = "ONE"
		}
	}
	switch e.Kind {
	case kindID, kindZero, kindOne:
		switch e.Context {
		case ctxBodyAsHeader:
			return "body ID " + idText + " (the header's)"
		case ctxBody:
			return "body ID " + idText
		case ctxElsewhere:
			return idText + " (already seen on another connection)"
		case ctxAlsoFrom:
			return idText + " also from " + e.Address
		case ctxOtherConn:
			return idText + " (as its other open connection)"
		}
		return idText
	case kindNoID:
		switch e.Context {
		case ctxFirstNone:
			return "no ID (the first flexible-header request carried none)"
		case ctxEstablished:
			return "no ID (already established)"
		case ctxNowhere:
			return "no ID in the header or on the connection"
		}
		return "no ID"
	case kindNonReserved:
		if e.Context == ctxFirstV3 {
			return "a non-reserved ID in the first header-v3 request"
		}
		return "a non-reserved ID"
	case kindAnyID:
		return "a header instance ID"
	case kindClientID:
		if e.ClientID == nil {
			return "a null ClientId"
		}
		return "ClientId " + quote(*e.ClientID)
	case kindNoPush:
		return "no push after the terminating one"
	case kindPush:
		return "push for " + idText
	case kindExchangedID:
		return "an ID a GetTelemetrySubscriptions exchange produced"
	case kindNewID:
		return "a new client instance ID"
	case kindIDOrZero:
		return idText + " (echoed) or ZERO"
	case kindAccepted:
		return "the request accepted"
	case kindErrorCode:
		return decode.ErrorName(e.Code)
	case kindMemberID:
		if e.MemberID == "" {
			return "an empty member ID"
		}
		return "member ID " + quote(e.MemberID)
	case kindGeneratedMember:
		return "a client-generated member ID"
	case kindMinAPIVersion:
		return decode.APIName(e.APIKey) + " v" + strconv.Itoa(int(e.Version)) + "+ for MEMBER_ID_REQUIRED"
	case kindAPIVersion:
		return decode.APIName(e.APIKey) + " v" + strconv.Itoa(int(e.Version))
	case kindAddress:
		return "one client address (" + e.Address + ")"
	case kindNotKafka:
		return e.What
	}
	return ""
}

// MarshalJSON writes kind first, then the fields of the kind, then
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
	switch e.Kind {
	case kindClientID:
		add("client_id", e.ClientID)
	case kindMemberID:
		add("member_id", e.MemberID)
	case kindErrorCode:
		add("error_code", e.Code)
		add("error_name", decode.ErrorName(e.Code))
	case kindAPIVersion, kindMinAPIVersion:
		add("api_key", e.APIKey)
		add("api_name", decode.APIName(e.APIKey))
		if e.Kind == kindAPIVersion {
			add("api_version", e.Version)
		} else {
			add("min_api_version", e.Version)
		}
	case kindNotKafka:
		add("what", e.What)
	}
	if e.hasAddr {
		add("address", e.Address)
	}
	add("context", optText(e.Context))
	if err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func roleName(r rules.Role) string {
	if s, ok := RoleNames.Name(r); ok {
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
	state, ok := AnswerStateNames.Name(a.State)
	if !ok {
		return nil
	}
	j := &answerJSON{State: state, ErrorCodes: []errorCodeJSON{}}
	if a.State == rules.Answered {
		for _, c := range a.Codes {
			j.ErrorCodes = append(j.ErrorCodes, errorCodeJSON{Code: c, Name: decode.ErrorName(c)})
		}
	}
	return j
}
