package fleet_test

import (
	"testing"

	"github.com/kidscope/kidscope/fleet"
)

// FuzzDecode: whatever a topic holds, Decode returns a record or an error,
// and a Merger replays what decodes without panicking.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"schema":1,"type":"agent","agent":"a","run":"r","seq":1,"hello":{"time":"2026-01-01T00:00:00Z","source":"eth0","kidscope_version":"v","published":1,"dropped":0}}`,
		`{"schema":1,"type":"observation","agent":"a","run":"r","seq":2,"observation":{"kind":"open","conn":{"id":1,"client":"10.0.0.1:5000","broker":"10.0.0.2:9092","first":{"file":"eth0","frame":1,"time":"2026-01-01T00:00:00Z"}},"at":{"file":"eth0","frame":1,"time":"2026-01-01T00:00:00Z"}}}`,
		`{"schema":1,"type":"observation","agent":"a","run":"r","seq":3,"observation":{"kind":"request","conn":{"id":1,"client":"10.0.0.1:5000","broker":"10.0.0.2:9092","first":{"file":"eth0","frame":1,"time":"2026-01-01T00:00:00Z"}},"instance":"AQIDBAUGBwgJCgsMDQ4PEA","at":{"file":"eth0","frame":3,"time":"2026-01-01T00:00:01Z"},"message":{"side":"request","api_key":72,"api_version":0,"header_version":2,"correlation_id":4,"client_id":"c","instance_id":"AQIDBAUGBwgJCgsMDQ4PEA","body":{"client_instance_id":"AQIDBAUGBwgJCgsMDQ4PEA","terminating":true}},"header_rules":[{"rule":"header-id-changed","expected":{"kind":1},"seen":{"kind":2}}]}}`,
		`{"schema":1,"type":"finding","agent":"a","run":"r","seq":4,"finding":{"rule":"header-id-changed","at":{"file":"eth0","frame":3,"time":"2026-01-01T00:00:01Z"},"conn":{"id":1,"client":"10.0.0.1:5000","broker":"10.0.0.2:9092","first":{"file":"eth0","frame":1,"time":"2026-01-01T00:00:00Z"}},"api_key":3,"api_version":12,"correlation_id":2,"expected":{"kind":1},"seen":{"kind":2},"answer_state":2}}`,
		`{"schema":2,"type":"finding","agent":"a","run":"r","seq":5,"finding":{"rule":"stream-gap","at":{"file":"eth0","frame":9,"time":"2026-01-01T00:00:02Z"},"conn":{"id":1,"client":"10.0.0.1:5000","broker":"10.0.0.2:9092","first":{"file":"eth0","frame":1,"time":"2026-01-01T00:00:00Z"}},"api_key":0,"api_version":0,"correlation_id":0,"expected":{},"seen":{},"stream_kind":"lost-bytes","stream_side":"to-client","resynced":true,"skipped":120}}`,
		`{"schema":2,"type":"finding","agent":"a","run":"r","seq":6,"finding":{"rule":"header-id-changed","at":{"file":"eth0","frame":3,"time":"2026-01-01T00:00:01Z"},"related":[{"ref":{"file":"eth0","frame":2,"time":"2026-01-01T00:00:01Z"},"role":"established"}],"conn":{"id":1,"client":"10.0.0.1:5000","broker":"10.0.0.2:9092","first":{"file":"eth0","frame":1,"time":"2026-01-01T00:00:00Z"}},"api_key":3,"api_version":12,"correlation_id":2,"expected":{"kind":"id","id":"AQIDBAUGBwgJCgsMDQ4PEA"},"seen":{"kind":"a-kind-of-a-later-release"},"answer_state":"answered"}}`,
		`{"schema":99,"type":"observation","agent":"a","run":"r"}`,
		"\x00\xffgarbage",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := fleet.Decode(b)
		if err != nil {
			if r != nil {
				t.Fatal("a record and an error")
			}
			return
		}
		m := fleet.NewMerger(fleet.Options{})
		m.Add(r, false)
		m.Add(r, true) // read twice
		m.Flush()
		_ = m.Result()
	})
}
