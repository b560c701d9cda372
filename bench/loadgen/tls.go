package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"hash"
	"math/big"
	"math/rand/v2"
	"strings"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// The TLS layer (-tls): every connection is TLS 1.3, a full handshake
// (ClientHello and ServerHello with X25519 key shares, the server's
// EncryptedExtensions, Certificate, CertificateVerify and Finished under
// the server handshake keys, the client's ChangeCipherSpec and Finished),
// then every Kafka message sealed in application data records of at most
// 16 KiB of plaintext, as a TLS stack cuts one write. The handshake is
// valid end to end (real X25519, the RFC 8446 key schedule, Ed25519
// signatures, correct Finished MACs), so Wireshark and kidscope both read
// it as they would a real one; only the randomness comes from the seed.
//
// The key schedule is written here, duplicating tlsdec's (which is
// unexported, and the generator should not share code with what it
// tests): HKDF from crypto/hkdf, AES-GCM from crypto/aes and crypto/cipher,
// ChaCha20-Poly1305 from golang.org/x/crypto, as tlsdec uses.

// tlsSuite is a TLS 1.3 cipher suite the generator seals with.
type tlsSuite struct {
	id     uint16
	name   string // IANA, as kidscope's report names it
	short  string // the -tls-suite value
	hash   func() hash.Hash
	keyLen int
	chacha bool
}

var tlsSuites = []tlsSuite{
	{0x1301, "TLS_AES_128_GCM_SHA256", "aes128-gcm", sha256.New, 16, false},
	{0x1302, "TLS_AES_256_GCM_SHA384", "aes256-gcm", sha512.New384, 32, false},
	{0x1303, "TLS_CHACHA20_POLY1305_SHA256", "chacha20-poly1305", sha256.New, 32, true},
}

// findTLSSuite takes a -tls-suite value: the short name or the IANA one.
func findTLSSuite(name string) (*tlsSuite, error) {
	var names []string
	for i := range tlsSuites {
		s := &tlsSuites[i]
		if strings.EqualFold(name, s.short) || strings.EqualFold(name, s.name) {
			return s, nil
		}
		names = append(names, s.short)
	}
	return nil, fmt.Errorf("-tls-suite %q: one of %s", name, strings.Join(names, ", "))
}

const (
	recHandshake = 22
	recCCS       = 20
	recAlert     = 21
	recAppData   = 23

	// maxPlain is the most content a record carries (RFC 8446 §5.1: the
	// inner plaintext, content type included, is at most 2^14 + 1 bytes).
	maxPlain = 1 << 14
	// recOverhead is what sealing adds to each record: the header, the
	// inner content type and the 16-byte AEAD tag.
	recOverhead = 5 + 1 + 16
)

// tlsConn is a connection's record protection once the handshake is done.
type tlsConn struct {
	aead [2]cipher.AEAD // by direction
	iv   [2][]byte
	seq  [2]uint64
}

// tlsState is the generator's TLS setup: the suite, a random stream for
// key material of its own (so that the randomness of the Kafka traffic
// does not depend on what the handshakes draw), each broker's certificate
// and signing key, and the key log written so far.
type tlsState struct {
	suite  *tlsSuite
	rng    *rand.ChaCha8
	certs  map[*host][]byte
	keys   map[*host]ed25519.PrivateKey
	keylog bytes.Buffer
	conns  int // handshakes made
}

func newTLSState(suite *tlsSuite, seed uint64) *tlsState {
	var k [32]byte
	binary.LittleEndian.PutUint64(k[:], seed)
	copy(k[8:], "loadgen tls key material")
	return &tlsState{suite: suite, rng: rand.NewChaCha8(k), certs: map[*host][]byte{}, keys: map[*host]ed25519.PrivateKey{}}
}

func (t *tlsState) random(n int) []byte {
	b := make([]byte, n)
	_, _ = t.rng.Read(b) // ChaCha8.Read never fails
	return b
}

