package pipeline

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/internal/synth"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/samples/netsim"
)

// collector is a Sink that keeps every request and response as a
// synth.Msg, and the connections as they close.
type collector struct {
	msgs   []synth.Msg
	files  []int // input file of each of msgs
	events []decode.EventKind
	closed []Conn
}

func (c *collector) Event(conn *Conn, e *decode.Event) {
	c.events = append(c.events, e.Kind)
	if e.Kind != decode.EventRequest && e.Kind != decode.EventResponse {
		return
	}
	m := e.Msg
	got := synth.Msg{Client: conn.Client, Broker: conn.Broker, Request: e.Kind == decode.EventRequest, Frame: e.At.Frame}
	if got.Request {
		h := m.Request
		got.Key, got.Version, got.Corr = h.APIKey, h.APIVersion, h.CorrelationID
		if !h.ClientIDNull {
			got.ClientID = h.ClientID
		}
		if h.HasInstanceID {
			got.InstanceID = h.InstanceID.String()
		}
	} else {
		got.Corr, got.Matched = m.Response.CorrelationID, m.Matched
		if m.Matched {
			got.Key, got.Version = m.Request.APIKey, m.Request.APIVersion
		}
		got.HasError, got.ErrorCode = m.HasErrorCode, m.ErrorCode
	}
	c.msgs = append(c.msgs, got)
	c.files = append(c.files, e.At.File)
}

func (c *collector) Closed(conn *Conn) { c.closed = append(c.closed, *conn) }

func (c *collector) count(k decode.EventKind) int {
	n := 0
	for _, e := range c.events {
		if e == k {
			n++
		}
	}
	return n
}

func runPipeline(t *testing.T, opt Options) (*collector, result.Summary) {
	t.Helper()
	col := &collector{}
	if !opt.Reassembly.Ports.Auto && !opt.Reassembly.Ports.Has(9092) {
		opt.Reassembly.Ports = reassembly.DefaultPorts()
	}
	sum, err := Run(context.Background(), opt, col)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return col, sum.Summary
}

// sameMessages requires got to list exactly the messages of want, in
// capture order.
func sameMessages(t *testing.T, got, want []synth.Msg) {
	t.Helper()
	g, w := synth.Lines(got), synth.Lines(want)
	if slices.Equal(g, w) {
		return
	}
	missing, extra := missingLines(w, g), missingLines(g, w)
	for i, l := range missing {
		if i == 15 {
			t.Errorf("... %d missing in all", len(missing))
			break
		}
		t.Errorf("missing: %s", l)
	}
	for i, l := range extra {
		if i == 15 {
			t.Errorf("... %d unexpected in all", len(extra))
			break
		}
		t.Errorf("unexpected: %s", l)
	}
	if len(missing) == 0 && len(extra) == 0 {
		t.Errorf("same messages in another order:\ngot  %s\nwant %s", strings.Join(g, "\n     "), strings.Join(w, "\n     "))
	}
}

// missingLines lists the lines of a that b does not have (as multisets).
func missingLines(a, b []string) []string {
	have := map[string]int{}
	for _, l := range b {
		have[l]++
	}
	var out []string
	for _, l := range a {
		if have[l] > 0 {
			have[l]--
			continue
		}
		out = append(out, l)
	}
	return out
}

