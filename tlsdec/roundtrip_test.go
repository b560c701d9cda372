package tlsdec

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kidscope/kidscope/kafka"
)

// write is one Write of one side of a transcript.
type write struct {
	side kafka.Direction
	b    []byte
}

// tap copies what a side writes into the shared transcript.
type tap struct {
	net.Conn
	side kafka.Direction
	mu   *sync.Mutex
	log  *[]write
}

func (t tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	*t.log = append(*t.log, write{t.side, bytes.Clone(p)})
	t.mu.Unlock()
	return t.Conn.Write(p)
}

// transcript is a recorded TLS connection: the raw bytes of each side, the
// key log written by the client, and the application data each side wrote.
type transcript struct {
	writes []write
	keylog []byte
	app    [2][]byte
	state  tls.ConnectionState
}

var (
	certOnce, rsaOnce sync.Once
	rsaErr            error
	ecCert, rsaCert   tls.Certificate
	certErr           error
	testMessageSizes  = []int{1, 100, 5000, 16384, 16385, 40000, 7}
)

func selfSigned(key any, pub any) (tls.Certificate, error) {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"},
		DNSNames: []string{"broker"}, NotBefore: time.Unix(0, 0), NotAfter: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func certs(t testing.TB) {
	certOnce.Do(func() {
		ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			certErr = err
			return
		}
		ecCert, certErr = selfSigned(ek, &ek.PublicKey)
	})
	if certErr != nil {
		t.Fatal(certErr)
	}
}

// rsaCerts readies rsaCert too (slow to generate: only the RSA suites' test).
func rsaCerts(t testing.TB) {
	certs(t)
	rsaOnce.Do(func() {
		rk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			rsaErr = err
			return
		}
		rsaCert, rsaErr = selfSigned(rk, &rk.PublicKey)
	})
	if rsaErr != nil {
		t.Fatal(rsaErr)
	}
}

// record runs a crypto/tls client and server over net.Pipe: the client
// writes a request of each size, the server answers each with as many
// bytes, and the client closes.
func recordTLS(t testing.TB, ccfg, scfg *tls.Config) transcript {
	t.Helper()
	return recordSizes(t, ccfg, scfg, testMessageSizes)
}