// cert returns broker b's self-signed Ed25519 certificate (made once;
// Ed25519 signing is deterministic, so the same seed gives the same bytes).
func (t *tlsState) cert(b *host, name string) ([]byte, ed25519.PrivateKey) {
	if c, ok := t.certs[b]; ok {
		return c, t.keys[b]
	}
	key := ed25519.NewKeyFromSeed(t.random(ed25519.SeedSize))
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes(t.random(8)),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"kidscope loadgen"}},
		DNSNames:     []string{name},
		NotBefore:    nb, NotAfter: nb.AddDate(1, 0, 0),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	if err != nil {
		panic("loadgen: certificate: " + err.Error()) // a fixed template: cannot fail
	}
	t.certs[b], t.keys[b] = der, key
	return der, key
}

// expandLabel is HKDF-Expand-Label (RFC 8446 §7.1).
func expandLabel(h func() hash.Hash, secret []byte, label string, context []byte, n int) []byte {
	full := "tls13 " + label
	info := []byte{byte(n >> 8), byte(n), byte(len(full))}
	info = append(info, full...)
	info = append(info, byte(len(context)))
	info = append(info, context...)
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		panic("loadgen: HKDF-Expand-Label: " + err.Error()) // n is a hash or key length: cannot fail
	}
	return out
}

func deriveSecret(h func() hash.Hash, secret []byte, label string, transcript []byte) []byte {
	th := h()
	th.Write(transcript)
	return expandLabel(h, secret, label, th.Sum(nil), th.Size())
}

func extract(h func() hash.Hash, ikm, salt []byte) []byte {
	out, err := hkdf.Extract(h, ikm, salt)
	if err != nil {
		panic("loadgen: HKDF-Extract: " + err.Error())
	}
	return out
}

// finished is a Finished message's verify_data (RFC 8446 §4.4.4).
func finished(h func() hash.Hash, trafficSecret, transcript []byte) []byte {
	key := expandLabel(h, trafficSecret, "finished", nil, h().Size())
	th := h()
	th.Write(transcript)
	mac := hmac.New(h, key)
	mac.Write(th.Sum(nil))
	return mac.Sum(nil)
}

func (s *tlsSuite) aead(key []byte) cipher.AEAD {
	var a cipher.AEAD
	var err error
	if s.chacha {
		a, err = chacha20poly1305.New(key)
	} else {
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			a, err = cipher.NewGCM(b)
		}
	}
	if err != nil {
		panic("loadgen: AEAD: " + err.Error()) // key lengths are the suite's
	}
	return a
}

// keys sets direction d's record protection from a traffic secret
// (RFC 8446 §7.3), sequence number 0.
func (tc *tlsConn) keys(s *tlsSuite, d int, secret []byte) {
	tc.aead[d] = s.aead(expandLabel(s.hash, secret, "key", nil, s.keyLen))
	tc.iv[d] = expandLabel(s.hash, secret, "iv", nil, 12)
	tc.seq[d] = 0
}

// sealedLen is the size of data sealed in records of maxPlain.
func sealedLen(n int) int {
	return n + max(1, (n+maxPlain-1)/maxPlain)*recOverhead
}

// seal appends data to dst as records of content type typ, direction d:
// maxPlain bytes each, the last one shorter. Each record is sealed in
// place, where its plaintext was copied.
func (tc *tlsConn) seal(dst []byte, d int, typ byte, data []byte) []byte {
	a, iv := tc.aead[d], tc.iv[d]
	for off := 0; off == 0 || off < len(data); off += maxPlain {
		chunk := data[off:min(off+maxPlain, len(data))]
		n := len(chunk) + 1 + a.Overhead()
		dst = append(dst, recAppData, 3, 3, byte(n>>8), byte(n))
		start := len(dst)
		dst = append(dst, chunk...)
		dst = append(dst, typ)
		var nonce [12]byte
		copy(nonce[:], iv)
		for i := 0; i < 8; i++ {
			nonce[11-i] ^= byte(tc.seq[d] >> (8 * i))
		}
		tc.seq[d]++
		dst = a.Seal(dst[:start], nonce[:], dst[start:], dst[start-5:start])
	}
	return dst
}

