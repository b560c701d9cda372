package tlsdec

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/kafka"
	"golang.org/x/crypto/chacha20poly1305"
)

// synth writes a TLS 1.3 connection record by record, sealing with
// crypto/cipher and x/crypto directly (the keys come from trafficKeys,
// which the RFC 8448 vectors check): for the suites and messages crypto/tls
// cannot be made to send (AES-256-GCM, ChaCha20 on AES hardware, KeyUpdate).
type synth struct {
	t       testing.TB
	suite   *suite
	cr      [32]byte
	keylog  string
	traffic [2][]byte
	secret  [2][]byte
	aead    [2]cipher.AEAD
	iv      [2][]byte
	seq     [2]uint64
	stream  [2][]byte
	ends    [2][]int // each record's end in stream
	app     [2][]byte
}

func fixed(label string, n int) []byte {
	var out []byte
	for i := 0; len(out) < n; i++ {
		h := sha256.Sum256([]byte(fmt.Sprint(label, i)))
		out = append(out, h[:]...)
	}
	return out[:n]
}

func newSynth(t testing.TB, id uint16) *synth {
	s := &synth{t: t, suite: findSuite(id)}
	copy(s.cr[:], fixed("client random", 32))
	n := s.suite.hash().Size()
	var kl strings.Builder
	hs := [2][]byte{fixed("chs", n), fixed("shs", n)}
	s.traffic = [2][]byte{fixed("cts", n), fixed("sts", n)}
	for i, l := range []string{"CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"} {
		sec := [][]byte{hs[0], hs[1], s.traffic[0], s.traffic[1]}[i]
		fmt.Fprintf(&kl, "%s %x %x\n", l, s.cr, sec)
	}
	s.keylog = kl.String()
	// ClientHello and ServerHello in the clear.
	ch := []byte{3, 3}
	ch = append(ch, s.cr[:]...)
	ch = append(ch, 0, 0, 2, byte(id>>8), byte(id), 1, 0)
	s.clear(kafka.ToBroker, typeHandshake, hsMsg(1, ch))
	sh := []byte{3, 3}
	sh = append(sh, fixed("server random", 32)...)
	sh = append(sh, 0, byte(id>>8), byte(id), 0, 0, 6, 0, 0x2b, 0, 2, 3, 4)
	s.clear(kafka.ToClient, typeHandshake, hsMsg(2, sh))
	s.clear(kafka.ToBroker, typeCCS, []byte{1})
	s.keys(kafka.ToClient, hs[1])
	s.keys(kafka.ToBroker, hs[0])
	s.enc(kafka.ToClient, typeHandshake, hsMsg(8, []byte{0, 0}), 0)
	s.enc(kafka.ToClient, typeHandshake, hsMsg(20, fixed("sfin", n)), 3)
	s.keys(kafka.ToClient, s.traffic[1])
	s.enc(kafka.ToBroker, typeHandshake, hsMsg(20, fixed("cfin", n)), 0)
	s.keys(kafka.ToBroker, s.traffic[0])
	return s
}

