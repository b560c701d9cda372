package tlsdec

import "encoding/binary"

// hsReader cuts a direction's handshake stream into messages, keeping only
// those read (ClientHello, ServerHello, Finished, KeyUpdate) and skipping
// the others without holding them.
type hsReader struct {
	buf  []byte
	skip int
}

func (h *hsReader) feed(b []byte, fn func(typ byte, body []byte)) {
	for len(b) > 0 {
		if h.skip > 0 {
			n := min(h.skip, len(b))
			h.skip -= n
			b = b[n:]
			continue
		}
		if len(h.buf) < 4 {
			n := min(4-len(h.buf), len(b))
			h.buf = append(h.buf, b[:n]...)
			b = b[n:]
			if len(h.buf) < 4 {
				return
			}
		}
		typ := h.buf[0]
		n := int(h.buf[1])<<16 | int(h.buf[2])<<8 | int(h.buf[3])
		if !(typ == 1 || typ == 2 || typ == 20 || typ == 24) || n > maxHandshakeMsg {
			h.buf, h.skip = h.buf[:0], n
			continue
		}
		need := 4 + n - len(h.buf)
		take := min(need, len(b))
		h.buf = append(h.buf, b[:take]...)
		b = b[take:]
		if take < need {
			return
		}
		fn(typ, h.buf[4:])
		h.buf = h.buf[:0]
	}
}

type hello struct {
	random  [32]byte
	version uint16
	suite   uint16
}

// reader reads a handshake body; a short read sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() int {
	v := r.take(1)
	if v == nil {
		return 0
	}
	return int(v[0])
}

func (r *reader) u16() int {
	v := r.take(2)
	if v == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(v))
}

func parseClientHello(b []byte) (hello, bool) {
	r := reader{b: b}
	var h hello
	h.version = uint16(r.u16())
	copy(h.random[:], r.take(32))
	r.take(r.u8())  // session ID
	r.take(r.u16()) // cipher suites
	r.take(r.u8())  // compression methods
	return h, !r.bad
}

func parseServerHello(b []byte) (hello, bool) {
	r := reader{b: b}
	var h hello
	h.version = uint16(r.u16())
	copy(h.random[:], r.take(32))
	r.take(r.u8()) // session ID
	h.suite = uint16(r.u16())
	r.u8() // compression method
	if r.bad {
		return h, false
	}
	if len(r.b) >= 2 {
		ext := reader{b: r.take(r.u16())}
		for len(ext.b) >= 4 && !ext.bad {
			typ := ext.u16()
			data := ext.take(ext.u16())
			if typ == 0x002b && len(data) == 2 { // supported_versions
				h.version = binary.BigEndian.Uint16(data)
			}
		}
	}
	return h, !r.bad
}
