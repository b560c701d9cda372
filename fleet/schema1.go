package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Schema 1 numbered what schema 2 names: value kinds, roles, answer states
// and stream kinds and sides were the rules' numbers when schema 1 was
// made. These tables are those numbers' names, frozen: they are never to
// follow the rules' numbering, which may change, because a record of
// schema 1 means what it meant when it was written. upgradeSchema1 turns
// such a record into its schema 2 form before it is read
// (testdata/schema1.golden holds it to that).
var (
	schema1ValueKinds = []string{
		"", "id", "named-id", "no-id", "non-reserved-id", "non-reserved-id/first-header-v3-request",
		"no-id/first-flexible-request-carried-none", "no-id/already-established", "any-id/header",
		"no-id/header-or-connection", "null-client-id", "client-id", "id/body-as-header", "id/body",
		"no-push/after-terminating-push", "push", "exchanged-id", "new-id", "id-or-zero",
		"id/seen-on-another-connection", "accepted", "error-code", "member-id", "generated-member-id",
		"empty-member-id", "min-api-version", "api-version", "address/where-first-used",
		"id/also-from-address", "id/other-open-connection", "not-kafka",
	}
	schema1Roles        = []string{"", "established", "answer", "request", "assigned", "terminated", "first-seen", "other-connection", "previous"}
	schema1AnswerStates = []string{"", "answered", "no-response", "none-expected", "closed-by-broker"}
	schema1StreamKinds  = []string{"", "lost-bytes", "not-kafka", "missed-start", "unanswered-requests"}
	schema1StreamSides  = []string{"to-broker", "to-client"}
)

// upgradeSchema1 is a record of schema 1 with its numbers replaced by
// their names. A number no table has is an error: schema 1 never wrote
// it.
func upgradeSchema1(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // frame numbers and counts pass through exactly
	var rec map[string]any
	if err := dec.Decode(&rec); err != nil {
		return nil, err
	}
	u := &upgrade{}
	if f, ok := rec["finding"].(map[string]any); ok {
		u.value(f, "expected")
		u.value(f, "seen")
		u.related(f)
		u.name(f, "answer_state", schema1AnswerStates, true)
		// A side was written only with a stream kind, and 0 (to-broker)
		// not at all; schema 2 writes it with a stream kind only.
		if u.name(f, "stream_kind", schema1StreamKinds, false) {
			u.name(f, "stream_side", schema1StreamSides, false)
			if _, ok := f["stream_side"]; !ok {
				f["stream_side"] = schema1StreamSides[0]
			}
		} else {
			delete(f, "stream_side")
		}
	}
	if o, ok := rec["observation"].(map[string]any); ok {
		if hs, ok := o["header_rules"].([]any); ok {
			for _, h := range hs {
				if c, ok := h.(map[string]any); ok {
					u.value(c, "expected")
					u.value(c, "seen")
					u.related(c)
				}
			}
		}
	}
	if u.err != nil {
		return nil, u.err
	}
	return json.Marshal(rec)
}

type upgrade struct{ err error }

// name replaces obj[key], a number, by its name in table, and reports
// whether it names something (not ""); a key schema 1 leaves out is 0.
// required: the key must be there.
func (u *upgrade) name(obj map[string]any, key string, table []string, required bool) bool {
	v, ok := obj[key]
	if !ok {
		if required {
			u.fail(fmt.Errorf("no %s", key))
		}
		v = json.Number("0")
	}
	num, isNum := v.(json.Number)
	i, err := strconv.Atoi(string(num))
	if !isNum || err != nil || i < 0 || i >= len(table) {
		u.fail(fmt.Errorf("%s %v: not a value of schema 1", key, v))
		delete(obj, key)
		return false
	}
	if table[i] == "" {
		delete(obj, key)
		return false
	}
	obj[key] = table[i]
	return true
}

// value upgrades the kind of the value obj[key].
func (u *upgrade) value(obj map[string]any, key string) {
	if v, ok := obj[key].(map[string]any); ok {
		u.name(v, "kind", schema1ValueKinds, true)
	}
}

// related upgrades the roles of obj's related frames.
func (u *upgrade) related(obj map[string]any) {
	rs, _ := obj["related"].([]any)
	for _, r := range rs {
		if m, ok := r.(map[string]any); ok {
			u.name(m, "role", schema1Roles, true)
		}
	}
}

func (u *upgrade) fail(err error) {
	if u.err == nil {
		u.err = err
	}
}
