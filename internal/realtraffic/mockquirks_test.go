package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/internal/realcapture"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
)

// mockEvent is one request or response of a capture, with what the quirk
// tests look at.
type mockEvent struct {
	conn    int
	request bool
	key     int16
	version int16
	frame   int64
	size    int32
	answer  decode.Answer
	body    decode.Body
	hasBody bool
	bodyErr error
}

type mockSink struct{ evs []mockEvent }

func (s *mockSink) Event(c *pipeline.Conn, e *decode.Event) {
	if e.Kind != decode.EventRequest && e.Kind != decode.EventResponse {
		return
	}
	m := &e.Msg
	s.evs = append(s.evs, mockEvent{conn: c.ID, request: e.Kind == decode.EventRequest, key: m.Request.APIKey,
		version: m.Request.APIVersion, frame: e.At.Frame, size: m.Size, answer: m.Answer, body: m.Body, hasBody: m.HasBody, bodyErr: m.BodyErr})
}

func (s *mockSink) Closed(*pipeline.Conn) {}

// mockCapture decodes a real capture against librdkafka's mock cluster
// (the committed one, or the fresh one CI made), every answer read whole.
func mockCapture(t *testing.T, name string) []mockEvent {
	t.Helper()
	dir := committedDir
	if d := os.Getenv(freshDirEnv); d != "" {
		dir = d
	}
	file := filepath.Join(dir, name+".pcap")
	m, err := realcapture.ReadMeta(filepath.Join(dir, name+".meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, p := range m.Ports {
		specs = append(specs, strconv.Itoa(int(p)))
	}
	ports, err := reassembly.ParsePorts(specs)
	if err != nil {
		t.Fatal(err)
	}
	sink := &mockSink{}
	if _, err := pipeline.Run(context.Background(), pipeline.Options{Files: []string{file},
		Reassembly: reassembly.Options{Ports: ports}, Decode: decode.Options{AllAnswers: true}}, sink); err != nil {
		t.Fatal(err)
	}
	return sink.evs
}

// TestMockQuirks pins what librdkafka's mock cluster does that a real
// broker does not, one quirk each, so that the captures keep showing them
// and kidscope keeps reading them.
func TestMockQuirks(t *testing.T) {
	t.Run("one instance ID for every client, subscription ID 0", func(t *testing.T) {
		ids := map[kafka.UUID][]int{}
		n := 0
		for _, e := range mockCapture(t, "rdkafka-two-producers-mock") {
			if e.request || e.key != decode.KeyGetTelemetrySubscriptions || !e.hasBody || e.answer.ErrorCode != 0 {
				continue
			}
			n++
			ids[e.body.InstanceID] = append(ids[e.body.InstanceID], e.conn)
			if e.body.SubscriptionID != 0 {
				t.Errorf("frame %d: subscription ID %d, the mock's is 0", e.frame, e.body.SubscriptionID)
			}
		}
		if n < 2 || len(ids) != 1 {
			t.Errorf("%d subscriptions answered with %d distinct instance IDs, want ≥ 2 sharing one", n, len(ids))
		}
		for id, conns := range ids {
			if id.IsZero() || len(conns) < 2 || conns[0] == conns[len(conns)-1] {
				t.Errorf("instance ID %s on connections %v: want one non-zero ID on two connections", id, conns)
			}
		}
	})
	t.Run("ApiVersions v3 answered UNSUPPORTED_VERSION with a v0 body, retried at v0", func(t *testing.T) {
		evs := mockCapture(t, "rdkafka-producer-mock")
		downgraded := 0
		for i, e := range evs {
			if e.request || e.key != decode.KeyApiVersions || e.version < 3 {
				continue
			}
			if !e.answer.HasErrorCode || e.answer.ErrorCode != decode.ErrUnsupportedVersion || e.bodyErr != nil {
				t.Errorf("frame %d: ApiVersions v%d answered %+v (%v), want UNSUPPORTED_VERSION in a v0 body", e.frame, e.version, e.answer, e.bodyErr)
				continue
			}
			for _, f := range evs[i+1:] {
				if f.conn == e.conn && f.request {
					if f.key == decode.KeyApiVersions && f.version == 0 {
						downgraded++
					}
					break
				}
			}
		}
		if downgraded == 0 {
			t.Error("no ApiVersions downgrade to v0 after UNSUPPORTED_VERSION")
		}
	})
	t.Run("a LeaveGroup v3 response shorter than its schema", func(t *testing.T) {
		found := false
		for _, e := range mockCapture(t, "kafkajs-consumer-classic-mock") {
			if e.request || e.key != 13 || e.version != 3 {
				continue
			}
			found = true
			// The least a v3 answer holds after the correlation ID:
			// ThrottleTimeMs, ErrorCode and the Members array's length.
			empty := kmsg.NewPtrLeaveGroupResponse()
			empty.SetVersion(3)
			least := len(empty.AppendTo(nil))
			if int(e.size)-4 >= least {
				t.Errorf("frame %d: a LeaveGroup v3 body of %d bytes, not shorter than the schema's %d", e.frame, e.size-4, least)
			}
			if _, err := decode.ReadAnswer(13, 3, make([]byte, e.size-4)); err == nil {
				t.Errorf("frame %d: a body of %d bytes reads as LeaveGroup v3", e.frame, e.size-4)
			}
			// Its top-level code, at a fixed offset, is read all the same.
			if e.bodyErr != nil || !e.answer.HasErrorCode {
				t.Errorf("frame %d: LeaveGroup v3 answer %+v, body error %v: want its top-level code", e.frame, e.answer, e.bodyErr)
			}
		}
		if !found {
			t.Error("no LeaveGroup v3 response")
		}
	})
	t.Run("kgo stops at ApiVersions: every attempt answered UNSUPPORTED_VERSION", func(t *testing.T) {
		attempts := 0
		for _, e := range mockCapture(t, "kgo-producer-mock") {
			if e.key != decode.KeyApiVersions {
				t.Errorf("frame %d: key %d; kgo should get no further than ApiVersions", e.frame, e.key)
				continue
			}
			if !e.request {
				attempts++
				if e.answer.ErrorCode != decode.ErrUnsupportedVersion {
					t.Errorf("frame %d: ApiVersions answered %d", e.frame, e.answer.ErrorCode)
				}
			}
		}
		if attempts < 2 {
			t.Errorf("%d ApiVersions attempts answered, want kgo's retries", attempts)
		}
	})
}
