package samples

import (
	"sync"
	"testing"
)

var (
	builtOnce sync.Once
	builtAll  []*Built
	builtErr  error
)

// allBuilt builds every scenario once per test binary.
func allBuilt(t *testing.T) []*Built {
	t.Helper()
	builtOnce.Do(func() {
		for _, s := range All() {
			b, err := Build(s)
			if err != nil {
				builtErr = err
				return
			}
			builtAll = append(builtAll, b)
		}
	})
	if builtErr != nil {
		t.Fatal(builtErr)
	}
	return builtAll
}

// connHasLoss reports whether a connection of the scenario loses bytes
// for good (a Lose without Retransmit, or a mid-stream start): tshark is
// known to lose its way there.
func connHasLoss(b *Built, conn int) bool {
	c := b.Conns[conn]
	if c.MidStream {
		return true
	}
	for _, m := range b.Messages {
		if m.Conn == conn && m.Request && m.Frame == 0 {
			return true
		}
	}
	return false
}
