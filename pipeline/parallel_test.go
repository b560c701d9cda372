package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/internal/synth"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/result"
)

// tracer is a Sink that writes down every call with everything it was
// given, so that two runs can be compared line by line.
type tracer struct{ lines []string }

func (t *tracer) Event(c *Conn, e *decode.Event) {
	// A static member's group instance ID is a pointer: write what it
	// points at, not where.
	ev := *e
	inst := "<nil>"
	if p := ev.Msg.Body.GroupInstanceID; p != nil {
		inst = *p
	}
	ev.Msg.Body.GroupInstanceID = nil
	t.lines = append(t.lines, fmt.Sprintf("event conn %d %s>%s mid=%v first=%v gaps=%d: %+v instance %q", c.ID, c.Client, c.Broker, c.MidStream, c.First, c.Gaps, ev, inst))
}

func (t *tracer) Open(c *Conn) {
	t.lines = append(t.lines, fmt.Sprintf("open conn %d %s>%s mid=%v first=%v", c.ID, c.Client, c.Broker, c.MidStream, c.First))
}

func (t *tracer) Gap(c *Conn, side kafka.Direction, at kafka.FrameRef) {
	t.lines = append(t.lines, fmt.Sprintf("gap conn %d side %v at %v (gaps %d)", c.ID, side, at, c.Gaps))
}

func (t *tracer) Closed(c *Conn) {
	end, conn := *c.End, *c
	conn.End = nil // not the pointer
	t.lines = append(t.lines, fmt.Sprintf("closed %+v: %+v", conn, end))
}

func traceRun(t *testing.T, opt Options) ([]string, result.Summary) {
	t.Helper()
	tr := &tracer{}
	res, err := Run(context.Background(), opt, tr)
	if err != nil {
		t.Fatalf("Run with %d workers: %v", opt.Workers, err)
	}
	return tr.lines, res.Summary
}

// traceParallel is traceRun through runParallel itself, set up as Run sets
// it up: a comparison with one worker cannot then pass by Run taking the
// one-worker path.
func traceParallel(t *testing.T, opt Options) ([]string, result.Summary) {
	t.Helper()
	files, err := capture.Open(opt.Files, opt.Stdin)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	if opt.Filter != nil {
		files.SetFilter(opt.Filter)
	}
	tr := &tracer{}
	sum := result.Summary{Files: files.Files()}
	if _, err := runParallel(context.Background(), opt, files, &deliverer{sink: tr, sum: &sum}); err != nil {
		t.Fatalf("runParallel with %d workers: %v", opt.Workers, err)
	}
	return tr.lines, sum
}

// sameRun requires the runs with more workers to make exactly the calls,
// in the same order, and the same summary, as the run with one.
func sameRun(t *testing.T, opt Options, workers ...int) int {
	t.Helper()
	opt.Workers = 1
	want, wantSum := traceRun(t, opt)
	for _, n := range workers {
		opt.Workers = n
		got, sum := traceParallel(t, opt)
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				g, w := "(none)", "(none)"
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				t.Fatalf("%d workers: call %d of %d differs from one worker's (%d calls)\ngot  %s\nwant %s", n, i, len(got), len(want), g, w)
			}
		}
		if g, w := fmt.Sprintf("%+v", sum), fmt.Sprintf("%+v", wantSum); g != w {
			t.Fatalf("%d workers: summary differs\ngot  %s\nwant %s", n, g, w)
		}
	}
	return len(want)
}

