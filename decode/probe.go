package decode

import "encoding/binary"

// LooksLikeRequest reports whether b, the first bytes of a TCP segment's
// payload, start like a Kafka request: a frame size of 8 bytes to
// maxFrame (0: 100 MiB), an API key and version the table knows, a
// non-negative correlation ID, and a client ID that parses, is printable
// and fits the frame. It is the hint that names a port carrying Kafka on
// which nothing was decoded (a wrong --port), so it needs no connection
// state: a segment that starts inside a message just fails it.
func LooksLikeRequest(b []byte, table *APITable, maxFrame int32) bool {
	if maxFrame <= 0 {
		maxFrame = 100 << 20
	}
	if len(b) < 12 {
		return false
	}
	size := int32(binary.BigEndian.Uint32(b))
	if size < 8 || size > maxFrame {
		return false
	}
	key := int16(binary.BigEndian.Uint16(b[4:]))
	api, ok := table.Lookup(key)
	if !ok || !api.Valid(int16(binary.BigEndian.Uint16(b[6:]))) {
		return false
	}
	h, n, err := parseRequestHeader(b[4:min(len(b), 4+int(size))], table)
	if err == errShort {
		// The header runs past this segment: judged by what it holds.
		return h.CorrelationID >= 0 && len(b) < 4+int(size)
	}
	return err == nil && n <= int(size) && h.CorrelationID >= 0 && plausibleClientID(h)
}
