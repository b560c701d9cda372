package tlsdec

import (
	"crypto/hkdf"
	"crypto/hmac"
	"hash"
)

// expandLabel is TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1).
func expandLabel(h func() hash.Hash, secret []byte, label string, context []byte, length int) []byte {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full)+len(context))
	info = append(info, byte(length>>8), byte(length), byte(len(full)))
	info = append(info, full...)
	info = append(info, byte(len(context)))
	info = append(info, context...)
	out, err := hkdf.Expand(h, secret, string(info), length)
	if err != nil {
		// Only for a length over 255 hash lengths, which no caller asks.
		return make([]byte, length)
	}
	return out
}

// deriveSecret is TLS 1.3's Derive-Secret over a transcript hash already
// computed (RFC 8446 §7.1).
func deriveSecret(h func() hash.Hash, secret []byte, label string, transcriptHash []byte) []byte {
	return expandLabel(h, secret, label, transcriptHash, h().Size())
}

// trafficKeys derives a TLS 1.3 record key and IV from a traffic secret
// (RFC 8446 §7.3).
func trafficKeys(h func() hash.Hash, secret []byte, keyLen int) (key, iv []byte) {
	return expandLabel(h, secret, "key", nil, keyLen), expandLabel(h, secret, "iv", nil, 12)
}

// nextSecret is TLS 1.3's key update (RFC 8446 §7.2).
func nextSecret(h func() hash.Hash, secret []byte) []byte {
	return expandLabel(h, secret, "traffic upd", nil, h().Size())
}

// prf12 is TLS 1.2's PRF: P_hash with HMAC (RFC 5246 §5).
func prf12(h func() hash.Hash, secret []byte, label string, seed []byte, length int) []byte {
	ls := append([]byte(label), seed...)
	mac := hmac.New(h, secret)
	mac.Write(ls)
	a := mac.Sum(nil) // A(1)
	out := make([]byte, 0, length+mac.Size())
	for len(out) < length {
		mac.Reset()
		mac.Write(a)
		mac.Write(ls)
		out = mac.Sum(out)
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(a[:0])
	}
	return out[:length]
}

// keyBlock12 is TLS 1.2's key expansion (RFC 5246 §6.3): for the AEAD
// suites there is no MAC key, so the block is the client and server write
// keys, then the client and server IVs (the GCM salt, or ChaCha's nonce).
func keyBlock12(h func() hash.Hash, master, clientRandom, serverRandom []byte, keyLen, ivLen int) (ck, sk, civ, siv []byte) {
	seed := append(append([]byte{}, serverRandom...), clientRandom...)
	b := prf12(h, master, "key expansion", seed, 2*keyLen+2*ivLen)
	return b[:keyLen], b[keyLen : 2*keyLen], b[2*keyLen : 2*keyLen+ivLen], b[2*keyLen+ivLen:]
}
