package pipeline

import (
	"os"
	"testing"

	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/rules"
)

// TestTLSKeyArrivesBeforeClose: with a key log that grows (live), the
// keys of a short connection are read when it closes, if the periodic poll
// has not read them yet; without any key it is named TLS (no key).
func TestTLSKeyArrivesBeforeClose(t *testing.T) {
	keys, err := os.ReadFile("../testdata/tls/violating-tls13.keylog")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := reassembly.ParsePorts([]string{"37113", "9092"}) // runPipeline wants 9092 among them
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		later    []byte // what the key log holds after the first poll
		decoded  bool
		notKafka string
	}{
		{"the key written after the first poll", keys, true, ""},
		{"no key at all", nil, false, rules.TLSNoKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			polls := 0
			more := func() []byte {
				polls++
				if polls == 1 {
					return nil // the first poll, as the run starts
				}
				later := tc.later
				tc.later = nil
				return later
			}
			opt := Options{Files: []string{"../testdata/tls/violating-tls13.pcap"}, TLSMore: more}
			opt.Reassembly.Ports = ports
			col, _ := runPipeline(t, opt)
			if got := len(col.msgs) > 0; got != tc.decoded {
				t.Errorf("%d messages decoded, want some: %v", len(col.msgs), tc.decoded)
			}
			if len(col.closed) != 1 {
				t.Fatalf("%d connections, want 1", len(col.closed))
			}
			if got := col.closed[0].End.Outcome.NotKafka; got != tc.notKafka {
				t.Errorf("not Kafka %q, want %q", got, tc.notKafka)
			}
		})
	}
}
