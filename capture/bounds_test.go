package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// Regression tests for hostile lengths: a length read from a file is
// checked before memory is given to it, and reading a file takes memory
// bounded by the limits, whatever its lengths declare. Memory is counted
// in bytes allocated during one read (no test of this package runs in
// parallel, so the count is this read's).

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// readOut is what one read of some inputs gave: each TCP packet's frame
// number and payload length, the counters and the problems.
type readOut struct {
	frames []int64
	lens   []int
	st     Stats
	probs  []error
}

func readIn(t *testing.T, paths []string, stdin io.Reader) readOut {
	t.Helper()
	r, err := Open(paths, stdin)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	var (
		out readOut
		p   Packet
	)
	for {
		err := r.Next(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out.frames = append(out.frames, p.Frame)
		out.lens = append(out.lens, len(p.TCP.Payload))
	}
	out.st, out.probs = r.Stats(), r.Problems()
	return out
}

// zeros are n bytes of nothing: what follows a lying length in the
// reproductions, compressed to almost nothing.
func zeros(n int) []byte { return make([]byte, n) }

// jumbo is an Ethernet frame of n bytes carrying one TCP segment, with
// the IPv4 total length of 0 that TSO leaves on frames over 64 KiB.
func jumbo(t testing.TB, n int) []byte {
	s := segA
	s.payload = ""
	f := ether(t, s.ip4(t))
	f = append(f, bytes.Repeat([]byte("k"), n-len(f))...)
	return setIPv4Total(f, 14, 0)
}

// epbHeader is the start of an enhanced packet block on interface 0 of
// total length total that declares caplen captured bytes.
func epbHeader(total, caplen uint32) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(le.AppendUint32(nil, ngEPB), total)
	b = le.AppendUint32(le.AppendUint32(le.AppendUint32(b, 0), 0), 0)
	return le.AppendUint32(le.AppendUint32(b, caplen), caplen)
}