func recordSizes(t testing.TB, ccfg, scfg *tls.Config, sizes []int) transcript {
	t.Helper()
	var tr transcript
	var kl bytes.Buffer
	ccfg = ccfg.Clone()
	ccfg.KeyLogWriter = &kl
	ccfg.InsecureSkipVerify = true
	ccfg.ServerName = "broker"
	var mu sync.Mutex
	a, b := net.Pipe()
	cli := tls.Client(tap{a, kafka.ToBroker, &mu, &tr.writes}, ccfg)
	srv := tls.Server(tap{b, kafka.ToClient, &mu, &tr.writes}, scfg)
	done := make(chan error, 1)
	go func() {
		defer srv.Close()
		for _, n := range sizes {
			buf := make([]byte, n)
			if _, err := io.ReadFull(srv, buf); err != nil {
				done <- err
				return
			}
			resp := bytes.Repeat([]byte{byte(n)}, n)
			copy(resp, fmt.Sprintf("response to %d:", n))
			mu.Lock()
			tr.app[kafka.ToClient] = append(tr.app[kafka.ToClient], resp...)
			mu.Unlock()
			if _, err := srv.Write(resp); err != nil {
				done <- err
				return
			}
		}
		_, _ = io.Copy(io.Discard, srv) // to the client's close_notify
		done <- nil
	}()
	for i, n := range sizes {
		req := make([]byte, n)
		for j := range req {
			req[j] = byte(i + j)
		}
		mu.Lock()
		tr.app[kafka.ToBroker] = append(tr.app[kafka.ToBroker], req...)
		mu.Unlock()
		if _, err := cli.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(cli, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	tr.state = cli.ConnectionState()
	cli.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tr.keylog = kl.Bytes()
	return tr
}

// replay feeds a transcript to a Conn, one frame per write (split further
// by split when it is not nil), and returns the plaintext of each side and
// its spans.
func replay(t testing.TB, c *Conn, tr transcript, split func(n int) int) (out [2][]byte, spans [2][]kafka.Span) {
	t.Helper()
	frame := int64(0)
	feed := func(s kafka.Direction, b []byte, sp []kafka.Span) {
		o, os, _ := c.Feed(s, b, sp)
		checkSpans(t, o, os)
		base := len(out[s])
		out[s] = append(out[s], o...)
		for _, x := range os {
			spans[s] = append(spans[s], kafka.Span{End: base + x.End, At: x.At})
		}
	}
	for _, w := range tr.writes {
		b := w.b
		for len(b) > 0 {
			n := len(b)
			if split != nil {
				n = min(max(split(len(b)), 1), len(b))
			}
			frame++
			feed(w.side, b[:n], []kafka.Span{{End: n, At: kafka.FrameRef{Frame: frame}}})
			b = b[n:]
		}
	}
	feed(kafka.ToBroker, nil, nil)
	feed(kafka.ToClient, nil, nil)
	return out, spans
}

func checkSpans(t testing.TB, out []byte, spans []kafka.Span) {
	t.Helper()
	prev := 0
	for _, s := range spans {
		if s.End <= prev {
			t.Fatalf("spans not increasing: %v", spans)
		}
		prev = s.End
	}
	if prev != len(out) {
		t.Fatalf("spans end at %d, out has %d bytes", prev, len(out))
	}
}

func keysOf(t testing.TB, text []byte) *KeyLog {
	t.Helper()
	k, errs := ParseKeyLog(text)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return k
}

func checkRoundTrip(t *testing.T, tr transcript, wantVersion, wantSuite string) {
	t.Helper()
	for _, split := range []func(int) int{nil, func(int) int { return 1 + int(time.Now().UnixNano()%700) }, func(int) int { return 3 }} {
		c := NewConn(keysOf(t, tr.keylog), Options{})
		out, _ := replay(t, c, tr, split)
		st := c.State()
		for s := range 2 {
			if !bytes.Equal(out[s], tr.app[s]) {
				t.Errorf("%s: %v decrypted %d bytes, app wrote %d (state %+v)", wantSuite, kafka.Direction(s), len(out[s]), len(tr.app[s]), st)
			}
			if st.Side[s].TagFailures != 0 || st.Side[s].Lost != 0 || st.Side[s].Dropped != 0 || st.Side[s].BadHeaders != 0 {
				t.Errorf("%s: %v counters %+v", wantSuite, kafka.Direction(s), st.Side[s])
			}
		}
		if st.Version != wantVersion || st.Suite != wantSuite || st.Key != KeyFound {
			t.Errorf("state %q %q %v, want %s %s key found", st.Version, st.Suite, st.Key, wantVersion, wantSuite)
		}
		if sum := st.Summary(); sum != wantVersion+" "+wantSuite+", key found" {
			t.Errorf("summary %q", sum)
		}
	}
}

func TestRoundTripTLS12(t *testing.T) {
	rsaCerts(t)
	for _, id := range []uint16{
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	} {
		t.Run(tls.CipherSuiteName(id), func(t *testing.T) {
			cert := rsaCert
			if bytes.Contains([]byte(tls.CipherSuiteName(id)), []byte("ECDSA")) {
				cert = ecCert
			}
			tr := recordTLS(t, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{id}},
				&tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: tls.VersionTLS12})
			if tr.state.CipherSuite != id {
				t.Fatalf("negotiated %s", tls.CipherSuiteName(tr.state.CipherSuite))
			}
			checkRoundTrip(t, tr, "TLS 1.2", tls.CipherSuiteName(id))
		})
	}
}