func hsMsg(typ byte, body []byte) []byte {
	return append([]byte{typ, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
}

func (s *synth) clear(d kafka.Direction, typ byte, body []byte) {
	s.stream[d] = append(s.stream[d], typ, 3, 3, byte(len(body)>>8), byte(len(body)))
	s.stream[d] = append(s.stream[d], body...)
	s.ends[d] = append(s.ends[d], len(s.stream[d]))
}

func (s *synth) keys(d kafka.Direction, secret []byte) {
	s.secret[d] = secret
	key, iv := trafficKeys(s.suite.hash, secret, s.suite.keyLen)
	var err error
	if s.suite.chacha {
		s.aead[d], err = chacha20poly1305.New(key)
	} else {
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			s.aead[d], err = cipher.NewGCM(b)
		}
	}
	if err != nil {
		s.t.Fatal(err)
	}
	s.iv[d], s.seq[d] = iv, 0
}

// enc seals one record: content, its type, pad zero bytes.
func (s *synth) enc(d kafka.Direction, typ byte, content []byte, pad int) {
	inner := append(append(bytes.Clone(content), typ), make([]byte, pad)...)
	n := len(inner) + 16
	hdr := []byte{typeAppData, 3, 3, byte(n >> 8), byte(n)}
	nonce := bytes.Clone(s.iv[d])
	var sq [8]byte
	binary.BigEndian.PutUint64(sq[:], s.seq[d])
	for i := range sq {
		nonce[4+i] ^= sq[i]
	}
	s.seq[d]++
	s.stream[d] = append(s.stream[d], hdr...)
	s.stream[d] = s.aead[d].Seal(s.stream[d], nonce, inner, hdr)
	s.ends[d] = append(s.ends[d], len(s.stream[d]))
	if typ == typeAppData {
		s.app[d] = append(s.app[d], content...)
	}
}

// keyUpdate sends a KeyUpdate and moves d to the next traffic secret.
func (s *synth) keyUpdate(d kafka.Direction) {
	s.enc(d, typeHandshake, hsMsg(24, []byte{0}), 0)
	s.keys(d, nextSecret(s.suite.hash, s.secret[d]))
}

func (s *synth) appData(d kafka.Direction, tag string, n int) []byte {
	b := bytes.Repeat([]byte(tag), n/len(tag)+1)[:n]
	s.enc(d, typeAppData, b, len(tag)%5)
	return b
}

// feed gives the Conn the ClientHello, then all of the server's bytes,
// then the rest of the client's, in chunks of n.
func feedSynth(c *Conn, s *synth, n int) (out [2][]byte) {
	first := s.ends[kafka.ToBroker][0]
	parts := []struct {
		d kafka.Direction
		b []byte
	}{{kafka.ToBroker, s.stream[0][:first]}, {kafka.ToClient, s.stream[1]}, {kafka.ToBroker, s.stream[0][first:]}}
	for _, p := range parts {
		for b := p.b; len(b) > 0; {
			k := min(n, len(b))
			o, _, _ := c.Feed(p.d, b[:k], []kafka.Span{{End: k}})
			out[p.d] = append(out[p.d], o...)
			b = b[k:]
		}
	}
	return out
}

func TestSynthTLS13SuitesAndKeyUpdate(t *testing.T) {
	for _, id := range []uint16{0x1301, 0x1302, 0x1303} {
		s := newSynth(t, id)
		for i := range 5 {
			s.appData(kafka.ToBroker, "request", 100+i*3000)
			s.appData(kafka.ToClient, "response", 50+i*4000)
		}
		s.keyUpdate(kafka.ToBroker)
		s.appData(kafka.ToBroker, "after update", 1000)
		s.keyUpdate(kafka.ToClient)
		s.keyUpdate(kafka.ToClient)
		s.appData(kafka.ToClient, "after two updates", 16384)
		for _, n := range []int{1 << 20, 1, 1000} {
			c := NewConn(keysOf(t, []byte(s.keylog)), Options{})
			out := feedSynth(c, s, n)
			st := c.State()
			for d := range 2 {
				if !bytes.Equal(out[d], s.app[d]) {
					t.Errorf("%s chunks of %d: %v got %d bytes, want %d (%+v)", s.suite.name, n, kafka.Direction(d), len(out[d]), len(s.app[d]), st.Side[d])
				}
				if st.Side[d].TagFailures != 0 {
					t.Errorf("%s: %v tag failures", s.suite.name, kafka.Direction(d))
				}
			}
			if st.Summary() != "TLS 1.3 "+s.suite.name+", key found" {
				t.Errorf("summary %q", st.Summary())
			}
		}
	}
}

// records returns the records of direction d after the handshake as
// [start, end) pairs.
func appRecords(s *synth, d kafka.Direction, from int) [][2]int {
	var out [][2]int
	for i := from; i < len(s.ends[d]); i++ {
		out = append(out, [2]int{s.ends[d][i-1], s.ends[d][i]})
	}
	return out
}

func tenRecords(t *testing.T) (*synth, [][]byte, [][2]int) {
	s := newSynth(t, 0x1301)
	hsRecords := len(s.ends[kafka.ToBroker])
	var msgs [][]byte
	for i := range 10 {
		msgs = append(msgs, s.appData(kafka.ToBroker, fmt.Sprintf("req%d-", i), 500+i*100))
	}
	return s, msgs, appRecords(s, kafka.ToBroker, hsRecords)
}

// feedClient gives the Conn the handshake of both sides and then the
// client's records as parts.
func feedClient(t *testing.T, s *synth, parts ...any) (*Conn, []byte, []error) {
	c := NewConn(keysOf(t, []byte(s.keylog)), Options{})
	var out []byte
	var errs []error
	hs := s.ends[kafka.ToBroker][2] // ClientHello, CCS, Finished
	c.Feed(kafka.ToBroker, s.stream[0][:s.ends[0][0]], nil)
	c.Feed(kafka.ToClient, s.stream[1], nil)
	o, _, _ := c.Feed(kafka.ToBroker, s.stream[0][s.ends[0][0]:hs], nil)
	out = append(out, o...)
	for _, p := range parts {
		if p == nil {
			c.Gap(kafka.ToBroker)
			continue
		}
		o, _, err := c.Feed(kafka.ToBroker, p.([]byte), nil)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, o...)
	}
	return c, out, errs
}