func TestHostileLengths(t *testing.T) {
	le := binary.LittleEndian
	small := ether(t, segB.ip4(t))
	ng := func(snap uint32, build func(w *ngWriter)) []byte {
		w := &ngWriter{}
		w.shb(le)
		w.idb(layers.LinkTypeEthernet, snap)
		build(w)
		return w.b.Bytes()
	}
	pcapHuge := func(snap, caplen uint32, data int) []byte {
		b := pcapRaw(snap, uint32(layers.LinkTypeEthernet), nil)
		h := le.AppendUint32(le.AppendUint32(nil, 0), 0)
		b = append(b, le.AppendUint32(le.AppendUint32(h, caplen), caplen)...)
		return append(b, zeros(data)...)
	}
	const MiB = 1 << 20
	cases := []struct {
		name    string
		in      []byte
		gz      bool // read compressed, through stdin
		frames  []int64
		lens    []int
		problem string // after "read FILE: ", the one problem
		recover bool   // that problem left the file read to its end
		over    int64  // OversizedFrames
		alloc   uint64 // bytes the read may allocate
	}{
		{
			// Reproduction: 3.70 GB of memory for a 1.5 MB file.
			name: "pcapng packet block declaring 4 GiB, then 4 MiB",
			in: ng(0, func(w *ngWriter) {
				w.b.Write(epbHeader(0xfffffffc, 0xfffffff0))
				w.b.Write(zeros(4 * MiB))
			}),
			gz: true, problem: "frame 1: pcapng block of type 0x6: total length 4294967292 is over the 16777216-byte limit",
			alloc: 2 * MiB,
		},
		{
			name: "pcapng packet block of 16 MiB: skipped by its length, the next one read",
			in: ng(0, func(w *ngWriter) {
				w.b.Write(epbHeader(maxBlockLength, maxBlockLength-32))
				w.b.Write(zeros(maxBlockLength - 32))
				w.b.Write(le.AppendUint32(nil, maxBlockLength))
				w.epb(qrec{data: small, orig: len(small)})
			}),
			gz: true, frames: []int64{2}, lens: []int{len(segB.payload)},
			problem: "frame 1: captured length 16777184 is over the 262144-byte packet limit; frame skipped unread", recover: true, over: 1,
			alloc: 2 * MiB,
		},
		{
			name: "pcapng packet block of 16 MiB whose lengths disagree: the file stops",
			in: ng(0, func(w *ngWriter) {
				w.b.Write(epbHeader(maxBlockLength, maxBlockLength-32))
				w.b.Write(zeros(maxBlockLength - 28))
				w.epb(qrec{data: small, orig: len(small)})
			}),
			problem: "frame 1: pcapng block of type 0x6: total length 16777216 at its start, 0 at its end",
			alloc:   2 * MiB,
		},
		{
			// A TSO capture with a snap length of 1 MiB is read whole.
			name: "pcapng 1 MiB packet under a 1 MiB snap length",
			in: ng(MiB, func(w *ngWriter) {
				w.epb(qrec{data: jumbo(t, MiB), orig: MiB})
				w.epb(qrec{data: small, orig: len(small)})
			}),
			gz: true, frames: []int64{1, 2}, lens: []int{MiB - 54, len(segB.payload)},
			alloc: 4 * MiB,
		},
		{
			name: "pcapng 1 MiB packet under a 256 KiB snap length: skipped",
			in: ng(256<<10, func(w *ngWriter) {
				w.epb(qrec{data: jumbo(t, MiB), orig: MiB})
				w.epb(qrec{data: small, orig: len(small)})
			}),
			frames: []int64{2}, lens: []int{len(segB.payload)},
			problem: "frame 1: captured length 1048576 is over the 262144-byte packet limit; frame skipped unread", recover: true, over: 1,
			alloc: 2 * MiB,
		},
		{
			name: "pcapng packet with 8 MiB of options: read, the options discarded",
			in: ng(0, func(w *ngWriter) {
				body := le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 0), 0), 0)
				body = le.AppendUint32(le.AppendUint32(body, uint32(len(small))), uint32(len(small)))
				body = append(body, small...)
				body = append(body, make([]byte, (4-len(small)%4)%4)...)
				for range 128 {
					body = append(body, w.option(1, bytes.Repeat([]byte("c"), 65532))...)
				}
				w.block(ngEPB, append(body, 0, 0, 0, 0))
				w.epb(qrec{data: small, orig: len(small)})
			}),
			gz: true, frames: []int64{1, 2}, lens: []int{len(segB.payload), len(segB.payload)},
			alloc: 2 * MiB,
		},
		{
			// Reproduction: 3.19 GB, and 2.95 GB under --memory-limit 50MiB.
			name: "pcap snap and captured length 0xfffffff0, gzip", in: pcapHuge(0xfffffff0, 0xfffffff0, 4*MiB), gz: true,
			problem: "frame 1: capture length 4294967280 is over the 262144-byte limit (snap length 4294967280)",
			alloc:   2 * MiB,
		},
		{
			name: "pcap snap length 0xfffffff0, a 2 MiB record, mapped", in: pcapHuge(0xfffffff0, 2*MiB, 2*MiB),
			problem: "frame 1: capture length 2097152 is over the 262144-byte limit (snap length 4294967280)",
			alloc:   MiB,
		},
		{
			name: "pcap 1 MiB record under a 1 MiB snap length, gzip",
			in:   pcapRaw(MiB, uint32(layers.LinkTypeEthernet), whole(jumbo(t, MiB), small)), gz: true,
			frames: []int64{1, 2}, lens: []int{MiB - 54, len(segB.payload)},
			alloc: 4 * MiB,
		},
		{
			name:   "pcap 1 MiB record under a 1 MiB snap length, mapped",
			in:     pcapRaw(MiB, uint32(layers.LinkTypeEthernet), whole(jumbo(t, MiB), small)),
			frames: []int64{1, 2}, lens: []int{MiB - 54, len(segB.payload)},
			alloc: 4 * MiB,
		},
		{
			name: "pcap 1 MiB record under a 2 MiB snap length: not believed",
			in:   pcapRaw(2*MiB, uint32(layers.LinkTypeEthernet), whole(jumbo(t, MiB), small)), gz: true,
			problem: "frame 1: capture length 1048576 is over the 262144-byte limit (snap length 2097152)",
			alloc:   2 * MiB,
		},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name, paths, stdin := "stdin", []string{"-"}, io.Reader(nil)
			if c.gz {
				stdin = bytes.NewReader(gzipBytes(t, c.in))
			} else {
				name = writeFile(t, dir, "in", c.in)
				paths = []string{name}
			}
			var out readOut
			n := allocated(func() { out = readIn(t, paths, stdin) })
			t.Logf("allocated %d bytes", n)
			if n > c.alloc {
				t.Errorf("the read allocated %d bytes, over %d", n, c.alloc)
			}
			if !equalInts(out.frames, c.frames) || !equalInts(out.lens, c.lens) {
				t.Errorf("frames %v of %v bytes, want %v of %v", out.frames, out.lens, c.frames, c.lens)
			}
			var want []string
			if c.problem != "" {
				want = []string{"read " + name + ": " + c.problem}
			}
			if got := errorLines(out.probs); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("problems %q\nwant     %q", got, want)
			}
			if len(out.probs) == 1 && Recovered(out.probs[0]) != c.recover {
				t.Errorf("Recovered = %v", !c.recover)
			}
			if out.st.OversizedFrames != c.over {
				t.Errorf("OversizedFrames = %d, want %d", out.st.OversizedFrames, c.over)
			}
			if st := out.st; st.Packets != st.TCP+st.NotTCP+st.Malformed+st.OversizedFrames+st.ExtraInterfaceFrames {
				t.Errorf("inconsistent stats %+v", st)
			}
		})
	}
}

