package capture

import (
	"errors"
	"io"
	"os"
	"runtime/debug"
	"sync/atomic"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// A classic pcap file that is a regular file is read through a memory
// mapping of it: record headers and frame headers are read where they lie
// in the page cache, with no read system call copying the whole file into
// a buffer first. That copy was the largest single cost of reading a
// file, and it fell on the goroutine every other one waits for.
//
// No byte of the mapping is read outside this package: Next copies the
// segment it hands out, and a segment NextShared hands out is read with
// Segment.Bytes (lease.go). That is what lets a file cut shorter while it
// is read (whose pages past the new end fault when read, even those read
// before) be an input problem naming the file and the frame: every read
// of the mapping is in a function here that asks for faults as panics and
// recovers them (guardFault, mapping.catch).
//
// The mapping is given back to the kernel behind the read position and
// the oldest segment still leased, so that the memory the process holds
// does not grow with the file.

const (
	// mapStep is how much of the file is counted as read, and given back
	// behind the read position, at a time.
	mapStep = 2 << 20
	// touchAhead is how far ahead of the read position a page is touched
	// (see touch).
	touchAhead = 8 << 10
	pageSize   = 4 << 10
	lineSize   = 64
)

// mappedRecords reads the records of a classic pcap file that is mapped
// whole into memory.
type mappedRecords struct {
	pcapFormat
	m        *mapping
	off      int // where the next record header starts
	counted  int // m.data[:counted] is counted in read
	released int // m.data[:released] has been given back
	touched  int // the last page touched ahead
	sink     byte
	// reading is true while a record header is read, so that a fault then
	// is put on the frame that record starts, not the one before it.
	reading  bool
	recStart int // where the record read last starts
	// Leases of the segments NextShared hands out (lease.go).
	pendingFrom int    // where the first one not yet leased starts; -1: none
	holds       []hold // the leases not known to be released, in order
	// lostFrom is the first frame whose bytes Segment.Bytes found gone,
	// 0 for none; set from the goroutines that read segments.
	lostFrom atomic.Int64
	// read counts the bytes read, for Reader.BytesRead.
	read *atomic.Int64
}

// mapping is one file mapped into memory.
type mapping struct {
	data []byte
	name string
}

// mapPcap maps f, named name, when it is a regular file holding an
// uncompressed classic pcap capture whose header pcapgo accepts. Otherwise,
// or when mapping fails, it returns nil, and the file is read the usual
// way, which also words any error.
func mapPcap(f *os.File, name string, read *atomic.Int64) (*mappedRecords, layers.LinkType) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < 24 || int64(int(st.Size())) != st.Size() {
		return nil, 0
	}
	var magic [4]byte
	if _, err := f.ReadAt(magic[:], 0); err != nil || !isPcapMagic(magic[:]) {
		return nil, 0
	}
	data, err := mapFile(f, int(st.Size()))
	if err != nil {
		return nil, 0
	}
	m := &mapping{data: data, name: name}
	format, link, err := pcapHeader(data[:24])
	if err != nil {
		m.unmap()
		return nil, 0
	}
	return &mappedRecords{pcapFormat: format, m: m, off: 24, read: read, pendingFrom: -1}, link
}

// ZeroCopyReadPacketData returns the next record's bytes, in the mapping,
// and its capture info: io.EOF at a clean end of the file,
// io.ErrUnexpectedEOF when it ends inside a record. It reads the mapping:
// its caller guards against faults (guardFault). The bytes stay mapped
// until the next call.
func (r *mappedRecords) ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	// Not reset by a defer: a fault unwinds through here, and reading
	// must still say where it happened.
	r.reading = true
	data, ci, err := r.next()
	r.reading = false
	return data, ci, err
}

func (r *mappedRecords) next() ([]byte, gopacket.CaptureInfo, error) {
	var ci gopacket.CaptureInfo
	data := r.m.data
	for r.off >= r.counted && r.counted < len(data) {
		r.step()
	}
	r.touch()
	switch rest := len(data) - r.off; {
	case rest == 0:
		return nil, ci, io.EOF
	case rest < 16:
		r.off = len(data)
		return nil, ci, io.ErrUnexpectedEOF
	}
	ci, err := r.record(data[r.off : r.off+16])
	if err != nil {
		return nil, ci, err
	}
	r.recStart = r.off
	start := r.off + 16
	end := start + ci.CaptureLength
	if end > len(data) {
		r.off = len(data)
		return nil, ci, io.ErrUnexpectedEOF
	}
	r.off = end
	return data[start:end:end], ci, nil
}

// step counts the next mapStep bytes as read, and gives back the whole
// steps behind both the read position and the segments NextShared handed
// out that are not leased yet or whose lease is not released (keep).
func (r *mappedRecords) step() {
	end := min(r.counted+mapStep, len(r.m.data))
	r.read.Add(int64(end - r.counted))
	r.counted = end
	limit := r.keep()
	for limit-r.released >= mapStep {
		r.m.release(r.released, r.released+mapStep)
		r.released += mapStep
	}
}

// touch reads a byte of every cache line of the page touchAhead bytes
// ahead, once per page. Where a record starts is known only once the one
// before it is read, so without this the first read of each record header
// (and of each page, which the kernel maps then) waits for memory, one
// after the other; these reads do not depend on each other, and the
// processor overlaps them. Measured on the 100 MB cut of the shared bench
// load: about a tenth less CPU for the whole run.
func (r *mappedRecords) touch() {
	data := r.m.data
	a := (r.off + touchAhead) &^ (pageSize - 1)
	if a <= r.touched || a+pageSize > len(data) {
		return
	}
	r.touched = a
	if r.touchPage(data[a : a+pageSize]) {
		// The page is gone: the file became shorter. Which frame that
		// stops is for the reads of the records' own bytes to say, not
		// for a read ahead of them; there is nothing more to touch.
		r.touched = len(data)
	}
}

// touchPage reads a byte of every cache line of page; it returns true
// when that faulted.
func (r *mappedRecords) touchPage(page []byte) (faulted bool) {
	defer r.m.catch(debug.SetPanicOnFault(true), &faulted)
	var x byte
	for i := 0; i < len(page); i += lineSize {
		x += page[i]
	}
	r.sink += x
	return false
}

// errShrank is the problem of a mapped file cut shorter while it was
// read: the pages past its new end fault when read.
var errShrank = errors.New("the file became shorter while it was read")

// isFault reports whether v, recovered from a panic, is a memory fault
// in the mapping (see guardFault).
func (m *mapping) isFault(v any) bool {
	f, ok := v.(interface{ Addr() uintptr })
	return ok && m.data != nil && m.holds(f.Addr())
}
