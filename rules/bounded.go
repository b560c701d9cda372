package rules

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// bounded is a map that forgets its oldest entries beyond a size: two
// generations, the current one taking new entries, and the previous one
// still read. When the current one is full it becomes the previous one and
// the old previous one is dropped whole, so memory stays under twice the
// generation size however long the capture, at no cost per lookup beyond a
// second map probe.
type bounded[K comparable, V any] struct {
	cur, prev map[K]V
	gen       int
}

// boundedGeneration is the size of one generation of the cross-connection
// maps (telemetry IDs, terminated IDs, assigned member IDs).
const boundedGeneration = 50000

func newBounded[K comparable, V any]() bounded[K, V] {
	return bounded[K, V]{cur: map[K]V{}, gen: boundedGeneration}
}

func (b *bounded[K, V]) get(k K) (V, bool) {
	if v, ok := b.cur[k]; ok {
		return v, true
	}
	v, ok := b.prev[k]
	return v, ok
}

func (b *bounded[K, V]) set(k K, v V) {
	if len(b.cur) >= b.gen {
		b.prev, b.cur = b.cur, make(map[K]V, b.gen/4)
	}
	b.cur[k] = v
}

func (b *bounded[K, V]) delete(k K) {
	delete(b.cur, k)
	delete(b.prev, k)
}

// pairs is a short list of keys and values, searched from end to end. At
// maxAsked entries it starts anew: requests never answered are let go.
type pairs[K comparable, V any] []pair[K, V]

type pair[K comparable, V any] struct {
	k K
	v V
}

func (p pairs[K, V]) index(k K) int {
	return slices.IndexFunc(p, func(e pair[K, V]) bool { return e.k == k })
}

func (p pairs[K, V]) get(k K) (V, bool) {
	if i := p.index(k); i >= 0 {
		return p[i].v, true
	}
	var zero V
	return zero, false
}

func (p *pairs[K, V]) set(k K, v V) {
	if i := p.index(k); i >= 0 {
		(*p)[i].v = v
		return
	}
	if len(*p) >= maxAsked {
		*p = nil
	}
	*p = append(*p, pair[K, V]{k, v})
}

// take returns and removes k's value.
func (p *pairs[K, V]) take(k K) (V, bool) {
	i := p.index(k)
	if i < 0 {
		var zero V
		return zero, false
	}
	v, last := (*p)[i].v, len(*p)-1
	(*p)[i] = (*p)[last]
	(*p)[last] = pair[K, V]{}
	*p = (*p)[:last]
	if last == 0 {
		*p = nil // an empty list keeps no memory
	}
	return v, true
}

// maxAsked caps the requests awaiting an answer, and the groups, that a
// connection's lists keep.
const maxAsked = 64

// maxKeptText caps the bytes of a capture's string (client, group and
// member IDs, up to 32 KiB each on the wire) that the engine keeps, in its
// state and in what it reports: tens of thousands of kept strings must not
// cost a gigabyte.
const maxKeptText = 256

// kept is a capture's string as the engine keeps it: whole up to
// maxKeptText bytes; a longer one cut at a character boundary and ended
// with its length and a SHA-256 digest, so that two kept strings are equal
// exactly when the strings sent were, and the report shows it was cut.
func kept(s string) string {
	if len(s) <= maxKeptText {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	cut := maxKeptText / 2
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	// Cloned: the cut must not hold the whole string's memory.
	return strings.Clone(s[:cut]) + fmt.Sprintf("…[%d bytes, sha256 %x]", len(s), sum[:16])
}
