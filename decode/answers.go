package decode

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/kidscope/kidscope/kafka"
)

//go:generate go run ../internal/generrors -o answers_gen.go

// answerLayout says where one API's responses keep their top-level
// ErrorCode, by version: the byte offset in the body where every field
// before it has a fixed size, or one of the top* values below.
type answerLayout struct {
	name       string
	maxVersion int16
	top        []int8
	nested     []uint8 // how many nested code fields each version has
}

const (
	topNotFixed   = -1 // a top-level code that only a full decode finds
	topNone       = -2 // the version has no top-level code
	topUnreadable = -3 // kmsg cannot read this version
)

// topAt returns where the top-level code of key's version sits: an offset
// (≥ 0) or one of the top* values. Keys and versions kmsg does not know
// are topUnreadable.
func topAt(key, version int16) int {
	if key < 0 || int(key) >= len(answerLayouts) || version < 0 {
		return topUnreadable
	}
	l := answerLayouts[key]
	if int(version) >= len(l.top) {
		return topBeyondKmsg(key, version)
	}
	return int(l.top[version])
}

// topBeyondKmsg places the top-level code of the versions newer than kmsg
// whose layout is known. GetTelemetrySubscriptions and PushTelemetry v1
// (KIP-1313) are their v0 bodies without ClientInstanceId: the code still
// follows ThrottleTimeMs, and nothing is nested.
func topBeyondKmsg(key, version int16) int {
	if (key == KeyGetTelemetrySubscriptions || key == KeyPushTelemetry) && version == 1 {
		return 4
	}
	return topUnreadable
}

// smallAnswer is the largest response frame whose nested codes are read
// even when nothing asks for them. Only versions without a top-level code
// at a fixed offset are decoded: elsewhere that code speaks for the answer.
const smallAnswer = 1024

// hasNested reports whether the version has nested code fields.
func hasNested(key, version int16) bool {
	if key < 0 || int(key) >= len(answerLayouts) || version < 0 || int(version) >= len(answerLayouts[key].nested) {
		return false
	}
	return answerLayouts[key].nested[version] > 0
}

// Answer holds the error codes of one response, read where its API and
// version keep them.
type Answer struct {
	// HasErrorCode says the version has a top-level ErrorCode and that
	// it was read: ErrorCode is it.
	ErrorCode    int16
	HasErrorCode bool
	// NestedRead says the body was decoded in full; Nested then holds the
	// distinct codes of its nested items (per topic, partition, group,
	// resource …) in the order first seen, and is empty when it has no
	// items or the API has none.
	NestedRead bool
	Nested     []int16
}

// Known reports whether any code of the response was read.
func (a Answer) Known() bool { return a.HasErrorCode || len(a.Nested) > 0 }

// Codes returns the code that speaks for the response (docs/design/rules.md §5): its
// top-level ErrorCode where the version has one, else the distinct codes
// of its items.
func (a Answer) Codes() []int16 {
	if a.HasErrorCode {
		return []int16{a.ErrorCode}
	}
	return a.Nested
}

// answerCodes collects codes while readAnswer walks a decoded body.
type answerCodes struct{ Answer }

func (a *answerCodes) top(c int16) { a.ErrorCode, a.HasErrorCode = c, true }

func (a *answerCodes) nested(c int16) {
	if !slices.Contains(a.Nested, c) {
		a.Nested = append(a.Nested, c)
	}
}

// peekTop reads the top-level code of a response from the first bytes of
// its body, where the version keeps it at a fixed offset.
func peekTop(key, version int16, body []byte) (int16, bool) {
	off := topAt(key, version)
	if off < 0 || len(body) < off+2 {
		return 0, false
	}
	return int16(binary.BigEndian.Uint16(body[off:])), true
}

// ReadAnswer decodes a whole response body of key and version and returns
// its error codes. Keys and versions kmsg does not know are an error.
func ReadAnswer(key, version int16, body []byte) (a Answer, err error) {
	if topAt(key, version) == topUnreadable {
		return a, fmt.Errorf("%s v%d: no known layout", keyName(key), version)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s v%d response: decoder failed: %v", keyName(key), version, r)
		}
	}()
	var c answerCodes
	if int(version) > int(answerLayouts[key].maxVersion) {
		code, ok := peekTop(key, version, body)
		if !ok {
			return a, fmt.Errorf("%s v%d response: shorter than its error code", keyName(key), version)
		}
		c.top(code)
		c.NestedRead = true
		return c.Answer, nil
	}
	if err := readAnswer(key, version, body, &c); err != nil {
		return a, fmt.Errorf("%s v%d response: %w", keyName(key), version, err)
	}
	c.NestedRead = true
	return c.Answer, nil
}

func keyName(key int16) string {
	if key >= 0 && int(key) < len(answerLayouts) && answerLayouts[key].name != "" {
		return answerLayouts[key].name
	}
	return fmt.Sprintf("API %d", key)
}

// idWatch marks the requests of one connection whose answers a KIP-1313
// verdict may need: every request that can draw a header-ID finding of
// error severity. It reads only what the headers show, and errs on the side
// of marking: a request it misses would leave its broker's verdict
// unknown, one it marks needlessly costs one decode. A request is marked
// when it uses header v3, carries a malformed, ZERO or ONE tag 0, carries
// an ID after a flexible request without one or with another, or carries
// none after one with an ID.
type idWatch struct {
	seen  bool // a flexible header carried a non-zero ID
	first kafka.UUID
	noID  bool // a flexible header carried none
}

func (w *idWatch) marks(h *RequestHeader) bool {
	if h.HeaderVersion < 2 {
		return false
	}
	mark := h.HeaderVersion == 3 || h.Tag0BadSize != 0 || (h.HasInstanceID && h.InstanceID.IsReserved())
	if h.HasInstanceID && !h.InstanceID.IsZero() {
		mark = mark || w.noID || (w.seen && h.InstanceID != w.first)
		if !w.seen {
			w.seen, w.first = true, h.InstanceID
		}
	} else {
		mark = mark || w.seen
		w.noID = true
	}
	return mark
}

// produceAcks reads the Acks field of a Produce request body: the first
// field up to v2, after the nullable TransactionalId from v3 (a compact
// string from v9). need > 0 asks for that many bytes of body when b is too
// short; ok is false when the body cannot hold the field.
func produceAcks(version int16, b []byte) (acks int16, need int, ok bool) {
	off := 0
	switch {
	case version >= 9:
		l, n := uvarint(b)
		if n == 0 {
			return 0, len(b) + 5, false
		}
		if n < 0 {
			return 0, 0, false
		}
		off = n
		if l > 0 {
			off += int(min(l-1, 1<<31))
		}
	case version >= 3:
		if len(b) < 2 {
			return 0, 2, false
		}
		off = 2
		if l := int16(binary.BigEndian.Uint16(b)); l > 0 {
			off += int(l)
		}
	}
	if len(b) < off+2 {
		return 0, off + 2, false
	}
	return int16(binary.BigEndian.Uint16(b[off:])), 0, true
}