// TestWorkersSameCalls runs every sample capture, every capture of the
// synthetic corpus and the real-client captures with one worker and with
// several: the Sink must hear the same calls in the same order.
func TestWorkersSameCalls(t *testing.T) {
	var files []string
	for _, pat := range []string{"../samples/captures/*.pcapng", "../testdata/real/*.pcap"} {
		m, err := filepath.Glob(pat)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: no captures (%v)", pat, err)
		}
		files = append(files, m...)
	}
	dir := t.TempDir()
	for _, v := range synth.Variants() {
		path := filepath.Join(dir, v.Name+v.Ext)
		if _, err := v.Write(path); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	for _, f := range files {
		opt := Options{Files: []string{f}, Reassembly: reassembly.Options{Ports: reassembly.Ports{Auto: true}}}
		if sameRun(t, opt, 2, 3) == 0 {
			t.Errorf("%s: no calls", f)
		}
	}
	// All of them at once: merged in time order, same 4-tuples across files.
	sameRun(t, Options{Files: files, Reassembly: reassembly.Options{Ports: reassembly.Ports{Auto: true}}}, 2, 5)
}

// TestWorkersSameCallsOnLoad does the same on the project's load generator
// with hundreds of connections, reordered and retransmitted segments and
// mid-stream starts, spread over ten seconds of capture time; then with
// one packet in fifty dropped, so that waiting data is given up by capture
// time and idle connections are closed: flushes that must happen after the
// same packets whichever worker holds a connection.
func TestWorkersSameCallsOnLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the load generator")
	}
	dir := t.TempDir()
	load := filepath.Join(dir, "load.pcap")
	cmd := exec.Command("go", "run", "../bench/loadgen", "-bytes", "8MB", "-conns", "300", "-rate", "800KB",
		"-ooo", "0.02", "-dup", "0.01", "-q", "-o", load)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	lossy := filepath.Join(dir, "lossy.pcap")
	dropPackets(t, load, lossy, 50)
	ropt := reassembly.Options{Ports: reassembly.DefaultPorts(), FlushAfter: 500 * time.Millisecond, IdleAfter: 2 * time.Second}
	for _, f := range []string{load, lossy} {
		n := sameRun(t, Options{Files: []string{f}, Reassembly: ropt}, 2, 4, 7)
		t.Logf("%s: %d calls", filepath.Base(f), n)
	}
	// The lossy load must exercise what the test is for.
	_, sum := traceRun(t, Options{Files: []string{lossy}, Reassembly: ropt, Workers: 3})
	if sum.Gaps < 100 || sum.Connections < 300 {
		t.Errorf("lossy load: %d gaps, %d connections; the test wants many of both", sum.Gaps, sum.Connections)
	}
}

// dropPackets copies the pcap in to out without one packet in every n, at
// random.
func dropPackets(t *testing.T, in, out string, n int) {
	t.Helper()
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	o, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	w := pcapgo.NewWriter(o)
	if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rnd.IntN(n) == 0 {
			continue
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorkersShareTheConnectionCap runs a load whose connections stay open
// to the end with a cap under their number: whatever the workers, the cap
// counts the connections of all of them.
func TestWorkersShareTheConnectionCap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the load generator")
	}
	load := filepath.Join(t.TempDir(), "open.pcap")
	cmd := exec.Command("go", "run", "../bench/loadgen", "-bytes", "3MB", "-conns", "120", "-closes", "0", "-midstream", "0",
		"-no-plants", "-q", "-o", load)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	for _, workers := range []int{1, 2, 5} {
		_, sum := traceRun(t, Options{Files: []string{load}, Workers: workers,
			Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts(), MaxConnections: 115}})
		if sum.Connections != 115 || sum.Reassembly.ConnectionsDropped != 5 {
			t.Errorf("%d workers: %d connections tracked, %d refused; want 115 and 5", workers, sum.Connections, sum.Reassembly.ConnectionsDropped)
		}
	}
}

// cancelSink cancels the run at its n-th event and counts what it hears.
type cancelSink struct {
	n              int
	cancel         func()
	events, closed int
	opened         int
}

func (s *cancelSink) Open(*Conn) { s.opened++ }
func (s *cancelSink) Event(*Conn, *decode.Event) {
	if s.events++; s.events == s.n {
		s.cancel()
	}
}
func (s *cancelSink) Closed(*Conn) { s.closed++ }