func hsMsg(typ byte, body []byte) []byte {
	return append([]byte{typ, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
}

func clearRecord(dst []byte, typ byte, version uint16, body []byte) []byte {
	dst = append(dst, typ, byte(version>>8), byte(version), byte(len(body)>>8), byte(len(body)))
	return append(dst, body...)
}

func u16(b []byte, v int) []byte { return append(b, byte(v>>8), byte(v)) }
func ext(b []byte, typ int, data []byte) []byte {
	b = u16(b, typ)
	b = u16(b, len(data))
	return append(b, data...)
}

// tlsHandshake makes connection c's TLS 1.3 handshake: three messages to
// send after the TCP handshake (the ClientHello; the server's flight; the
// client's CCS and Finished), and c's application keys. The key log gets
// the connection's four secrets, as Go's crypto/tls writes them.
func (g *gen) tlsHandshake(c *conn) []step {
	t, s := g.tls, g.tls.suite
	h := s.hash
	t.conns++
	name := fmt.Sprintf("kafka-%d.kafka.svc.cluster.local", int(c.srv.ip[3])-10)
	cr, sr, sid := t.random(32), t.random(32), t.random(32)
	cpriv, err1 := ecdh.X25519().NewPrivateKey(t.random(32))
	spriv, err2 := ecdh.X25519().NewPrivateKey(t.random(32))
	if err1 != nil || err2 != nil {
		panic("loadgen: X25519 key") // 32 bytes: cannot fail
	}
	shared, err := spriv.ECDH(cpriv.PublicKey())
	if err != nil {
		panic("loadgen: X25519: " + err.Error())
	}

	// ClientHello: what a TLS 1.3 client offers, middlebox-compatible
	// session ID, SNI, X25519 only.
	ch := u16(nil, 0x0303)
	ch = append(ch, cr...)
	ch = append(append(ch, byte(len(sid))), sid...)
	ch = u16(ch, 2*len(tlsSuites))
	for _, x := range tlsSuites {
		ch = u16(ch, int(x.id))
	}
	ch = append(ch, 1, 0) // compression: null
	var exts []byte
	sni := u16(nil, len(name)+3)
	sni = append(sni, 0)
	sni = append(u16(sni, len(name)), name...)
	exts = ext(exts, 0, sni)                             // server_name
	exts = ext(exts, 10, []byte{0, 2, 0, 0x1d})          // supported_groups: x25519
	exts = ext(exts, 13, []byte{0, 6, 8, 7, 4, 3, 8, 4}) // signature_algorithms: ed25519, ecdsa_secp256r1_sha256, rsa_pss_rsae_sha256
	exts = ext(exts, 43, []byte{2, 3, 4})                // supported_versions: TLS 1.3
	exts = ext(exts, 45, []byte{1, 1})                   // psk_key_exchange_modes: psk_dhe_ke
	ks := append([]byte{0, 36, 0, 0x1d, 0, 32}, cpriv.PublicKey().Bytes()...)
	exts = ext(exts, 51, ks) // key_share
	ch = append(u16(ch, len(exts)), exts...)
	chMsg := hsMsg(1, ch)

	sh := u16(nil, 0x0303)
	sh = append(sh, sr...)
	sh = append(append(sh, byte(len(sid))), sid...)
	sh = u16(sh, int(s.id))
	sh = append(sh, 0)
	exts = ext(nil, 43, []byte{3, 4}) // supported_versions: TLS 1.3
	exts = ext(exts, 51, append([]byte{0, 0x1d, 0, 32}, spriv.PublicKey().Bytes()...))
	sh = append(u16(sh, len(exts)), exts...)
	shMsg := hsMsg(2, sh)

	// The key schedule (RFC 8446 §7.1), no PSK.
	zero := make([]byte, h().Size())
	early := extract(h, zero, nil)
	hsSecret := extract(h, shared, deriveSecret(h, early, "derived", nil))
	transcript := append(append([]byte{}, chMsg...), shMsg...)
	chs := deriveSecret(h, hsSecret, "c hs traffic", transcript)
	shs := deriveSecret(h, hsSecret, "s hs traffic", transcript)

	der, key := t.cert(c.srv, name)
	ee := hsMsg(8, []byte{0, 0})
	cl := append([]byte{byte(len(der) >> 16), byte(len(der) >> 8), byte(len(der))}, der...)
	cl = append(cl, 0, 0) // no certificate extensions
	cert := hsMsg(11, append([]byte{0, byte(len(cl) >> 16), byte(len(cl) >> 8), byte(len(cl))}, cl...))
	transcript = append(append(transcript, ee...), cert...)
	th := h()
	th.Write(transcript)
	signed := append(bytes.Repeat([]byte{0x20}, 64), "TLS 1.3, server CertificateVerify\x00"...)
	sig := ed25519.Sign(key, append(signed, th.Sum(nil)...))
	cv := hsMsg(15, append(u16(u16(nil, 0x0807), len(sig)), sig...))
	transcript = append(transcript, cv...)
	sfin := hsMsg(20, finished(h, shs, transcript))
	transcript = append(transcript, sfin...)

	master := extract(h, zero, deriveSecret(h, hsSecret, "derived", nil))
	cats := deriveSecret(h, master, "c ap traffic", transcript)
	sats := deriveSecret(h, master, "s ap traffic", transcript)
	cfin := hsMsg(20, finished(h, chs, transcript))

	for _, l := range []struct {
		label  string
		secret []byte
	}{{"CLIENT_HANDSHAKE_TRAFFIC_SECRET", chs}, {"SERVER_HANDSHAKE_TRAFFIC_SECRET", shs},
		{"CLIENT_TRAFFIC_SECRET_0", cats}, {"SERVER_TRAFFIC_SECRET_0", sats}} {
		fmt.Fprintf(&t.keylog, "%s %x %x\n", l.label, cr, l.secret)
	}

	// The records: the first ClientHello's record version is TLS 1.0, as
	// clients send it; the server's encrypted handshake messages one record
	// each, as Go's crypto/tls writes them.
	tc := &tlsConn{}
	tc.keys(s, toClient, shs)
	tc.keys(s, toBroker, chs)
	cw := clearRecord(nil, recHandshake, 0x0301, chMsg)
	sw := clearRecord(nil, recHandshake, 0x0303, shMsg)
	sw = clearRecord(sw, recCCS, 0x0303, []byte{1})
	for _, m := range [][]byte{ee, cert, cv, sfin} {
		sw = tc.seal(sw, toClient, recHandshake, m)
	}
	fw := clearRecord(nil, recCCS, 0x0303, []byte{1})
	fw = tc.seal(fw, toBroker, recHandshake, cfin)
	tc.keys(s, toClient, sats)
	tc.keys(s, toBroker, cats)
	c.tls = tc
	return []step{
		{kind: stepData, m: &message{dir: toBroker, data: chMsg, wire: cw, hs: true}},
		{kind: stepData, m: &message{dir: toClient, data: sw, wire: sw, hs: true}},
		{kind: stepData, m: &message{dir: toBroker, data: cfin, wire: fw, hs: true}},
	}
}

// closeNotify is the alert a TLS stack sends before it closes: sealed when
// it is sent, after what came before it on the connection.
func closeNotify(dir int) step {
	return step{kind: stepData, m: &message{dir: dir, data: []byte{1, 0}, ctype: recAlert, hs: true}}
}

// sealMessage gives m its bytes on the wire when c is TLS: the records of
// m's data, sealed in the order they are sent.
func (g *gen) sealMessage(c *conn, m *message) {
	if c.tls == nil || m.wire != nil {
		return
	}
	typ := m.ctype
	if typ == 0 {
		typ = recAppData
	}
	m.wire = c.tls.seal(g.alloc(sealedLen(len(m.data))), m.dir, typ, m.data)
}