// TestVariants runs every capture of the synthetic corpus through the
// pipeline and requires the exact list of messages: every request and
// response, key, version, correlation ID, client ID, instance ID, error
// code, and the frame at which it completes.
func TestVariants(t *testing.T) {
	// What each variant must show beside its messages.
	checks := map[string]func(t *testing.T, b *synth.Builder, col *collector, sum result.Summary){
		"padding": func(t *testing.T, _ *synth.Builder, _ *collector, sum result.Summary) {
			if sum.Capture.Padded == 0 {
				t.Error("no padded frame counted")
			}
		},
		"lost-segments": func(t *testing.T, b *synth.Builder, col *collector, sum result.Summary) {
			// The Produce request, the first JoinGroup request and the
			// Fetch response lose bytes: three gaps, and the decoder
			// regains framing after each.
			if sum.Gaps != 3 || sum.Reassembly.Gaps != 3 {
				t.Errorf("gaps: summary %d, reassembly %d; want 3", sum.Gaps, sum.Reassembly.Gaps)
			}
			if sum.Reassembly.GapBytes < 2*1448 {
				t.Errorf("%d bytes lost in gaps, want at least two segments", sum.Reassembly.GapBytes)
			}
			if col.count(decode.EventResync) < 3 {
				t.Errorf("%d resyncs, want at least 3", col.count(decode.EventResync))
			}
			// The Produce request is missing; its response is listed,
			// unmatched.
			for _, m := range col.msgs {
				if m.Request && m.Key == 0 {
					t.Errorf("a Produce request was decoded: %v", m)
				}
			}
			if sum.Unmatched != 2 {
				t.Errorf("%d unmatched responses, want 2 (Produce and JoinGroup)", sum.Unmatched)
			}
		},
		"seq-wrap-lost": func(t *testing.T, _ *synth.Builder, col *collector, sum result.Summary) {
			if sum.Gaps != 2 || sum.Reassembly.GapBytes != 2*1448 {
				t.Errorf("%d gaps of %d bytes, want 2 of 2896", sum.Gaps, sum.Reassembly.GapBytes)
			}
		},
		"snap-cut": func(t *testing.T, _ *synth.Builder, col *collector, sum result.Summary) {
			if sum.Capture.Cut != 2 {
				t.Errorf("%d cut frames, want 2", sum.Capture.Cut)
			}
			if sum.Gaps != 2 {
				t.Errorf("%d gaps, want 2", sum.Gaps)
			}
		},
		"midstream": func(t *testing.T, _ *synth.Builder, col *collector, sum result.Summary) {
			if len(col.closed) != 1 || !col.closed[0].MidStream[kafka.ToBroker] {
				t.Errorf("connection not marked mid-stream: %+v", col.closed)
			}
			if sum.Resyncs < 2 {
				t.Errorf("%d resyncs, want one per side", sum.Resyncs)
			}
		},
		"reuse-4-tuple": func(t *testing.T, _ *synth.Builder, col *collector, sum result.Summary) {
			if len(col.closed) != 4 {
				t.Fatalf("%d connections, want 4", len(col.closed))
			}
			for i, c := range col.closed {
				if c.ID != i+1 || c.MidStream[kafka.ToBroker] || c.Gaps != 0 || !c.End.Close.Seen {
					t.Errorf("connection %d: %+v", i+1, c)
				}
			}
			if c := col.closed[0].End.Close; c.Reset || c.By != kafka.ToBroker {
				t.Errorf("first close %+v, want FIN by the client", c)
			}
			if c := col.closed[1].End.Close; c.Reset || c.By != kafka.ToClient {
				t.Errorf("second close %+v, want FIN by the broker", c)
			}
			if c := col.closed[2].End.Close; !c.Reset || c.By != kafka.ToBroker {
				t.Errorf("third close %+v, want RST by the client", c)
			}
			if c := col.closed[3].End.Close; !c.Reset || c.By != kafka.ToClient {
				t.Errorf("fourth close %+v, want RST by the broker", c)
			}
		},
		"rst-close": func(t *testing.T, _ *synth.Builder, col *collector, sum result.Summary) {
			if len(col.closed) != 1 || !col.closed[0].End.Close.Reset || col.closed[0].End.Close.By != kafka.ToClient {
				t.Errorf("close %+v, want RST by the broker", col.closed)
			}
			if col.closed[0].End.Close.At.Frame != int64(sum.Capture.Packets) {
				t.Errorf("closed at frame %d, want the last, %d", col.closed[0].End.Close.At.Frame, sum.Capture.Packets)
			}
		},
		"interleaved-connections": func(t *testing.T, _ *synth.Builder, col *collector, sum result.Summary) {
			if sum.Connections != 3 || len(col.closed) != 3 {
				t.Errorf("%d connections, want 3", sum.Connections)
			}
		},
		"pcapng-two-interfaces": func(t *testing.T, _ *synth.Builder, col *collector, sum result.Summary) {
			if sum.Connections != 2 {
				t.Errorf("%d connections, want 2", sum.Connections)
			}
		},
	}
	dir := t.TempDir()
	for _, v := range synth.Variants() {
		t.Run(v.Name, func(t *testing.T) {
			path := filepath.Join(dir, v.Name+v.Ext)
			b, err := v.Write(path)
			if err != nil {
				t.Fatal(err)
			}
			col, sum := runPipeline(t, Options{Files: []string{path}})
			sameMessages(t, col.msgs, b.Msgs)
			if sum.Capture.Packets != int64(b.C.Frames()) && v.Kind != synth.Truncated {
				t.Errorf("%d packets read, %d written", sum.Capture.Packets, b.C.Frames())
			}
			if v.Kind != synth.Truncated && len(sum.Problems) > 0 {
				t.Errorf("problems: %v", sum.Problems)
			}
			if v.Kind == synth.Clean {
				if sum.Gaps != 0 || sum.Resyncs != 0 || sum.Malformed != 0 || sum.Unmatched != 0 || sum.Truncated != 0 {
					t.Errorf("clean capture: %d gaps, %d resyncs, %d malformed, %d unmatched, %d truncated",
						sum.Gaps, sum.Resyncs, sum.Malformed, sum.Unmatched, sum.Truncated)
				}
				if sum.Capture.Cut != 0 || sum.Capture.Malformed != 0 {
					t.Errorf("clean capture: %d cut, %d malformed frames", sum.Capture.Cut, sum.Capture.Malformed)
				}
			}
			if sum.Requests+sum.Responses != int64(len(col.msgs)) {
				t.Errorf("summary counts %d requests and %d responses; the sink got %d", sum.Requests, sum.Responses, len(col.msgs))
			}
			if v.Kind == synth.Truncated {
				// Packets before the cut are decoded (the exact list above);
				// one problem names the file and the frame cut short.
				if len(sum.Problems) != 1 {
					t.Fatalf("problems %v, want one", sum.Problems)
				}
				var fe *capture.FrameError
				if !errors.As(sum.Problems[0], &fe) || fe.File != path || fe.Frame != int64(b.TruncatedAt) ||
					!errors.Is(fe, io.ErrUnexpectedEOF) {
					t.Errorf("problem %v, want %s frame %d cut short", sum.Problems[0], path, b.TruncatedAt)
				}
				if !strings.Contains(sum.Problems[0].Error(), path) {
					t.Errorf("problem %q does not name the file", sum.Problems[0])
				}
			}
			if check := checks[v.Name]; check != nil {
				check(t, b, col, sum)
			}
		})
	}
}

