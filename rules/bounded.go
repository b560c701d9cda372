package rules

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
