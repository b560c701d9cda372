package pipeline

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/result"

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
		held     int64  // Options.TLSHeldBytes
		decoded  bool
		notKafka string
	}{
		{"the key written after the first poll", keys, 0, true, ""},
		{"no key at all", nil, 0, false, rules.TLSNoKey},
		{"the key late, the ciphertext held over the budget", keys, 100, false, rules.TLSKeyNotYetKnown},
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
			opt := Options{Files: []string{"../testdata/tls/violating-tls13.pcap"}, TLSMore: more, TLSHeldBytes: tc.held}
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

// tlsRun runs the pipeline over the violating TLS 1.3 fixture's port.
func tlsRun(t *testing.T, opt Options) (*collector, result.Summary) {
	t.Helper()
	ports, err := reassembly.ParsePorts([]string{"37113", "9092"})
	if err != nil {
		t.Fatal(err)
	}
	opt.Reassembly.Ports = ports
	return runPipeline(t, opt)
}

// TestTLSKeyLogCap: a key log with more client randoms than TLSMaxKeys
// keeps its first ones, and counts the others; the connection whose key
// was not kept is TLS (no key).
func TestTLSKeyLogCap(t *testing.T) {
	other, err := os.ReadFile("../testdata/tls/kgo-tls12.keylog")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := os.ReadFile("../testdata/tls/violating-tls13.keylog")
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} {
		both := append(append([]byte{}, other...), keys...)
		col, sum := tlsRun(t, Options{Files: []string{"../testdata/tls/violating-tls13.pcap"}, TLSKeyLog: both, TLSMaxKeys: 1, Workers: workers})
		if len(col.closed) != 1 || col.closed[0].End.Outcome.NotKafka != rules.TLSNoKey {
			t.Errorf("%d workers: connections %+v, want one, TLS (no key)", workers, col.closed)
		}
		if sum.TLSKeysNotKept == 0 {
			t.Errorf("%d workers: no client random counted as not kept", workers)
		}
		col, sum = tlsRun(t, Options{Files: []string{"../testdata/tls/violating-tls13.pcap"}, TLSKeyLog: keys, Workers: workers})
		if len(col.msgs) == 0 || sum.TLSKeysNotKept != 0 {
			t.Errorf("%d workers, room for every key: %d messages, %d client randoms not kept", workers, len(col.msgs), sum.TLSKeysNotKept)
		}
	}
}

// TestTLSSecretsBlockMidFile: a pcapng whose secrets block for a
// connection comes after that connection's handshake (as live
// --write-secrets writes it: the client writes its keys as it connects)
// is decrypted from the ciphertext held meanwhile, with any worker count.
func TestTLSSecretsBlockMidFile(t *testing.T) {
	keys, err := os.ReadFile("../testdata/tls/violating-tls13.keylog")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../testdata/tls/violating-tls13.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mid.pcapng")
	rec, err := capture.NewRecorder(path, r.LinkType(), 262144, capture.RecordOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A comment only, as live --write-secrets starts a file whose key log
	// was empty.
	if err := rec.WriteSecrets(capture.SecretsTLSKeyLog, []byte("# the keys follow\n")); err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := rec.Write(ci, data); err != nil {
			t.Fatal(err)
		}
		if n == 18 { // the last packet with data: only the reset follows
			if err := rec.WriteSecrets(capture.SecretsTLSKeyLog, keys); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	want, _ := tlsRun(t, Options{Files: []string{"../testdata/tls/violating-tls13.pcap"}, TLSKeyLog: keys})
	for _, workers := range []int{1, 3} {
		col, _ := tlsRun(t, Options{Files: []string{path}, TLSSecrets: true, Workers: workers})
		sameMessages(t, col.msgs, want.msgs)
		if len(col.closed) != 1 || col.closed[0].End.Outcome.NotKafka != "" || col.closed[0].End.Outcome.TLS == "" {
			t.Errorf("%d workers: connections %+v, want one, decrypted", workers, col.closed)
		}
	}
}