func equalInts[T int | int64](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func errorLines(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestInterfaceFlood: a section describing interface after interface keeps
// maxInterfaces of them, counts the rest and the frames on them, says so
// once, and reads on. Reproduction: 5 M interface descriptions took
// 2.88 GB and were never mentioned.
func TestInterfaceFlood(t *testing.T) {
	const n = maxInterfaces + 100_000
	le := binary.LittleEndian
	small := ether(t, segB.ip4(t))
	w := &ngWriter{}
	w.shb(le)
	for range n {
		w.idb(layers.LinkTypeEthernet, 0)
	}
	w.epb(qrec{data: small, orig: len(small), iface: 1})
	w.epb(qrec{data: small, orig: len(small), iface: maxInterfaces + 5})
	w.epb(qrec{data: small, orig: len(small), iface: n - 1})
	// A new section starts a new table.
	w.shb(le)
	w.idb(layers.LinkTypeEthernet, 0)
	w.epb(qrec{data: small, orig: len(small)})
	w.epb(qrec{data: small, orig: len(small), iface: 1})
	r, err := Open([]string{"-"}, bytes.NewReader(gzipBytes(t, w.b.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var (
		p      Packet
		frames []int64
		kept   int
	)
	for r.Next(&p) == nil {
		frames = append(frames, p.Frame)
		if p.Frame == 1 {
			kept = len(r.srcs[0].ng.ifaces)
		}
	}
	if kept != maxInterfaces {
		t.Errorf("%d interfaces kept, want %d", kept, maxInterfaces)
	}
	if !equalInts(frames, []int64{1, 4}) {
		t.Errorf("frames %v, want 1 and 4", frames)
	}
	st := r.Stats()
	if st.ExtraInterfaces != n-maxInterfaces || st.ExtraInterfaceFrames != 2 || st.Packets != 4 {
		t.Errorf("stats %+v: want %d interfaces not kept, 2 frames on them, 4 frames", st, n-maxInterfaces)
	}
	want := []string{
		"read stdin: frame 1: more than 65536 interfaces in a pcapng section: 100000 interface descriptions not kept, 2 frames on them skipped",
		"read stdin: frame 5: pcapng packet block on interface 1, which the section does not describe (1 interfaces)",
	}
	probs := r.Problems()
	if got := errorLines(probs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems %q\nwant     %q", got, want)
	}
	if len(probs) == 2 && (!Recovered(probs[0]) || Recovered(probs[1])) {
		t.Errorf("Recovered: %v, %v", Recovered(probs[0]), Recovered(probs[1]))
	}
}

// TestSkippedBlocksTakeNoMemory: blocks that hold no packet are discarded
// through the read buffer, whatever their size; section and interface
// headers with long options are read through it, their options after the
// long ones included. Reproduction: a flood of name resolution blocks was
// said to take 1.06 GB (not reproduced: such blocks were already
// discarded, not buffered; this keeps it so).
func TestSkippedBlocksTakeNoMemory(t *testing.T) {
	const (
		typNRB = 4
		typISB = 5
		typDSB = 10
	)
	le := binary.LittleEndian
	comment := func(w *ngWriter) []byte { return w.option(1, bytes.Repeat([]byte("c"), 65532)) }
	frame := withFCS(ether(t, segA.ip4(t)))
	w := &ngWriter{}
	// A section header with 2 MiB of comments.
	w.order = le
	shb := le.AppendUint32(nil, ngByteOrderMagic)
	shb = le.AppendUint64(le.AppendUint16(le.AppendUint16(shb, 1), 0), ^uint64(0))
	for range 32 {
		shb = append(shb, comment(w)...)
	}
	w.block(ngSHB, append(shb, 0, 0, 0, 0))
	// An interface with 1 MiB of comments, then the FCS length: the
	// frame's FCS is stripped, not taken for padding.
	opts := [][]byte{}
	for range 16 {
		opts = append(opts, comment(w))
	}
	w.idb(layers.LinkTypeEthernet, 0, append(opts, w.option(optFCSLen, []byte{32}))...)
	for range 20_000 {
		w.block(typNRB, append(le.AppendUint16(le.AppendUint16(nil, 1), 1000), zeros(1000)...))
	}
	for _, typ := range []uint32{typNRB, typISB, typDSB, 0x77, ngCustom} {
		w.block(typ, zeros(8<<20))
	}
	w.epb(qrec{data: frame, orig: len(frame)})
	in := gzipBytes(t, w.b.Bytes())
	var out readOut
	if n := allocated(func() { out = readIn(t, []string{"-"}, bytes.NewReader(in)) }); n > 2<<20 {
		t.Errorf("the read allocated %d bytes, over 2 MiB", n)
	}
	if !equalInts(out.frames, []int64{2}) || len(out.probs) != 0 {
		t.Errorf("frames %v, problems %v; want frame 2 (the custom block is frame 1), no problem", out.frames, out.probs)
	}
	if out.st.Padded != 0 {
		t.Errorf("the FCS was taken for padding: the option after the long ones was not read")
	}
}