// TestSeveralFiles runs two captures of the same time span at once: they
// are merged in time order, and every message names its own file and its
// frame in that file.
func TestSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var want [][]synth.Msg
	for i, f := range []struct {
		name     string
		opt      netsim.Options
		cli, srv netip.AddrPort
	}{
		{"a.pcap", netsim.Options{}, synth.Client4, synth.Broker4},
		{"b.pcapng", netsim.Options{Format: netsim.PcapNG, Link: netsim.LinuxSLL2, Seed: 5}, synth.Client6, synth.Broker6},
	} {
		b := synth.New(f.opt)
		c := b.Open(f.cli, f.srv, netsim.ConnOptions{}, "file-"+strconv.Itoa(i))
		c.Standard(nil)
		c.N.Close(true)
		path := filepath.Join(dir, f.name)
		if err := b.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
		want = append(want, b.Msgs)
	}
	col, sum := runPipeline(t, Options{Files: paths})
	if !slices.Equal(sum.Files, paths) {
		t.Errorf("files %v, want %v", sum.Files, paths)
	}
	got := make([][]synth.Msg, len(paths))
	for i, m := range col.msgs {
		got[col.files[i]] = append(got[col.files[i]], m)
	}
	for i := range paths {
		sameMessages(t, got[i], want[i])
	}
	// Both start at the same time: their messages interleave.
	switches := 0
	for i := 1; i < len(col.files); i++ {
		if col.files[i] != col.files[i-1] {
			switches++
		}
	}
	if switches < 4 {
		t.Errorf("the files' messages switch only %d times: not merged by time", switches)
	}
}

