package decode

import "encoding/binary"

// AppendRequest appends one whole request frame (size, header, body) to
// dst. The header is written in h.HeaderVersion's layout; with version 2 or
// 3 the instance ID is written as tag 0 when h.HasInstanceID. The scenario
// generator and the tests build their traffic with it.
func AppendRequest(dst []byte, h RequestHeader, body []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.APIKey))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.APIVersion))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.CorrelationID))
	if h.HeaderVersion >= 1 {
		if h.ClientIDNull {
			dst = binary.BigEndian.AppendUint16(dst, 0xffff)
		} else {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.ClientID)))
			dst = append(dst, h.ClientID...)
		}
	}
	if h.HeaderVersion >= 2 {
		if h.HasInstanceID {
			dst = append(dst, 1, 0, 16) // one tagged field: tag 0, 16 bytes
			dst = append(dst, h.InstanceID[:]...)
		} else {
			dst = append(dst, 0)
		}
	}
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// AppendResponse appends one whole response frame: size, correlation ID,
// an empty tagged-field section when headerVersion is 1, and the body.
func AppendResponse(dst []byte, correlationID int32, headerVersion int, body []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if headerVersion >= 1 {
		dst = append(dst, 0)
	}
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
