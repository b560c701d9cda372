package samples

import "encoding/binary"

// The bytes of a TLS 1.3 handshake and some application data, for the
// scenario with TLS on a Kafka port. The hellos are well formed (Wireshark
// dissects them); what follows is encrypted, so made-up bytes of the right
// record sizes do.

// noise is n deterministic random-looking bytes.
func noise(n int, seed uint64) []byte {
	b := make([]byte, n)
	h := seed*0x9e3779b97f4a7c15 + 1
	for i := range b {
		if i%8 == 0 {
			h += 0x9e3779b97f4a7c15
			z := h
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			h2 := z ^ (z >> 31)
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], h2)
			copy(b[i:], w[:])
		}
	}
	return b
}

func u16(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }

func u24(b []byte, v int) []byte { return append(b, byte(v>>16), byte(v>>8), byte(v)) }

// vec16 is a vector with a two-byte length.
func vec16(b []byte, v []byte) []byte { return append(u16(b, len(v)), v...) }

func ext16(b []byte, typ int, data []byte) []byte { return vec16(u16(b, typ), data) }

// record wraps a body as one TLS record.
func record(typ byte, version int, body []byte) []byte {
	return vec16(u16([]byte{typ}, version), body)
}

func handshake(typ byte, body []byte) []byte { return append(u24([]byte{typ}, len(body)), body...) }

// clientHello is a TLS 1.3 ClientHello for host, as a Java client sends it.
func clientHello(host string, seed uint64) []byte {
	var h []byte
	h = u16(h, 0x0303)
	h = append(h, noise(32, seed)...)                                                                                                // random
	h = append(append(h, 32), noise(32, seed+1)...)                                                                                  // legacy session ID
	h = vec16(h, []byte{0x13, 0x01, 0x13, 0x02, 0x13, 0x03, 0xc0, 0x2c, 0xc0, 0x2b, 0xcc, 0xa9, 0xc0, 0x30, 0xc0, 0x2f, 0xcc, 0xa8}) // cipher suites
	h = append(h, 1, 0)                                                                                                              // compression: null
	var ex []byte
	sni := append([]byte{0}, vec16(nil, []byte(host))...)
	ex = ext16(ex, 0x0000, vec16(nil, sni))                                        // server_name
	ex = ext16(ex, 0x000a, vec16(nil, []byte{0x00, 0x1d, 0x00, 0x17, 0x00, 0x18})) // supported_groups
	ex = ext16(ex, 0x000b, []byte{1, 0})                                           // ec_point_formats
	ex = ext16(ex, 0x000d, vec16(nil, []byte{0x04, 0x03, 0x08, 0x04, 0x04, 0x01, 0x05, 0x03, 0x08, 0x05, 0x05, 0x01, 0x08, 0x06, 0x06, 0x01}))
	ex = ext16(ex, 0x002b, []byte{4, 0x03, 0x04, 0x03, 0x03}) // supported_versions
	ex = ext16(ex, 0x002d, []byte{1, 1})                      // psk_key_exchange_modes
	share := vec16(u16(nil, 0x001d), noise(32, seed+2))
	ex = ext16(ex, 0x0033, vec16(nil, share)) // key_share
	h = vec16(h, ex)
	return record(0x16, 0x0301, handshake(1, h))
}

// serverFlight is a ServerHello, ChangeCipherSpec and the encrypted rest of
// the server's handshake (certificates: a few kB).
func serverFlight(clientHelloRecord []byte, seed uint64) []byte {
	var h []byte
	h = u16(h, 0x0303)
	h = append(h, noise(32, seed)...)
	h = append(append(h, 32), clientHelloRecord[44:76]...) // echo the legacy session ID
	h = u16(h, 0x1301)                                     // TLS_AES_128_GCM_SHA256
	h = append(h, 0)
	var ex []byte
	ex = ext16(ex, 0x002b, []byte{0x03, 0x04})
	ex = ext16(ex, 0x0033, vec16(u16(nil, 0x001d), noise(32, seed+1)))
	h = vec16(h, ex)
	out := record(0x16, 0x0303, handshake(2, h))
	out = append(out, record(0x14, 0x0303, []byte{1})...)
	out = append(out, record(0x17, 0x0303, noise(2917, seed+2))...)
	return append(out, record(0x17, 0x0303, noise(286, seed+3))...)
}

// clientFinished is the client's ChangeCipherSpec and encrypted Finished.
func clientFinished(seed uint64) []byte {
	out := record(0x14, 0x0303, []byte{1})
	return append(out, record(0x17, 0x0303, noise(53, seed))...)
}

// appData is one encrypted record of n bytes.
func appData(n int, seed uint64) []byte { return record(0x17, 0x0303, noise(n, seed)) }
