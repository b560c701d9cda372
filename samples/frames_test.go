package samples

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
)

// line is one Kafka message as `kidscope frames` lists it, in the fields
// the comparison uses.
func line(frame int64, client, broker string, request bool, key, version int16, matched bool, corr int32,
	clientID *string, instance *kafka.UUID, codes []int16) string {
	if !request {
		if !matched {
			return fmt.Sprintf("frame %d %s>%s response corr %d (unmatched)", frame, client, broker, corr)
		}
		return fmt.Sprintf("frame %d %s>%s response %s v%d corr %d codes %v", frame, client, broker, apiName(key), version, corr, codes)
	}
	cid, id := "null", "-"
	if clientID != nil {
		cid = fmt.Sprintf("%q", *clientID)
	}
	if instance != nil {
		id = instance.String()
	}
	return fmt.Sprintf("frame %d %s>%s request %s v%d corr %d client %s id %s", frame, client, broker,
		apiName(key), version, corr, cid, id)
}

// expectedLines is what `frames` must list for a built scenario: every
// message complete in the capture; a response is matched when its request
// is.
func expectedLines(b *Built) []string {
	var out []string
	for _, m := range b.Messages {
		if m.Frame == 0 {
			continue
		}
		matched := m.Request || b.Messages[m.Answers].Frame > 0
		var codes []int16
		if !m.Request {
			codes = scriptedCodes(m.Body)
		}
		out = append(out, line(int64(m.Frame), m.Client.String(), m.Broker.String(), m.Request, m.Key, m.Version,
			matched, m.Corr, m.ClientID, m.Instance, codes))
	}
	slices.Sort(out)
	return out
}

// framesSink collects what the pipeline decodes.
type framesSink struct {
	lines []string
	other []string // resyncs, malformed frames, not-Kafka streams
}

func (s *framesSink) Event(c *pipeline.Conn, e *decode.Event) {
	m := &e.Msg
	switch e.Kind {
	case decode.EventRequest:
		var cid *string
		if !m.Request.ClientIDNull {
			id := m.Request.ClientID
			cid = &id
		}
		var inst *kafka.UUID
		if m.Request.HasInstanceID {
			id := m.Request.InstanceID
			inst = &id
		}
		s.lines = append(s.lines, line(e.At.Frame, c.Client.String(), c.Broker.String(), true, m.Request.APIKey,
			m.Request.APIVersion, true, m.Request.CorrelationID, cid, inst, nil))
	case decode.EventResponse:
		s.lines = append(s.lines, line(e.At.Frame, c.Client.String(), c.Broker.String(), false, m.Request.APIKey,
			m.Request.APIVersion, m.Matched, m.Response.CorrelationID, nil, nil, m.Codes()))
	case decode.EventSASLToken:
	default:
		s.other = append(s.other, fmt.Sprintf("frame %d %s>%s kind %d %s %s %v", e.At.Frame, c.Client, c.Broker,
			e.Kind, e.Side, e.Reason, e.Err))
	}
}

func (s *framesSink) Closed(*pipeline.Conn) {}

// decodeBuilt runs the pipeline over a built capture.
func decodeBuilt(t *testing.T, b *Built) (*framesSink, result.Summary) {
	t.Helper()
	var specs []string
	for _, p := range b.Expect.Ports {
		specs = append(specs, fmt.Sprint(p))
	}
	ports, err := reassembly.ParsePorts(specs)
	if err != nil {
		t.Fatal(err)
	}
	sink := &framesSink{}
	sum, err := pipeline.Run(context.Background(), pipeline.Options{Files: []string{"-"}, Stdin: bytes.NewReader(b.Capture),
		Reassembly: reassembly.Options{Ports: ports}, Decode: decode.Options{AllAnswers: true}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(sink.lines)
	return sink, sum.Summary
}

// scriptedCodes is the codes frames must list for a scripted answer: its
// top-level code where the version has one, else the distinct codes of its
// items (docs/design/rules.md §5).
func scriptedCodes(body Body) []int16 {
	top, hasTop, nested := answerOf(body)
	if hasTop {
		return []int16{top}
	}
	var out []int16
	for _, c := range nested {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// decoderBugs lists scenarios whose frames listing disagrees with the
// script because of a known decoder bug: the test logs the difference
// instead of failing. Empty when the decoder is right on every scenario.
var decoderBugs = map[string]string{}

// TestFramesListScript checks that the decoder (what `kidscope frames`
// prints) lists exactly the requests and responses each scenario
// scripted, at the frames netsim reported, with the same API, version,
// correlation ID, ClientId and header instance ID.
func TestFramesListScript(t *testing.T) {
	for _, b := range allBuilt(t) {
		t.Run(b.Scenario.Name, func(t *testing.T) {
			got, sum := decodeBuilt(t, b)
			want := expectedLines(b)
			if slices.Equal(got.lines, want) {
				return
			}
			var diff strings.Builder
			have := map[string]int{}
			for _, l := range got.lines {
				have[l]++
			}
			for _, l := range want {
				if have[l] > 0 {
					have[l]--
					continue
				}
				fmt.Fprintf(&diff, "\n  missing: %s", l)
			}
			for _, l := range got.lines {
				if have[l] > 0 {
					have[l]--
					fmt.Fprintf(&diff, "\n  extra:   %s", l)
				}
			}
			for _, o := range got.other {
				fmt.Fprintf(&diff, "\n  event:   %s", o)
			}
			msg := fmt.Sprintf("frames listing differs from the script (%d lines, want %d; %d requests, %d responses, %d gaps, %d resyncs):%s",
				len(got.lines), len(want), sum.Requests, sum.Responses, sum.Gaps, sum.Resyncs, diff.String())
			if why, ok := decoderBugs[b.Scenario.Name]; ok {
				t.Skipf("decoder bug: %s\n%s", why, msg)
			}
			t.Error(msg)
		})
	}
}
