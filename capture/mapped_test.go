package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// shrinkCapture writes a pcap of n TCP packets whose payloads name them
// ("packet i", padded to fill several pages between truncations), and
// returns its path and each packet's segment as Next should hand it out.
func shrinkCapture(t *testing.T, dir, name string, n int, start time.Time) (string, [][]byte) {
	t.Helper()
	var rs []rec
	var segs [][]byte
	for i := range n {
		s := segA
		s.seq = uint32(i * 1000)
		s.payload = fmt.Sprintf("%s packet %d %s", name, i+1, bytes.Repeat([]byte{'.'}, 900))
		ip := s.ip4(t)
		rs = append(rs, rec{ts: start.Add(time.Duration(i) * time.Millisecond), data: ether(t, ip)})
		segs = append(segs, ip[20:]) // no IP options

	}
	return writeFile(t, dir, name, pcapBytes(t, layers.LinkTypeEthernet, false, rs)), segs
}

// checkShrank checks that probs is the one problem of a file cut shorter
// while it was read, at frame.
func checkShrank(t *testing.T, probs []error, path string, frame int64) {
	t.Helper()
	if len(probs) != 1 {
		t.Fatalf("problems %v, want one", probs)
	}
	want := fmt.Sprintf("read %s: frame %d: the file became shorter while it was read", path, frame)
	if probs[0].Error() != want {
		t.Errorf("problem %q, want %q", probs[0], want)
	}
	var fe *FrameError
	if !errors.As(probs[0], &fe) || fe.File != path || fe.Frame != frame || !errors.Is(fe, errShrank) {
		t.Errorf("problem %#v, want a FrameError for %s frame %d", probs[0], path, frame)
	}
	if Recovered(probs[0]) {
		t.Errorf("the problem is taken for one the file was read past")
	}
}

// TestFileShrinks cuts a mapped file to its header while it is read: the
// pages past the new end fault when read, those read before too. The
// packet handed out before stays readable (Next copied it out of the
// mapping), reading the file stops at the next frame with one problem
// naming it, and Next neither panics nor fails.
func TestFileShrinks(t *testing.T) {
	const n, before = 200, 50
	path, segs := shrinkCapture(t, t.TempDir(), "shrinks.pcap", n, t0)
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.srcs[0].mapped == nil {
		t.Fatal("the file is not read through a mapping")
	}
	var p Packet
	for range before {
		if err := r.Next(&p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(path, 24); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Segment, segs[before-1]) || string(p.TCP.Payload) != string(segs[before-1][20:]) {
		t.Errorf("the last packet after the cut: segment % x, payload %q", p.Segment, p.TCP.Payload)
	}
	if err := r.Next(&p); err != io.EOF {
		t.Fatalf("Next after the cut: %v, want io.EOF", err)
	}
	if st := r.Stats(); st.Packets != before || st.TCP != before {
		t.Errorf("stats %+v, want the %d packets read before the cut", st, before)
	}
	checkShrank(t, r.Problems(), path, before+1)
}

// TestFileShrinksInMerge: a file cut shorter while it is read in a merge
// stops only that file; the other one is read to its end.
func TestFileShrinksInMerge(t *testing.T) {
	const n = 100
	dir := t.TempDir()
	cut, _ := shrinkCapture(t, dir, "cut.pcap", n, t0)
	other, _ := shrinkCapture(t, dir, "other.pcap", n, t0.Add(time.Microsecond))
	r, err := Open([]string{cut, other}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p Packet
	counts := [2]int{}
	for {
		err := r.Next(&p)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		counts[p.File]++
		if want := fmt.Sprintf("%s packet %d ", []string{"cut.pcap", "other.pcap"}[p.File], p.Frame); !bytes.HasPrefix(p.TCP.Payload, []byte(want)) {
			t.Fatalf("file %d frame %d: payload %.30q, want %q…", p.File, p.Frame, p.TCP.Payload, want)
		}
		if p.File == 0 && p.Frame == 10 {
			if err := os.Truncate(cut, 24); err != nil {
				t.Fatal(err)
			}
		}
	}
	if counts != [2]int{10, n} {
		t.Errorf("packets per file %v, want [10 %d]", counts, n)
	}
	checkShrank(t, r.Problems(), cut, 11)
}

// TestMappingGivenBack: what lies behind the read position of a mapped
// file is given back as it goes, so the mapped memory the Reader holds
// stays under two steps however long the file is.
func TestMappingGivenBack(t *testing.T) {
	path := writeFile(t, t.TempDir(), "long.pcap", benchCapture(t, 40000)) // about 14 MB, 7 steps
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
	most := 0
	for r.Next(&p) == nil {
		most = max(most, mr.off-mr.released)
	}
	if most >= 2*mapStep {
		t.Errorf("up to %d bytes kept mapped behind the read position, want under %d", most, 2*mapStep)
	}
	if len(mr.m.data)-mr.released > 2*mapStep {
		t.Errorf("%d of %d bytes given back at the end", mr.released, len(mr.m.data))
	}
}

// TestFileShrinksToPage cuts a mapped file at a page boundary ahead of
// the reader: the frames that end before the cut are all read (reading a
// page ahead of the records, which faults first, does not stop the file),
// and the problem names the first frame that crosses it.
func TestFileShrinksToPage(t *testing.T) {
	const n, before, cut = 200, 20, 20 * pageSize
	path, segs := shrinkCapture(t, t.TempDir(), "shrinks.pcap", n, t0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The first frame whose record ends past the cut.
	crossing, off := int64(0), 24
	for i := int64(1); crossing == 0; i++ {
		off += 16 + int(binary.LittleEndian.Uint32(b[off+8:])) // the captured length
		if off > cut {
			crossing = i
		}
	}
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p Packet
	for range before {
		if err := r.Next(&p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(path, cut); err != nil {
		t.Fatal(err)
	}
	read := int64(before)
	for r.Next(&p) == nil {
		if !bytes.Equal(p.Segment, segs[p.Frame-1]) {
			t.Fatalf("frame %d after the cut: % x", p.Frame, p.Segment)
		}
		read++
	}
	if read != crossing-1 {
		t.Errorf("%d frames read, want the %d before the cut", read, crossing-1)
	}
	checkShrank(t, r.Problems(), path, crossing)
}