// randomSegs bends the large messages of Standard at random: reordered,
// retransmitted and overlapping segments, and with lose, segments lost.
// The small ones are first cut into pieces.
func randomSegs(r *rand.Rand, lose bool, mss int) synth.Seg {
	seg := synth.Seg{}
	// Segment counts of the messages at the largest segment size, with the
	// splits added below: at least as many at any size.
	counts := []struct {
		label string
		n     int
	}{{"produce", 5}, {"fetch-resp", 28}, {"metadata", 3}, {"gts-resp", 4}, {"join", 3}, {"push-resp", 2}}
	seg["metadata"] = []netsim.SegOpt{netsim.SplitAt(5, 20)}
	seg["gts-resp"] = []netsim.SegOpt{netsim.SplitAt(3, 4, 30)}
	seg["join"] = []netsim.SegOpt{netsim.SplitAt(17, 50)}
	seg["push-resp"] = []netsim.SegOpt{netsim.SplitAt(9)}
	for _, c := range counts {
		label, n := c.label, c.n
		for range r.IntN(6) {
			i, j := r.IntN(n), r.IntN(n)
			switch k := r.IntN(5); {
			case k == 0 && i != j:
				seg[label] = append(seg[label], netsim.Reorder(i, j))
			case k == 1:
				seg[label] = append(seg[label], netsim.Retransmit(i))
			case k == 2 && i > 0 && !lose && label != "metadata" && label != "gts-resp" && label != "join" && label != "push-resp":
				// Not with losses: an overlapping segment can bring bytes
				// back after the peer acknowledged them unseen, when the
				// reassembly has given them up as lost.
				seg[label] = append(seg[label], netsim.Overlap(i, 1+r.IntN(i*mss)))
			case k == 3:
				seg[label] = append(seg[label], netsim.Lose(i), netsim.Retransmit(i))
			case k == 4 && lose:
				seg[label] = append(seg[label], netsim.Lose(i))
			}
		}
	}
	return seg
}

// TestRandomSegments runs Standard with segments reordered, retransmitted
// and overlapping at random: every message must be found at its frame. With
// segments lost at random too, what is found must be what was sent, at its
// frame; messages after the losses must be found again.
func TestRandomSegments(t *testing.T) {
	dir := t.TempDir()
	for seed := range uint64(60) {
		lose := seed%2 == 1
		r := rand.New(rand.NewPCG(seed, 7))
		mss := 1448
		if seed%3 == 0 {
			mss = 200 + r.IntN(1000)
		}
		seg := randomSegs(r, lose, mss)
		b := synth.New(netsim.Options{Seed: seed})
		c := b.Open(synth.Client4, synth.Broker4, netsim.ConnOptions{MSS: mss}, synth.ClientID)
		c.Standard(seg)
		c.Short("after-")
		c.N.Close(r.IntN(2) == 0)
		path := filepath.Join(dir, "random-"+strconv.FormatUint(seed, 10)+".pcap")
		if err := b.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		col, _ := runPipeline(t, Options{Files: []string{path}})
		if !lose {
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				sameMessages(t, col.msgs, b.Msgs)
				if t.Failed() {
					t.Logf("segments: %v", seg)
				}
			})
			continue
		}
		t.Run(strconv.FormatUint(seed, 10)+"-lossy", func(t *testing.T) {
			if extra := missingLines(synth.Lines(col.msgs), synth.Lines(b.Msgs)); len(extra) > 0 {
				t.Errorf("found what was not sent whole: %v (segments %v)", extra, seg)
			}
			// The closing exchange lost nothing and comes after the losses.
			var tail []synth.Msg
			for _, m := range b.Msgs {
				if strings.HasPrefix(m.Label, "after-") {
					tail = append(tail, m)
				}
			}
			if missing := missingLines(synth.Lines(tail), synth.Lines(col.msgs)); len(missing) > 0 {
				t.Errorf("not found after the losses: %v (segments %v)", missing, seg)
			}
		})
	}
}

// TestInputStopped: a quirk a file was read past is an input problem that
// leaves the input readable; a truncated file is not.
func TestInputStopped(t *testing.T) {
	longer := &capture.FrameError{File: "a.pcap", Frame: 3, Err: &capture.LongerError{Captured: 70, Original: 66}}
	cut := &capture.FrameError{File: "b.pcap", Frame: 9, Err: io.ErrUnexpectedEOF}
	for _, c := range []struct {
		problems []error
		want     bool
	}{
		{nil, false},
		{[]error{longer}, false},
		{[]error{cut}, true},
		{[]error{longer, cut}, true},
	} {
		s := result.Summary{Problems: c.problems}
		if got := s.InputStopped(); got != c.want {
			t.Errorf("problems %v: InputStopped %v, want %v", c.problems, got, c.want)
		}
	}
}
