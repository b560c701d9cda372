package capture

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// readShared reads one segment with NextShared and returns it with its
// bytes.
func readShared(t *testing.T, r *Reader, p *Packet) (Segment, []byte) {
	t.Helper()
	g, _, err := r.NextShared(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	b, err := g.Bytes(&scratch)
	if err != nil {
		t.Fatal(err)
	}
	return g, b
}

// TestLeaseKeepsPages reads a mapped file with NextShared: a lease not
// released keeps its segments mapped (the file is given back only behind
// it) and readable however far the reader goes on; once it is released,
// and the others are as they are taken, the mapped window is bounded.
func TestLeaseKeepsPages(t *testing.T) {
	const n, held = 40000, 100 // about 14 MB, 7 steps
	path := writeFile(t, t.TempDir(), "long.pcap", benchCapture(t, n))
	_, rs := benchRecords(t, n)
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mr := r.srcs[0].mapped
	if mr == nil {
		t.Fatal("the file is not read through a mapping")
	}
	var p Packet
	var kept []Segment
	for range held {
		g, _ := readShared(t, r, &p)
		kept = append(kept, g)
	}
	first := r.Lease()
	if len(mr.holds) != 1 || mr.holds[0].from != 24 {
		t.Fatalf("holds %+v, want one from the first record", mr.holds)
	}
	// Half the file with the first lease held, every other one released
	// at once.
	for i := held; i < n/2; i++ {
		if _, b := readShared(t, r, &p); !bytes.Equal(b, rs[i].data[14+20:]) {
			t.Fatalf("packet %d: segment % x", i+1, b)
		}
		if i%100 == 99 {
			r.Lease().Release()
		}
	}
	if mr.released > 24 {
		t.Errorf("%d bytes given back under a lease held from byte 24", mr.released)
	}
	if mr.off < 3*mapStep {
		t.Fatalf("read only %d bytes: the test reads too little to tell", mr.off)
	}
	var scratch []byte
	for i := range kept {
		b, err := kept[i].Bytes(&scratch)
		if err != nil || !bytes.Equal(b, rs[i].data[14+20:]) {
			t.Fatalf("held packet %d after %d bytes read on: % x, %v", i+1, mr.off, b, err)
		}
	}
	first.Release()
	most := 0
	for i := n / 2; i < n; i++ {
		readShared(t, r, &p)
		if i%100 == 99 {
			r.Lease().Release()
		}
		if i >= 3*n/4 { // steps after first was released
			most = max(most, mr.off-mr.released)
		}
	}
	// A step's worth past the lease released last, and the steps read
	// since it was looked at.
	if most >= 3*mapStep {
		t.Errorf("up to %d bytes mapped behind the read position with the leases released, want under %d", most, 3*mapStep)
	}
	if _, _, err := r.NextShared(&p, nil); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

// TestSharedFileShrinks cuts a mapped file to its header while segments
// NextShared handed out are still to be read: Bytes returns the error
// naming the file and the frame, as do the frames after it, the file's one
// problem is at the first frame found gone, and the Reader stops the file.
func TestSharedFileShrinks(t *testing.T) {
	const n, before = 200, 50
	path, segs := shrinkCapture(t, t.TempDir(), "shrinks.pcap", n, t0)
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p Packet
	var kept []Segment
	for range before {
		g, _, err := r.NextShared(&p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Segment != nil || p.TCP != nil {
			t.Fatal("NextShared left the segment in the Packet")
		}
		kept = append(kept, g)
	}
	defer r.Lease().Release()
	var scratch []byte
	if b, err := kept[before-1].Bytes(&scratch); err != nil || !bytes.Equal(b, segs[before-1]) {
		t.Fatalf("before the cut: % x, %v", b, err)
	}
	if err := os.Truncate(path, 24); err != nil {
		t.Fatal(err)
	}
	// Frames 10 and 6 start on pages past the first, which the cut took.
	for _, frame := range []int64{10, 6, 20} {
		b, err := kept[frame-1].Bytes(&scratch)
		var fe *FrameError
		if b != nil || !errors.As(err, &fe) || fe.File != path || fe.Frame != frame || !errors.Is(err, errShrank) {
			t.Errorf("frame %d after the cut: %q, %v", frame, b, err)
		}
	}
	if _, _, err := r.NextShared(&p, nil); err != io.EOF {
		t.Fatalf("NextShared after the cut: %v, want io.EOF", err)
	}
	checkShrank(t, r.Problems(), path, 6)
}

// TestOwnSegments copies a batch of NextShared's segments out of the
// mapping: they keep their bytes when the file is then cut to its header.
// A batch taken after the cut stops at the first segment found gone, and
// Bytes returns the error for it and the file's later frames.
func TestOwnSegments(t *testing.T) {
	const n = 60
	path, segs := shrinkCapture(t, t.TempDir(), "shrinks.pcap", n, t0)
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p Packet
	var kept []Segment
	for range n {
		g, _, err := r.NextShared(&p, nil)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, g)
	}
	defer r.Lease().Release()
	var owned []byte
	first, later := kept[:n/2], kept[n/2:]
	OwnSegments(&owned, len(first), func(i int) *Segment { return &first[i] })
	if err := os.Truncate(path, 24); err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if b, err := first[i].Bytes(nil); err != nil || !bytes.Equal(b, segs[i]) {
			t.Fatalf("frame %d, owned before the cut: % x, %v", i+1, b, err)
		}
	}
	var again []byte
	OwnSegments(&again, len(later), func(i int) *Segment { return &later[i] })
	var scratch []byte
	for i := range later {
		frame := int64(n/2 + i + 1)
		b, err := later[i].Bytes(&scratch)
		var fe *FrameError
		if b != nil || !errors.As(err, &fe) || fe.Frame != frame {
			t.Errorf("frame %d, after the cut: %q, %v", frame, b, err)
		}
	}
	if _, _, err := r.NextShared(&p, nil); err != io.EOF {
		t.Fatalf("NextShared after the cut: %v, want io.EOF", err)
	}
	checkShrank(t, r.Problems(), path, n/2+1)
}

// TestNextAndNextShared alternates the two on a mapped file: a packet
// read ahead for one is handed out right by the other.
func TestNextAndNextShared(t *testing.T) {
	const n = 40
	path, segs := shrinkCapture(t, t.TempDir(), "both.pcap", n, t0)
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var (
		p       Packet
		buf     []byte
		scratch []byte
	)
	for i := range n {
		var b []byte
		if i%3 == 0 {
			if err := r.Next(&p); err != nil {
				t.Fatal(err)
			}
			b = p.Segment
			if string(p.TCP.Payload) != string(segs[i][20:]) {
				t.Errorf("frame %d by Next: payload %.20q", i+1, p.TCP.Payload)
			}
		} else {
			var g Segment
			if g, buf, err = r.NextShared(&p, buf); err != nil {
				t.Fatal(err)
			}
			if b, err = g.Bytes(&scratch); err != nil {
				t.Fatal(err)
			}
		}
		if p.Frame != int64(i+1) || !bytes.Equal(b, segs[i]) {
			t.Fatalf("packet %d: frame %d, segment %.20q", i+1, p.Frame, b)
		}
	}
	r.Lease().Release()
	if err := r.Next(&p); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}