func TestRoundTripTLS13(t *testing.T) {
	certs(t)
	tr := recordTLS(t, &tls.Config{MinVersion: tls.VersionTLS13}, &tls.Config{Certificates: []tls.Certificate{ecCert}})
	checkRoundTrip(t, tr, "TLS 1.3", tls.CipherSuiteName(tr.state.CipherSuite))
	t.Logf("TLS 1.3 with crypto/tls negotiated %s", tls.CipherSuiteName(tr.state.CipherSuite))
}

// TLS 1.2 resumption by session ticket. crypto/tls logs CLIENT_RANDOM only
// for full handshakes; NSS and OpenSSL log it for every connection, the
// resumed ones with the session's master secret. The test writes that line
// as they would: the resumed connection's client random (from its
// ClientHello) with the first connection's master secret.
func TestRoundTripTLS12Resumed(t *testing.T) {
	certs(t)
	ccfg := &tls.Config{MaxVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	scfg := &tls.Config{Certificates: []tls.Certificate{ecCert}, MaxVersion: tls.VersionTLS12}
	first := recordTLS(t, ccfg, scfg)
	second := recordTLS(t, ccfg, scfg)
	if !second.state.DidResume {
		t.Fatal("second connection did not resume")
	}
	if len(bytes.TrimSpace(second.keylog)) != 0 {
		t.Logf("crypto/tls logged for the resumed connection: %d bytes", len(second.keylog))
	}
	ch := second.writes[0].b
	if ch[0] != typeHandshake || ch[5] != 1 {
		t.Fatal("first write is not the ClientHello")
	}
	f := bytes.Fields(first.keylog)
	line := fmt.Sprintf("CLIENT_RANDOM %x %s\n", ch[11:43], f[2])
	second.keylog = append(append([]byte{}, first.keylog...), line...)
	checkRoundTrip(t, second, "TLS 1.2", tls.CipherSuiteName(second.state.CipherSuite))
}

func TestMissingKeyAndLateKey(t *testing.T) {
	certs(t)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		tr := recordTLS(t, &tls.Config{MaxVersion: v}, &tls.Config{Certificates: []tls.Certificate{ecCert}})
		// No key, small cap: gives up.
		c := NewConn(&KeyLog{}, Options{MaxPending: 10000})
		out, _ := replay(t, c, tr, nil)
		st := c.State()
		if len(out[0])+len(out[1]) != 0 || st.Key != KeyGaveUp || st.Summary() != "TLS, key not yet known" {
			t.Errorf("v%x no key: %d bytes out, %+v %q", v, len(out[0])+len(out[1]), st, st.Summary())
		}
		if c.pendingBytes != 0 {
			t.Errorf("gave up but holds %d bytes", c.pendingBytes)
		}
		// No key, room enough: no key, held within the cap.
		c = NewConn(nil, Options{MaxPending: 1 << 20})
		replay(t, c, tr, nil)
		if st := c.State(); st.Key != KeyMissing || !bytes.HasSuffix([]byte(st.Summary()), []byte(", no key")) {
			t.Errorf("nil key log: %+v %q", st, st.Summary())
		}
		// The key log grows: Flush decrypts what was held.
		keys := &KeyLog{}
		c = NewConn(keys, Options{MaxPending: 1 << 20})
		replay(t, c, tr, nil)
		if errs := keys.AddAll(tr.keylog); errs != nil {
			t.Fatal(errs)
		}
		for s := range 2 {
			o, os, _ := c.Flush(kafka.Direction(s))
			checkSpans(t, o, os)
			if !bytes.Equal(o, tr.app[s]) {
				t.Errorf("v%x late key: %v got %d bytes, want %d", v, kafka.Direction(s), len(o), len(tr.app[s]))
			}
		}
		if st := c.State(); st.Key != KeyFound || c.pendingBytes != 0 {
			t.Errorf("late key: %+v, %d bytes held", st, c.pendingBytes)
		}
	}
}

