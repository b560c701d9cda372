package tlsdec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 8448 §3 (Simple 1-RTT Handshake): the traffic secrets and the write
// keys and IVs derived from them.
func TestRFC8448TrafficKeys(t *testing.T) {
	cases := []struct{ name, secret, key, iv string }{
		{"server handshake",
			"b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38",
			"3f ce 51 60 09 c2 17 27 d0 f2 e4 e8 6e e4 03 bc", "5d 31 3e b2 67 12 76 ee 13 00 0b 30"},
		{"client handshake",
			"b3 ed db 12 6e 06 7f 35 a7 80 b3 ab f4 5e 2d 8f 3b 1a 95 07 38 f5 2e 96 00 74 6a 0e 27 a5 5a 21",
			"db fa a6 93 d1 76 2c 5b 66 6a f5 d9 50 25 8d 01", "5b d3 c7 1b 83 6e 0b 76 bb 73 26 5f"},
		{"server application",
			"a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43",
			"9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56", "cf 78 2b 88 dd 83 54 9a ad f1 e9 84"},
	}
	for _, c := range cases {
		key, iv := trafficKeys(sha256.New, unhex(t, c.secret), 16)
		if !bytes.Equal(key, unhex(t, c.key)) || !bytes.Equal(iv, unhex(t, c.iv)) {
			t.Errorf("%s: key %x iv %x; want %s / %s", c.name, key, iv, c.key, c.iv)
		}
	}
}

// RFC 8448 §3: Derive-Secret(early secret, "derived", "").
func TestRFC8448Derived(t *testing.T) {
	early := unhex(t, "33 ad 0a 1c 60 7e c0 3b 09 e6 cd 98 93 68 0c e2 10 ad f3 00 aa 1f 26 60 e1 b2 2e 10 f1 70 f9 2a")
	empty := sha256.Sum256(nil)
	got := deriveSecret(sha256.New, early, "derived", empty[:])
	want := unhex(t, "6f 26 15 a1 08 c7 02 c5 67 8f 54 fc 9d ba b6 97 16 c0 76 18 9c 48 25 0c eb ea c3 57 6c 36 11 ba")
	if !bytes.Equal(got, want) {
		t.Errorf("derived = %x, want %x", got, want)
	}
}

// The TLS 1.2 PRF (P_SHA256) test vector published on the IETF TLS list.
func TestPRF12(t *testing.T) {
	got := prf12(sha256.New, unhex(t, "9b be 43 6b a9 40 f0 17 b1 76 52 84 9a 71 db 35"), "test label",
		unhex(t, "a0 ba 9f 93 6c da 31 18 27 a6 f7 96 ff d5 19 8c"), 100)
	want := unhex(t, "e3 f2 29 ba 72 7b e1 7b 8d 12 26 20 55 7c d4 53 c2 aa b2 1d 07 c3 d4 95 32 9b 52 d4 e6 1e db 5a"+
		"6b 30 17 91 e9 0d 35 c9 c9 a4 6b 4e 14 ba f9 af 0f a0 22 f7 07 7d ef 17 ab fd 37 97 c0 56 4b ab"+
		"4f bc 91 66 6e 9d ef 9b 97 fc e3 4f 79 67 89 ba a4 80 82 d1 22 ee 42 c5 a7 2e 5a 51 10 ff f7 01"+
		"87 34 7b 66")
	if !bytes.Equal(got, want) {
		t.Errorf("PRF = %x\nwant  %x", got, want)
	}
}