func TestGapCostsItsRecords(t *testing.T) {
	s, msgs, recs := tenRecords(t)
	w := s.stream[kafka.ToBroker]
	mid3 := (recs[3][0] + recs[3][1]) / 2
	mid4 := (recs[4][0] + recs[4][1]) / 2
	c, out, _ := feedClient(t, s, w[recs[0][0]:mid3], nil, w[mid4:])
	want := bytes.Join(append(msgs[:3:3], msgs[5:]...), nil)
	if !bytes.Equal(out, want) {
		t.Errorf("got %d bytes, want %d", len(out), len(want))
	}
	st := c.State().Side[kafka.ToBroker]
	if st.Lost != 2 || st.Gaps != 1 || st.TagFailures != 0 || st.Resyncs != 1 || st.AppRecords != 8 {
		t.Errorf("counters %+v", st)
	}
	// A gap between records costs none.
	c, out, _ = feedClient(t, s, w[recs[0][0]:recs[5][0]], nil, w[recs[5][0]:])
	if !bytes.Equal(out, bytes.Join(msgs, nil)) || c.State().Side[0].Lost != 0 {
		t.Errorf("gap between records: %d bytes, %+v", len(out), c.State().Side[0])
	}
	// More records lost than the window: nothing more decrypts, and what
	// the side holds stays bounded.
	c = NewConn(keysOf(t, []byte(s.keylog)), Options{SeqWindow: 2})
	c.Feed(kafka.ToBroker, w[:s.ends[0][0]], nil)
	c.Feed(kafka.ToClient, s.stream[1], nil)
	c.Feed(kafka.ToBroker, w[s.ends[0][0]:recs[0][0]], nil)
	c.Gap(kafka.ToBroker)
	o, _, _ := c.Feed(kafka.ToBroker, w[recs[6][0]:], nil)
	if len(o) != 0 || len(c.side[0].buf) > MaxRecord+5 {
		t.Errorf("window of 2 after 6 lost records: %d bytes out, %d held", len(o), len(c.side[0].buf))
	}
}

