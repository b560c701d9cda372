package decode

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kidscope/kidscope/kafka"
)

// errShort means the bytes given end before the header does: the caller
// should retry with more of the frame.
var errShort = errors.New("header runs past the bytes available")

// RequestHeader is a parsed Kafka request header.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// HeaderVersion is the request header version the API table assigns to
	// this key and version (0, 1, 2 or 3); 1 or 2 by guess for unknown ones.
	HeaderVersion int
	ClientID      string
	ClientIDNull  bool
	// InstanceID is tag 0 of the tagged fields (KIP-1313); HasInstanceID
	// says whether the tag was present with the expected size of 16.
	InstanceID    kafka.UUID
	HasInstanceID bool
	// Tag0BadSize is the size of a tag 0 that was present but not 16 bytes
	// long (0 when absent or well formed).
	Tag0BadSize int
	// TaggedFields counts every tagged field in the header, tag 0 included.
	TaggedFields int
	// Known is false when the API key or version is not in the API table:
	// the header was parsed by guess and the body is skipped.
	Known bool
}

// parseRequestHeader reads a request header from the start of a frame (the
// bytes after the int32 size). It returns the header and its length.
func parseRequestHeader(b []byte, table *APITable) (RequestHeader, int, error) {
	var h RequestHeader
	if len(b) < 8 {
		return h, 0, errShort
	}
	h.APIKey = int16(binary.BigEndian.Uint16(b))
	h.APIVersion = int16(binary.BigEndian.Uint16(b[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(b[4:]))
	h.HeaderVersion = 1
	if api, ok := table.Lookup(h.APIKey); ok {
		if api.Valid(h.APIVersion) {
			h.Known = true
			h.HeaderVersion = api.RequestHeaderVersion(h.APIVersion)
		} else if api.FlexibleFrom >= 0 && h.APIVersion > api.MaxVersion {
			// A version newer than the table: every new version since
			// KIP-482 has been flexible, so read the tagged fields too.
			h.HeaderVersion = 2
		}
	}
	n := 8
	if h.HeaderVersion == 0 {
		return h, n, nil
	}
	if len(b) < n+2 {
		return h, 0, errShort
	}
	idLen := int(int16(binary.BigEndian.Uint16(b[n:])))
	n += 2
	switch {
	case idLen == -1:
		h.ClientIDNull = true
	case idLen < 0:
		return h, 0, fmt.Errorf("client id length %d", idLen)
	default:
		if len(b) < n+idLen {
			return h, 0, errShort
		}
		h.ClientID = string(b[n : n+idLen])
		n += idLen
	}
	if h.HeaderVersion < 2 {
		return h, n, nil
	}
	count, k := uvarint(b[n:])
	if k == 0 {
		return h, 0, errShort
	}
	if k < 0 {
		return h, 0, errors.New("tagged field count overflows")
	}
	n += k
	if count > uint64(len(b)) { // each field takes at least two bytes
		if count > 1<<20 {
			return h, 0, fmt.Errorf("tagged field count %d", count)
		}
		return h, 0, errShort
	}
	lastTag := int64(-1)
	for i := uint64(0); i < count; i++ {
		tag, k := uvarint(b[n:])
		if k <= 0 {
			return h, 0, shortOr(k, "tag")
		}
		n += k
		size, k := uvarint(b[n:])
		if k <= 0 {
			return h, 0, shortOr(k, "tag size")
		}
		n += k
		if int64(tag) <= lastTag || tag > 1<<31 {
			return h, 0, fmt.Errorf("tag %d after tag %d: tags must ascend", tag, lastTag)
		}
		lastTag = int64(tag)
		if size > 1<<30 {
			return h, 0, fmt.Errorf("tag %d size %d", tag, size)
		}
		if uint64(len(b)-n) < size {
			return h, 0, errShort
		}
		if tag == 0 {
			if size == 16 {
				copy(h.InstanceID[:], b[n:n+16])
				h.HasInstanceID = true
			} else {
				h.Tag0BadSize = int(size)
				if size == 0 {
					h.Tag0BadSize = -1 // present but empty; keep it distinct from absent
				}
			}
		}
		h.TaggedFields++
		n += int(size)
	}
	return h, n, nil
}

// ResponseHeader is a parsed Kafka response header.
type ResponseHeader struct {
	CorrelationID int32
	HeaderVersion int // 0 or 1
	TaggedFields  int
}

// parseResponseHeader reads a response header of the given version.
func parseResponseHeader(b []byte, version int) (ResponseHeader, int, error) {
	h := ResponseHeader{HeaderVersion: version}
	if len(b) < 4 {
		return h, 0, errShort
	}
	h.CorrelationID = int32(binary.BigEndian.Uint32(b))
	n := 4
	if version < 1 {
		return h, n, nil
	}
	k, err := skipTaggedFields(b[n:], &h.TaggedFields)
	if err != nil {
		return h, 0, err
	}
	return h, n + k, nil
}

// skipTaggedFields passes over a tagged-field section, counting its fields.
func skipTaggedFields(b []byte, count *int) (int, error) {
	c, n := uvarint(b)
	if n <= 0 {
		return 0, shortOr(n, "tagged field count")
	}
	if c > uint64(len(b)) {
		if c > 1<<20 {
			return 0, fmt.Errorf("tagged field count %d", c)
		}
		return 0, errShort
	}
	for i := uint64(0); i < c; i++ {
		_, k := uvarint(b[n:])
		if k <= 0 {
			return 0, shortOr(k, "tag")
		}
		n += k
		size, k := uvarint(b[n:])
		if k <= 0 {
			return 0, shortOr(k, "tag size")
		}
		n += k
		if uint64(len(b)-n) < size {
			return 0, errShort
		}
		n += int(size)
		*count++
	}
	return n, nil
}

// uvarint reads an unsigned varint: n > 0 bytes read, 0 when b ends first,
// < 0 when it overflows 64 bits.
func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

func shortOr(n int, what string) error {
	if n == 0 {
		return errShort
	}
	return fmt.Errorf("%s varint overflows", what)
}
