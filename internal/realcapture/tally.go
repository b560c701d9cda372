package realcapture

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Tally counts what a client sent and received, by API (key or name), so a
// scenario waits for the exchanges it is there to show instead of
// sleeping for a guessed time. It is safe for the client's goroutines.
type Tally[K cmp.Ordered] struct {
	mu       sync.Mutex
	changed  chan struct{}
	sent     map[K]int
	received map[K]int
}

// NewTally returns an empty tally.
func NewTally[K cmp.Ordered]() *Tally[K] {
	return &Tally[K]{changed: make(chan struct{}), sent: map[K]int{}, received: map[K]int{}}
}

func (t *Tally[K]) add(m map[K]int, k K) {
	t.mu.Lock()
	m[k]++
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

// Sent counts one request of k written.
func (t *Tally[K]) Sent(k K) { t.add(t.sent, k) }

// Received counts one response of k read.
func (t *Tally[K]) Received(k K) { t.add(t.received, k) }

// SentCount is how many requests of k were written.
func (t *Tally[K]) SentCount(k K) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent[k]
}

// ReceivedCount is how many responses of k were read, and a channel that
// closes at the next count.
func (t *Tally[K]) ReceivedCount(k K) (int, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.received[k], t.changed
}

// WaitReceived waits until at least n responses of each of keys were read;
// its error names what was missing and what was sent.
func (t *Tally[K]) WaitReceived(ctx context.Context, n int, keys ...K) error {
	for {
		t.mu.Lock()
		var missing []K
		for _, k := range keys {
			if t.received[k] < n {
				missing = append(missing, k)
			}
		}
		ch := t.changed
		t.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d responses of %v: %w (%s)", n, missing, ctx.Err(), t)
		case <-ch:
		}
	}
}

// String lists what was sent: "client sent 3×0 1×18".
func (t *Tally[K]) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]K, 0, len(t.sent))
	for k := range t.sent {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("client sent")
	for _, k := range keys {
		fmt.Fprintf(&b, " %d×%v", t.sent[k], k)
	}
	return b.String()
}