func TestCorruptTag(t *testing.T) {
	s, msgs, recs := tenRecords(t)
	w := bytes.Clone(s.stream[kafka.ToBroker])
	w[recs[4][1]-1] ^= 0x55
	c, out, errs := feedClient(t, s, w[recs[0][0]:])
	want := bytes.Join(append(msgs[:4:4], msgs[5:]...), nil)
	if !bytes.Equal(out, want) {
		t.Errorf("got %d bytes, want %d", len(out), len(want))
	}
	if st := c.State().Side[0]; st.TagFailures != 1 || st.AppRecords != 9 || len(errs) != 1 {
		t.Errorf("counters %+v, errors %v", st, errs)
	}
}

func TestOversizedHeader(t *testing.T) {
	s, msgs, recs := tenRecords(t)
	w := s.stream[kafka.ToBroker]
	bogus := append([]byte{typeAppData, 3, 3, 0xff, 0xff}, make([]byte, 100)...)
	c, out, errs := feedClient(t, s, w[recs[0][0]:recs[3][0]], bogus, w[recs[3][0]:])
	if !bytes.Equal(out, bytes.Join(msgs, nil)) {
		t.Errorf("got %d bytes, want %d", len(out), len(bytes.Join(msgs, nil)))
	}
	st := c.State().Side[0]
	if st.BadHeaders != 1 || st.Resyncs != 1 || st.Lost != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "length 65535") {
		t.Errorf("counters %+v, errors %v", st, errs)
	}
}

func TestNotTLSPassesThrough(t *testing.T) {
	c := NewConn(nil, Options{})
	kafkaReq := []byte{0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0}
	o, _, err := c.Feed(kafka.ToBroker, kafkaReq[:3], []kafka.Span{{End: 3, At: kafka.FrameRef{Frame: 1}}})
	if len(o) != 0 || err != nil {
		t.Fatal("decided on 3 bytes")
	}
	o, sp, _ := c.Feed(kafka.ToBroker, kafkaReq[3:], []kafka.Span{{End: len(kafkaReq) - 3, At: kafka.FrameRef{Frame: 2}}})
	if !bytes.Equal(o, kafkaReq) || len(sp) != 2 || sp[1].End != len(kafkaReq) || !c.State().Plain {
		t.Errorf("pass-through %x %v %+v", o, sp, c.State())
	}
}

// A stream of plausible headers whose records never verify costs a few
// trials, not one per byte: the direction is abandoned.
func TestHostileResyncAbandons(t *testing.T) {
	s, _, recs := tenRecords(t)
	w := s.stream[kafka.ToBroker]
	hostile := bytes.Repeat([]byte{typeAppData, 3, 3, 0x40, 0x00}, 4*MaxRecord/5)
	c, out, _ := feedClient(t, s, w[recs[0][0]:recs[2][0]], nil, hostile, w[recs[2][0]:])
	st := c.State().Side[0]
	if len(out) == 0 || !st.Abandoned || st.SkippedBytes == 0 || st.TagFailures != 0 {
		t.Errorf("%d bytes out, %+v", len(out), st)
	}
}

// A gap that takes the client's Finished: the next records are tried with
// the application keys.
func TestGapOverFinished(t *testing.T) {
	s, msgs, recs := tenRecords(t)
	w := s.stream[kafka.ToBroker]
	c := NewConn(keysOf(t, []byte(s.keylog)), Options{})
	c.Feed(kafka.ToBroker, w[:s.ends[0][0]], nil)
	c.Feed(kafka.ToClient, s.stream[1], nil)
	fin := s.ends[0][1] // the CCS ends, the Finished starts
	c.Feed(kafka.ToBroker, w[s.ends[0][0]:fin+10], nil)
	c.Gap(kafka.ToBroker)
	out, _, _ := c.Feed(kafka.ToBroker, w[(recs[0][0]+recs[0][1])/2:], nil)
	if want := bytes.Join(msgs[1:], nil); !bytes.Equal(out, want) {
		t.Errorf("got %d bytes, want %d (%+v)", len(out), len(want), c.State().Side[0])
	}
	if st := c.State().Side[0]; st.Lost != 1 || st.TagFailures != 0 {
		t.Errorf("counters %+v", st)
	}
}
