package tlsdec

import (
	"bytes"
	"encoding/hex"
	"fmt"
)

// Label is a kind of secret of the NSS key log.
type label uint8

const (
	labelMaster          label = iota // CLIENT_RANDOM: TLS 1.2 master secret
	labelClientHandshake              // CLIENT_HANDSHAKE_TRAFFIC_SECRET
	labelServerHandshake              // SERVER_HANDSHAKE_TRAFFIC_SECRET
	labelClientTraffic                // CLIENT_TRAFFIC_SECRET_0
	labelServerTraffic                // SERVER_TRAFFIC_SECRET_0
	labelClientEarly                  // CLIENT_EARLY_TRAFFIC_SECRET (kept, unused)
	labelExporter                     // EXPORTER_SECRET (kept, unused)
	labelEarlyExporter                // EARLY_EXPORTER_SECRET (kept, unused)
	nLabels
)

var labels = [nLabels]string{
	"CLIENT_RANDOM",
	"CLIENT_HANDSHAKE_TRAFFIC_SECRET",
	"SERVER_HANDSHAKE_TRAFFIC_SECRET",
	"CLIENT_TRAFFIC_SECRET_0",
	"SERVER_TRAFFIC_SECRET_0",
	"CLIENT_EARLY_TRAFFIC_SECRET",
	"EXPORTER_SECRET",
	"EARLY_EXPORTER_SECRET",
}

// secrets are one client random's secrets, by label (nil: not logged).
type secrets [nLabels][]byte

// Format prints no secret, whatever the verb.
func (s secrets) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("secrets")) }

// KeyLog holds the secrets of an NSS key log, keyed by client random. Its
// zero value is empty, unbounded and ready; Add grows it. A KeyLog is not
// safe for use by several goroutines while it grows.
type KeyLog struct {
	m map[[32]byte]*secrets
	// order is the client randoms in the order they came, a ring from
	// head, kept only under a Limit.
	order      [][32]byte
	head       int
	max        int
	keepNewest bool
	evicted    int64
}

// Limit bounds the key log to n client randoms (0: no bound). Past it a
// new client random is not kept, or with keepNewest the oldest is
// forgotten to make room: a key log that grows for days (live) needs a
// client's secrets only until its connection's handshake has been read,
// and a connection keeps the secrets it found; a whole key log given for
// a file is needed from its first line. Call it before Add: the client
// randoms already held are kept in no order.
func (k *KeyLog) Limit(n int, keepNewest bool) {
	k.max, k.keepNewest, k.order, k.head = max(n, 0), keepNewest, nil, 0
	if k.max == 0 {
		return
	}
	for cr := range k.m {
		if len(k.order) == k.max {
			delete(k.m, cr)
			k.evicted++
			continue
		}
		k.order = append(k.order, cr)
	}
}

// Evicted counts the client randoms forgotten under the Limit (keepNewest),
// or the lines of new ones not kept over it.
func (k *KeyLog) Evicted() int64 {
	if k == nil {
		return 0
	}
	return k.evicted
}

// String says how many client randoms the key log holds, never a secret.
func (k KeyLog) String() string {
	return fmt.Sprintf("key log (%d client randoms)", len(k.m))
}

// GoString is String: %#v must not print secrets either.
func (k KeyLog) GoString() string { return k.String() }

// Format prints String for every verb, so that no verb reaches the secrets.
func (k KeyLog) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// Len is the number of client randoms the key log holds.
func (k *KeyLog) Len() int {
	if k == nil {
		return 0
	}
	return len(k.m)
}

// LineError is a key log line that was not taken. It names the line and
// the reason, never the line's text (which may hold a secret).
type LineError struct {
	Line   int // 1-based; 0 when the line came alone to Add
	Reason string
}

func (e *LineError) Error() string {
	if e.Line == 0 {
		return "key log: " + e.Reason
	}
	return fmt.Sprintf("key log line %d: %s", e.Line, e.Reason)
}

// ParseKeyLog reads an NSS key log: every line it can take is kept, and
// each other one returns an error naming its line number.
func ParseKeyLog(text []byte) (*KeyLog, []error) {
	k := &KeyLog{}
	return k, k.AddAll(text)
}

// AddAll adds every line of text (a whole key log, or what was appended to
// one) and returns an error for each line not taken, numbered from 1.
func (k *KeyLog) AddAll(text []byte) []error {
	var errs []error
	for n := 1; len(text) > 0; n++ {
		line, rest, _ := bytes.Cut(text, []byte{'\n'})
		text = rest
		if err := k.Add(line); err != nil {
			if le, ok := err.(*LineError); ok {
				le.Line = n
			}
			errs = append(errs, err)
		}
	}
	return errs
}

// Add adds one line of a key log. Blank lines and # comments are taken and
// ignored; a line of an unknown label is an error, as is one whose client
// random or secret is not hexadecimal of the right length.
func (k *KeyLog) Add(line []byte) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '#' {
		return nil
	}
	f := bytes.Fields(line)
	if len(f) != 3 {
		return &LineError{Reason: fmt.Sprintf("%d fields, want 3 (label, client random, secret)", len(f))}
	}
	l := label(0)
	for ; l < nLabels; l++ {
		if string(f[0]) == labels[l] {
			break
		}
	}
	if l == nLabels {
		return &LineError{Reason: fmt.Sprintf("unknown label %q", clip(f[0]))}
	}
	var cr [32]byte
	if len(f[1]) != 64 {
		return &LineError{Reason: fmt.Sprintf("client random of %d hex digits, want 64", len(f[1]))}
	}
	if _, err := hex.Decode(cr[:], f[1]); err != nil {
		return &LineError{Reason: "client random is not hexadecimal"}
	}
	want := []int{96}
	if l != labelMaster {
		want = []int{64, 96} // SHA-256 or SHA-384 secrets
	}
	if len(f[2]) != want[0] && (len(want) == 1 || len(f[2]) != want[1]) {
		return &LineError{Reason: fmt.Sprintf("%s secret of %d hex digits, want %v", labels[l], len(f[2]), want)}
	}
	sec := make([]byte, len(f[2])/2)
	if _, err := hex.Decode(sec, f[2]); err != nil {
		return &LineError{Reason: labels[l] + " secret is not hexadecimal"}
	}
	if k.m == nil {
		k.m = map[[32]byte]*secrets{}
	}
	s := k.m[cr]
	if s == nil {
		if k.max > 0 && len(k.m) >= k.max && !k.keepNewest {
			k.evicted++
			return nil // counted, not an error of the line
		}
		s = &secrets{}
		k.remember(cr)
		k.m[cr] = s
	}
	s[l] = sec
	return nil
}

// remember notes a new client random's place: the ring fills in order,
// then each new one takes the oldest's slot.
func (k *KeyLog) remember(cr [32]byte) {
	if k.max == 0 {
		return
	}
	if len(k.order) < k.max {
		k.order = append(k.order, cr)
		return
	}
	delete(k.m, k.order[k.head])
	k.evicted++
	k.order[k.head] = cr
	k.head = (k.head + 1) % k.max
}

// clip keeps a label short in an error (a label is not a secret, but a
// line of garbage may be long).
func clip(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// lookup returns the secrets logged for a client random, or nil.
func (k *KeyLog) lookup(cr [32]byte) *secrets {
	if k == nil || k.m == nil {
		return nil
	}
	return k.m[cr]
}
