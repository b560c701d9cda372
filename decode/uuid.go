package decode

import (
	"encoding/base64"
	"encoding/hex"
)

// UUID is a Kafka UUID: 16 bytes on the wire.
type UUID [16]byte

// IsZero reports whether u is Kafka's reserved ZERO UUID (all bytes zero).
func (u UUID) IsZero() bool { return u == UUID{} }

// IsOne reports whether u is Kafka's reserved ONE UUID (fifteen zero bytes, then 01).
func (u UUID) IsOne() bool { return u == UUID{15: 1} }

// IsReserved reports whether u is ZERO or ONE.
func (u UUID) IsReserved() bool { return u.IsZero() || u.IsOne() }

// String is Kafka's own text form: URL-safe base64 without padding, 22 characters.
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// RFC4122 is the 8-4-4-4-12 hexadecimal form.
func (u UUID) RFC4122() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}