// TestInterrupted cancels a run partway: with one worker or several, it
// stops early, says so, and closes every connection it opened.
func TestInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the load generator")
	}
	load := filepath.Join(t.TempDir(), "load.pcap")
	cmd := exec.Command("go", "run", "../bench/loadgen", "-bytes", "20MB", "-conns", "50", "-q", "-o", load)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	_, whole := traceRun(t, Options{Files: []string{load}, Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}})
	for _, workers := range []int{1, 3} {
		ctx, cancel := context.WithCancel(context.Background())
		sink := &cancelSink{n: 200, cancel: cancel}
		sum, err := Run(ctx, Options{Files: []string{load}, Workers: workers,
			Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}}, sink)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !sum.Interrupted || sum.Capture.Packets >= whole.Capture.Packets/2 {
			t.Errorf("%d workers: interrupted %v after %d of %d packets", workers, sum.Interrupted, sum.Capture.Packets, whole.Capture.Packets)
		}
		if sink.opened == 0 || sink.closed != sink.opened || int64(sink.opened) != sum.Connections {
			t.Errorf("%d workers: %d opened, %d closed, summary %d", workers, sink.opened, sink.closed, sum.Connections)
		}
	}
}

// shrinkSink cuts the file to its header at the n-th event.
type shrinkSink struct {
	cancelSink
	path string
	t    *testing.T
}

func (s *shrinkSink) Event(*Conn, *decode.Event) {
	if s.events++; s.events == s.n {
		if err := os.Truncate(s.path, 24); err != nil {
			s.t.Error(err)
		}
	}
}

// TestFileShrinks cuts a capture file short while it is read (through a
// memory mapping, whose pages past the new end fault): with one worker or
// several, the run goes on to the end, the file has one problem naming it
// and the frame it stopped at, and what was read before is all kept.
func TestFileShrinks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the load generator")
	}
	dir := t.TempDir()
	load := filepath.Join(dir, "load.pcap")
	cmd := exec.Command("go", "run", "../bench/loadgen", "-bytes", "20MB", "-conns", "50", "-q", "-o", load)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	whole, err := os.ReadFile(load)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} {
		path := filepath.Join(dir, fmt.Sprintf("shrinking-%d.pcap", workers))
		if err := os.WriteFile(path, whole, 0o644); err != nil {
			t.Fatal(err)
		}
		sink := &shrinkSink{cancelSink: cancelSink{n: 200}, path: path, t: t}
		sum, err := Run(context.Background(), Options{Files: []string{path}, Workers: workers,
			Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}}, sink)
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		if len(sum.Problems) != 1 || !sum.InputStopped() {
			t.Fatalf("%d workers: problems %v, want the one that stopped the file", workers, sum.Problems)
		}
		// The frame at fault is the first found gone: the one after the
		// last read, or one read before whose bytes a worker had still to
		// read (with workers, the reader is ahead of them).
		var fe *capture.FrameError
		if !errors.As(sum.Problems[0], &fe) {
			t.Fatalf("%d workers: problem %#v is not a FrameError", workers, sum.Problems[0])
		}
		if fe.File != path || fe.Frame < 2 || fe.Frame > sum.Capture.Packets+1 || workers == 1 && fe.Frame != sum.Capture.Packets+1 {
			t.Errorf("%d workers: problem %#v after %d frames, want a FrameError for %s at the frame it stopped", workers, sum.Problems[0], sum.Capture.Packets, path)
		}
		want := fmt.Sprintf("read %s: frame %d: the file became shorter while it was read", path, fe.Frame)
		if sum.Problems[0].Error() != want {
			t.Errorf("%d workers: problem %q, want %q", workers, sum.Problems[0], want)
		}
		// Everything read before the cut reached the sink: the events up
		// to the cut, and every connection opened was closed.
		if sink.events < sink.n || sink.opened == 0 || sink.closed != sink.opened || int64(sink.opened) != sum.Connections {
			t.Errorf("%d workers: %d events, %d opened, %d closed, summary %d", workers, sink.events, sink.opened, sink.closed, sum.Connections)
		}
	}
}
