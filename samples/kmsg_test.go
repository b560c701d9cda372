package samples

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// roundTrip decodes body bytes with kmsg into a fresh message of the same
// kind and version and encodes it again.
func roundTrip(proto Body, b []byte) ([]byte, error) {
	var fresh interface {
		Body
		SetVersion(int16)
		ReadFrom([]byte) error
	}
	switch p := proto.(type) {
	case kmsg.Request:
		fresh = kmsg.RequestForKey(p.Key())
	case kmsg.Response:
		fresh = kmsg.ResponseForKey(p.Key())
	default:
		return nil, fmt.Errorf("%T is not a kmsg message", proto)
	}
	if fresh == nil {
		return nil, fmt.Errorf("kmsg does not know key %d", proto.Key())
	}
	fresh.SetVersion(proto.GetVersion())
	if err := fresh.ReadFrom(b); err != nil {
		return nil, err
	}
	return fresh.AppendTo(nil), nil
}

// TestKmsgRoundTrip decodes every body written back with kmsg and requires
// the exact bytes. The v1 telemetry bodies, which kmsg v1.15.1 does not
// know, are read as the v0 body with a ZERO ClientInstanceId put back
// where v1 took it out, and cut again.
func TestKmsgRoundTrip(t *testing.T) {
	n := 0
	for _, b := range allBuilt(t) {
		for i, m := range b.Messages {
			body := m.Bytes[m.BodyAt:]
			var got []byte
			var err error
			if v1, ok := m.Body.(*v1Body); ok {
				v0, cut := v1.V0()
				full := body
				if cut >= 0 {
					full = append(append(append([]byte{}, body[:cut]...), make([]byte, 16)...), body[cut:]...)
				}
				got, err = roundTrip(v0, full)
				if err == nil && cut >= 0 {
					got = append(got[:cut:cut], got[cut+16:]...)
				}
			} else {
				got, err = roundTrip(m.Body, body)
			}
			if err != nil {
				t.Errorf("%s: message %d (%s v%d): kmsg cannot read it back: %v", b.Scenario.Name, i, apiName(m.Key), m.Version, err)
				continue
			}
			if !bytes.Equal(got, body) {
				t.Errorf("%s: message %d (%s v%d): kmsg reads %d bytes back as %d different ones", b.Scenario.Name, i,
					apiName(m.Key), m.Version, len(body), len(got))
			}
			n++
		}
	}
	t.Logf("%d bodies read back", n)
}

// TestRecordBatches has franz-go's consumer read every record batch the
// scenarios carry (Produce and Fetch bodies): it checks the CRC-32C and
// parses every record.
func TestRecordBatches(t *testing.T) {
	n := 0
	check := func(where string, batch []byte, want int) {
		t.Helper()
		rp := &kmsg.FetchResponseTopicPartition{HighWatermark: 1 << 40, RecordBatches: batch}
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"}, rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			t.Errorf("%s: %v", where, fp.Err)
		} else if len(fp.Records) != want {
			t.Errorf("%s: %d records, want %d", where, len(fp.Records), want)
		}
		n++
	}
	check("recordBatch", recordBatch(100, 5, "orders"), 5)
	for _, b := range allBuilt(t) {
		if b.Scenario.Large && testing.Short() {
			continue
		}
		for _, m := range b.Messages {
			switch body := m.Body.(type) {
			case *kmsg.ProduceRequest:
				for _, tp := range body.Topics {
					for _, p := range tp.Partitions {
						var rb kmsg.RecordBatch
						if err := rb.ReadFrom(p.Records); err != nil {
							t.Fatal(err)
						}
						check(b.Scenario.Name, p.Records, int(rb.NumRecords))
					}
				}
			case *kmsg.FetchResponse:
				for _, tp := range body.Topics {
					for _, p := range tp.Partitions {
						if len(p.RecordBatches) > 0 {
							var rb kmsg.RecordBatch
							if err := rb.ReadFrom(p.RecordBatches); err != nil {
								t.Fatal(err)
							}
							check(b.Scenario.Name, p.RecordBatches, int(rb.NumRecords))
						}
					}
				}
			}
		}
	}
	t.Logf("%d record batches read", n)
}
