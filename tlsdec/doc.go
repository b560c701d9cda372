// Package tlsdec owns the decryption of TLS-protected Kafka connections
// with the client's NSS key log, as Wireshark does it: the key log's text
// (KeyLog), the framing of TLS records on each direction of a reassembled
// stream, the handshake read in the clear (ClientHello, ServerHello), the
// derivation of the record keys and the AEAD decryption of the records,
// and the attribution of every plaintext byte to the frame that completed
// its record (Conn). What comes out is the plaintext byte stream with its
// spans, ready for package decode.
//
// The cryptography comes from the standard library (crypto/aes,
// crypto/cipher, crypto/hkdf, crypto/hmac, crypto/sha256, crypto/sha512)
// and golang.org/x/crypto/chacha20poly1305. Nothing is hand-rolled but what
// the standard library does not export: the TLS key schedule (TLS 1.3
// HKDF-Expand-Label, Derive-Secret, traffic key and IV derivation and key
// update; the TLS 1.2 PRF and key expansion) and the record framing.
//
// Supported: TLS 1.3 with TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384
// and TLS_CHACHA20_POLY1305_SHA256; TLS 1.2 with the ECDHE AES-GCM and
// ChaCha20-Poly1305 suites. Not supported: CBC suites, 0-RTT early data,
// renegotiation.
//
// Use: one Conn per TCP connection, fed each direction's reassembled bytes
// in order with their spans (Feed); what comes out is plaintext with spans
// for decode.Conn.Feed. A connection whose first bytes are not a TLS record
// is passed through as it is (State.Plain). Lost bytes are signalled by Gap:
// the record they fall in is lost, the next one is found at the first
// plausible application data header whose record verifies at one of the
// next SeqWindow sequence numbers, and the records skipped are counted as
// Lost. A record whose tag does not verify is dropped and counted; the
// sequence number advances, so the next records decrypt. While the client
// random is not in the key log the records are held, at most MaxPending
// bytes, and the key log is looked up again at each Feed and Flush; over the
// cap the Conn gives up (KeyGaveUp). A direction's own buffer holds at most
// one record (MaxRecord + 5 bytes) between calls.
//
// Secrets are never printable: no value of the package formats secret
// bytes, and no error carries them.
//
// The package is pure: bytes in, values out. It does no I/O, reads no
// clock, keeps no global mutable state and starts no goroutines.
package tlsdec
