package tlsdec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/sha512"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// suite is a cipher suite this package decrypts.
type suite struct {
	id     uint16
	name   string
	tls13  bool
	hash   func() hash.Hash
	keyLen int
	ivLen  int // TLS 1.2: the IV from the key block (GCM salt 4, ChaCha 12); TLS 1.3: 12
	chacha bool
}

var suites = []suite{
	{0x1301, "TLS_AES_128_GCM_SHA256", true, sha256.New, 16, 12, false},
	{0x1302, "TLS_AES_256_GCM_SHA384", true, sha512.New384, 32, 12, false},
	{0x1303, "TLS_CHACHA20_POLY1305_SHA256", true, sha256.New, 32, 12, true},
	{0xc02f, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", false, sha256.New, 16, 4, false},
	{0xc030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", false, sha512.New384, 32, 4, false},
	{0xc02b, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", false, sha256.New, 16, 4, false},
	{0xc02c, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", false, sha512.New384, 32, 4, false},
	{0xcca8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", false, sha256.New, 32, 12, true},
	{0xcca9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", false, sha256.New, 32, 12, true},
}

func findSuite(id uint16) *suite {
	for i := range suites {
		if suites[i].id == id {
			return &suites[i]
		}
	}
	return nil
}

// aead makes the suite's AEAD from a key.
func (s *suite) aead(key []byte) (cipher.AEAD, error) {
	if s.chacha {
		return chacha20poly1305.New(key)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
