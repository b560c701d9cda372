package samples

import (
	"net/netip"
	"time"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/samples/netsim"
)

// Kafka's reserved UUIDs.
var (
	ZERO = kafka.UUID{}
	ONE  = kafka.UUID{15: 1}
)

// uid is a made-up random-looking version 4 UUID, different for each n.
func uid(n uint64) kafka.UUID {
	var u kafka.UUID
	h := n*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	for i := 0; i < 16; i += 8 {
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		h ^= h >> 33
		for k := range 8 {
			u[i+k] = byte(h >> (8 * k))
		}
		h += 0x9e3779b97f4a7c15
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}

func ep(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// The brokers most scenarios talk to.
var (
	// broker1 knows KIP-1313 and rejects what breaks it (INVALID_REQUEST,
	// or a closed connection where the answer has no top-level error code).
	broker1 = ep("10.0.0.2:9092")
	// broker2 does not know KIP-1313: it ignores header IDs.
	broker2 = ep("10.0.0.3:9092")
	// broker3 misbehaves in other ways (telemetry IDs, old JoinGroup).
	broker3 = ep("10.0.0.4:9092")
)

// ---- step modifiers: each changes the step's first request or response
// and returns the step (a step fresh from a constructor is never shared) ----

// find expects rule at the request, naming the related labels.
func (s Step) find(rule string, related ...string) Step {
	r := s.Reqs[0]
	r.Finds = append(r.Finds, Find{Rule: rule, Related: related})
	return s
}

// findInfo expects rule at the request, as info.
func (s Step) findInfo(rule string) Step {
	r := s.Reqs[0]
	r.Finds = append(r.Finds, Find{Rule: rule, Info: true})
	return s
}

// label names the request.
func (s Step) label(l string) Step {
	s.Reqs[0].Label = l
	return s
}

// respLabel names the response.
func (s Step) respLabel(l string) Step {
	s.Resps[0].Label = l
	return s
}

// respFind expects rule at the response.
func (s Step) respFind(rule string, related ...string) Step {
	r := s.Resps[0]
	r.Finds = append(r.Finds, Find{Rule: rule, Related: related})
	return s
}

// nullCID sends a null ClientId.
func (s Step) nullCID() Step {
	s.Reqs[0].NullClientID = true
	return s
}

// noAnswer leaves the request unanswered.
func (s Step) noAnswer() Step {
	s.Resps = nil
	return s
}

// seg bends the request's segments.
func (s Step) seg(o ...netsim.SegOpt) Step {
	s.Reqs[0].Seg = append(s.Reqs[0].Seg, o...)
	return s
}

// respSeg bends the response's segments.
func (s Step) respSeg(o ...netsim.SegOpt) Step {
	s.Resps[0].Seg = append(s.Resps[0].Seg, o...)
	return s
}

// after makes d pass before the step.
func (s Step) after(d time.Duration) Step {
	s.Pause = d
	return s
}

// tail keeps only the last n bytes of the request in the capture.
func (s Step) tail(n int) Step {
	s.Reqs[0].Tail = n
	return s
}

// together writes the requests of several steps in one write, followed by
// their responses in order.
func together(steps ...Step) Step {
	var out Step
	for _, s := range steps {
		out.Reqs = append(out.Reqs, s.Reqs...)
		out.Resps = append(out.Resps, s.Resps...)
	}
	return out
}

// raw is a step of raw bytes.
func raw(fromClient bool, what string, data []byte, finds ...string) Step {
	r := &Raw{FromClient: fromClient, Data: data, What: what}
	for _, f := range finds {
		r.Finds = append(r.Finds, Find{Rule: f})
	}
	return Step{Raw: r}
}

// roundRobin is a schedule that runs the connections' actions in turn.
func roundRobin(conns []Conn) []int {
	left := make([]int, len(conns))
	total := 0
	for i, c := range conns {
		left[i] = len(c.Steps) + 2 // open, steps, end
		total += left[i]
	}
	var out []int
	for total > 0 {
		for i := range conns {
			if left[i] > 0 {
				out = append(out, i)
				left[i]--
				total--
			}
		}
	}
	return out
}

const (
	second      = time.Second
	millisecond = time.Millisecond
)
