package kafka

import (
	"encoding/base64"
	"fmt"

	"github.com/google/uuid"
)

// UUID is a Kafka UUID: 16 bytes on the wire.
type UUID [16]byte

// IsZero reports whether u is Kafka's reserved ZERO UUID (all bytes zero).
func (u UUID) IsZero() bool { return u == UUID{} }

// IsOne reports whether u is Kafka's reserved ONE UUID (fifteen zero bytes, then 01).
func (u UUID) IsOne() bool { return u == UUID{15: 1} }

// IsReserved reports whether u is ZERO or ONE.
func (u UUID) IsReserved() bool { return u.IsZero() || u.IsOne() }

// String is Kafka's own text form: URL-safe base64 without padding, 22
// characters (Uuid.toString in Apache Kafka).
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// RFC4122 is the 8-4-4-4-12 hexadecimal form.
func (u UUID) RFC4122() string { return uuid.UUID(u).String() }

// ParseUUID reads a UUID in either text form: Kafka's 22-character base64
// or RFC 4122's hexadecimal (with or without hyphens, braces or urn:uuid:).
func ParseUUID(s string) (UUID, error) {
	if len(s) == 22 {
		var u UUID
		if n, err := base64.RawURLEncoding.Strict().Decode(u[:], []byte(s)); err == nil && n == len(u) {
			return u, nil
		}
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return UUID{}, fmt.Errorf("%q is not a UUID in Kafka's base64 form or RFC 4122's hexadecimal one", s)
	}
	return UUID(u), nil
}