// Every plaintext byte is attributed to the frame that completed its record.
func TestSpansFollowRecords(t *testing.T) {
	certs(t)
	tr := recordTLS(t, &tls.Config{MaxVersion: tls.VersionTLS13}, &tls.Config{Certificates: []tls.Certificate{ecCert}})
	// Feed one byte per frame: frame numbers are stream offsets + 1 per side.
	c := NewConn(keysOf(t, tr.keylog), Options{})
	var stream [2][]byte
	for _, w := range tr.writes {
		stream[w.side] = append(stream[w.side], w.b...)
	}
	frameOf := [2]int64{}
	var got [2][]kafka.Span
	var out [2][]byte
	for _, w := range tr.writes {
		for _, b := range w.b {
			frameOf[w.side]++
			o, os, _ := c.Feed(w.side, []byte{b}, []kafka.Span{{End: 1, At: kafka.FrameRef{File: int(w.side), Frame: frameOf[w.side]}}})
			for _, x := range os {
				got[w.side] = append(got[w.side], kafka.Span{End: len(out[w.side]) + x.End, At: x.At})
			}
			out[w.side] = append(out[w.side], o...)
		}
	}
	// The record ending at stream offset e was completed by frame e.
	for s := range 2 {
		if !bytes.Equal(out[s], tr.app[s]) {
			t.Fatalf("%v: %d bytes, want %d", kafka.Direction(s), len(out[s]), len(tr.app[s]))
		}
		ends := map[int64]bool{}
		b := stream[s]
		for off := 0; off+5 <= len(b); {
			off += 5 + (int(b[off+3])<<8 | int(b[off+4]))
			ends[int64(off)] = true
		}
		for _, x := range got[s] {
			if !ends[x.At.Frame] || x.At.File != s {
				t.Fatalf("%v: span %v not at a record's last byte", kafka.Direction(s), x)
			}
		}
		if len(got[s]) < 8 {
			t.Errorf("%v: %d spans for %d records", kafka.Direction(s), len(got[s]), len(testMessageSizes))
		}
	}
}

// A gap in crypto/tls's own records (TLS 1.2 GCM with explicit nonces,
// TLS 1.2 ChaCha20, TLS 1.3): the two records it cuts are lost, the rest
// decrypts.
func TestRoundTripGap(t *testing.T) {
	certs(t)
	for _, cfg := range []*tls.Config{
		{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}},
		{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}},
		{MinVersion: tls.VersionTLS13},
	} {
		tr := recordTLS(t, cfg, &tls.Config{Certificates: []tls.Certificate{ecCert}})
		c := NewConn(keysOf(t, tr.keylog), Options{})
		// crypto/tls writes a record at a time: cut from the middle of the
		// first big server record to the middle of the next one.
		var out []byte
		before, phase := -1, 0
		for _, w := range tr.writes {
			b := w.b
			if w.side == kafka.ToClient && phase == 0 && len(b) > 10000 {
				b, phase = b[:len(b)/2], 1
			} else if w.side == kafka.ToClient && phase == 1 {
				before = len(out)
				c.Gap(kafka.ToClient)
				b, phase = b[len(b)/2:], 2
			}
			o, _, _ := c.Feed(w.side, b, nil)
			if w.side == kafka.ToClient {
				out = append(out, o...)
			}
		}
		if before < 0 {
			t.Fatal("no big record")
		}
		app := tr.app[kafka.ToClient]
		st := c.State()
		tail := out[before:]
		if !bytes.HasPrefix(app, out[:before]) || !bytes.HasSuffix(app, tail) || len(tail) == 0 || len(out) >= len(app) {
			t.Errorf("%s: %d bytes before the gap, %d after, app %d", st.Suite, before, len(tail), len(app))
		}
		if sc := st.Side[kafka.ToClient]; sc.Lost != 2 || sc.TagFailures != 0 || sc.Resyncs != 1 {
			t.Errorf("%s: counters %+v", st.Suite, sc)
		}
	}
}
