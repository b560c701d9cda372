package capture

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Read buffer of each input. pcapgo's readers take a *bufio.Reader of at
// least 4 KiB as it is instead of wrapping it again, so this is the only
// buffer between the file and the packet bytes. Many inputs (a directory of
// rotated captures) get smaller ones, so memory stays near what one large
// file needs.
const (
	bufferSize      = 256 << 10
	smallBufferSize = 64 << 10
	manyFiles       = 8
)

// FrameError is a problem with one frame of one input file, such as a file
// that ends in the middle of a packet record. Frame is the 1-based number of
// the frame that could not be read.
type FrameError struct {
	File  string
	Frame int64
	Err   error
}

func (e *FrameError) Error() string {
	return "read " + e.File + ": frame " + strconv.FormatInt(e.Frame, 10) + ": " + e.Err.Error()
}

func (e *FrameError) Unwrap() error { return e.Err }

// errTruncated* wrap io.ErrUnexpectedEOF so callers can test for a
// truncated file with errors.Is while the message says what happened.
var (
	errTruncatedRecord = &truncatedError{"truncated file: packet record cut short"}
	errTruncatedBlock  = &truncatedError{"truncated file: block cut short"}
)

type truncatedError struct{ msg string }

func (e *truncatedError) Error() string { return e.msg }
func (e *truncatedError) Unwrap() error { return io.ErrUnexpectedEOF }

// Reader reads TCP segments from one or more capture files, merged in
// capture-time order. It is not safe for concurrent use, except BytesRead.
type Reader struct {
	srcs     []*source
	heap     []*source // sources with a head packet: a min-heap on (time, file)
	last     *source   // source of the packet Next returned last; advanced on the next call
	primed   bool
	closed   bool
	stats    Stats
	read     atomic.Int64 // file bytes consumed, over all inputs
	filter   filterHook   // the capture filter (filter_hook.go); f is nil without one
	leaveTCP bool
	// sharing is true while NextShared reads: a mapped head is left in
	// the mapping. Otherwise it is copied as it is read (source.own), or
	// into own when it was read for NextShared and Next hands it out:
	// what Next hands out is never in the mapping.
	sharing bool
	own     []byte
}

// LeaveTCP makes Next leave the TCP header undecoded (Packet.TCP nil) for a
// caller that decodes Packet.Segment elsewhere, such as on another
// goroutine. Call it before the first Next.
func (r *Reader) LeaveTCP() {
	r.leaveTCP = true
	for _, s := range r.srcs {
		s.head.TCP = nil
	}
}

// packetSource is what the record readers offer: pcapRecords,
// mappedRecords and ngRecords.
type packetSource interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// source is one input file.
type source struct {
	index  int
	name   string
	closer io.Closer // nil for stdin: the caller owns it
	pr     packetSource
	mapped *mappedRecords  // pr when the file is read through a mapping
	ng     *ngRecords      // pr when pcapng: the link type comes with each packet
	link   layers.LinkType // classic pcap: the file's link type
	fcs    int             // classic pcap: bytes of FCS at the end of each frame
	frame  int64           // frames read so far
	stop   error           // what stopped the file before its end, or kept it from being opened
	longer longerRecords   // records captured longer than the frame was
	over   oversized       // frames skipped for their captured length
	extra  extraIfaces     // pcapng interfaces not kept, and their frames
	head   Packet          // the next TCP packet of this file, when it is in the heap
	tcp    tcpLayer        // head.TCP points here
	fixed  [20]byte        // a mapped head's fixed TCP header (Segment.Fixed)
	// owned is true when a mapped head was copied into own, for Next.
	owned bool
	own   []byte
}

// longerRecords counts the records of a file whose captured length exceeds
// the frame's original length, which Wireshark reads as captured.
type longerRecords struct {
	n                  int64 // how many
	first              int64 // frame number of the first
	captured, original int   // its lengths
}

// oversized counts the frames of a file skipped for a captured length
// over the packet limit.
type oversized struct {
	n, first      int64 // how many; the frame number of the first
	captured, max int   // the first's captured length and its limit
}

// extraIfaces counts the pcapng interface descriptions of a file past the
// limit of their section, and the frames on them.
type extraIfaces struct {
	n, first, frames int64 // first: the frame number after the first
}

// countingReader adds the bytes read through it to total (the progress
// counter, read from other goroutines).
type countingReader struct {
	r     io.Reader
	total *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.total.Add(int64(n))
	return n, err
}

// Open opens the named capture files, "-" meaning stdin, and reads their
// headers. The format of each (pcap or pcapng, gzip-compressed or not) is
// told from its first bytes. An input that cannot be opened or is not a
// capture file is a problem of that input, an error naming it in
// Problems, and the others are read: Open fails only when none of them
// can be, with an error naming each, or when stdin is named twice or is
// not there. Nothing is left open then.
func Open(paths []string, stdin io.Reader) (*Reader, error) {
	if len(paths) == 0 {
		return nil, errors.New("capture: no input files")
	}
	r := &Reader{}
	bufSize := bufferSize
	if len(paths) > manyFiles {
		bufSize = smallBufferSize
	}
	sawStdin := false
	var bad []error
	for i, path := range paths {
		var (
			raw    io.Reader
			closer io.Closer
			name   = path
		)
		if path == "-" {
			name = "stdin"
			switch {
			case sawStdin:
				r.Close()
				return nil, errors.New("read stdin: named more than once")
			case stdin == nil:
				r.Close()
				return nil, errors.New("read stdin: no standard input")
			}
			sawStdin = true
			raw = stdin
		} else {
			f, err := os.Open(path)
			if err != nil {
				bad = append(bad, r.unread(i, name, err))
				continue
			}
			if recs, link := mapPcap(f, name, &r.read); recs != nil {
				r.srcs = append(r.srcs, r.mappedSource(i, name, f, recs, link))
				continue
			}
			raw, closer = f, f
		}
		s, err := r.newSource(i, name, raw, bufSize)
		if err != nil {
			if closer != nil {
				closer.Close()
			}
			bad = append(bad, r.unread(i, name, err))
			continue
		}
		s.closer = closer
		r.srcs = append(r.srcs, s)
	}
	if len(bad) == len(paths) {
		r.Close()
		return nil, errors.Join(bad...)
	}
	return r, nil
}

// unread adds input index, named name, that could not be opened or is not
// a capture file, for err, which names it, to be one of Problems; its
// place in Files stays, so that the other inputs' indexes are theirs.
func (r *Reader) unread(index int, name string, err error) error {
	s := &source{index: index, name: name, stop: err}
	s.head.TCP = &s.tcp.TCP
	r.srcs = append(r.srcs, s)
	return err
}

// mappedSource is the source of a classic pcap file read through a
// mapping (mapped.go).
func (r *Reader) mappedSource(index int, name string, f *os.File, recs *mappedRecords, link layers.LinkType) *source {
	s := &source{index: index, name: name, closer: f, pr: recs, mapped: recs, link: link, fcs: recs.fcs}
	s.head.TCP = &s.tcp.TCP
	return s
}

// newSource detects the format of raw and reads its file header.
func (r *Reader) newSource(index int, name string, raw io.Reader, bufSize int) (*source, error) {
	fail := func(format string, args ...any) error {
		return &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf(format, args...)}
	}
	s := &source{index: index, name: name}
	s.head.TCP = &s.tcp.TCP
	br := bufio.NewReaderSize(&countingReader{r: raw, total: &r.read}, bufSize)
	compressed := false
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fail("gzip: %v", err)
		}
		compressed = true
		// The compressed bytes keep feeding BytesRead, below.
		br = bufio.NewReaderSize(zr, bufSize)
	}
	magic, err := br.Peek(4)
	if len(magic) < 4 {
		what := "gzip-compressed "
		if !compressed {
			what = ""
		}
		switch {
		case err != nil && err != io.EOF:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return nil, err // the file's own error, such as "is a directory"
			}
			if compressed && err == io.ErrUnexpectedEOF {
				return nil, fail("gzip: %v", err)
			}
			return nil, fail("%v", err)
		case len(magic) == 0:
			return nil, fail("not a pcap or pcapng file (%sfile is empty)", what)
		default:
			return nil, fail("not a pcap or pcapng file (%sfile is %d bytes long)", what, len(magic))
		}
	}
	switch {
	case string(magic) == "\x0a\x0d\x0d\x0a":
		ng, err := newNgRecords(br)
		if err != nil {
			return nil, headerError(fail, "pcapng", err)
		}
		s.pr, s.ng = ng, ng
	case isPcapMagic(magic):
		hdr, _ := br.Peek(24)
		format, link, err := pcapHeader(hdr)
		if err != nil {
			return nil, headerError(fail, "pcap", err)
		}
		_, _ = br.Discard(24)
		s.pr, s.link, s.fcs = &pcapRecords{pcapFormat: format, br: br}, link, format.fcs
	default:
		if compressed {
			return nil, fail("not a pcap or pcapng file (gzip-compressed, starts with % x)", magic)
		}
		return nil, fail("not a pcap or pcapng file (starts with % x)", magic)
	}
	return s, nil
}

// isPcapMagic reports whether b starts with a classic pcap magic number:
// microsecond or nanosecond timestamps, written little- or big-endian.
func isPcapMagic(b []byte) bool {
	switch string(b[:4]) {
	case "\xd4\xc3\xb2\xa1", "\xa1\xb2\xc3\xd4", "\x4d\x3c\xb2\xa1", "\xa1\xb2\x3c\x4d":
		return true
	}
	return false
}

func headerError(fail func(string, ...any) error, format string, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fail("truncated %s file header", format)
	}
	return fail("%s file header: %v", format, err)
}

// Next stores the next TCP segment in p: from the only file as it comes, or,
// with several files, the one with the earliest timestamp among the next
// segment of each file (the earlier file on a tie). Each file's own order is
// kept even where its timestamps go backwards. Frames that do not carry TCP
// are counted in Stats and skipped. At the end Next returns io.EOF; a file
// that cannot be read to its end is dropped and recorded in Problems, and
// does not make Next fail.
//
// p's TCP layer and payload belong to the Reader and are valid until the
// next call to Next. They are never in the memory mapping of a file
// (mapped.go): a file cut shorter while it is read is a problem of that
// file, found here, and cannot make the caller's reads of p fault.
func (r *Reader) Next(p *Packet) error {
	_, _, err := r.next(p, nil, false)
	return err
}

// NextShared is Next for a caller that hands segments to other
// goroutines: it leaves a mapped file's segment where it lies, in the
// returned Segment, and appends any other file's to buf, which it
// returns grown. p.Segment and p.TCP are nil: the segment's bytes are
// read with Segment.Bytes, and a mapped one's stay mapped until the Lease
// taken after it (Reader.Lease) is released.
func (r *Reader) NextShared(p *Packet, buf []byte) (Segment, []byte, error) {
	return r.next(p, buf, true)
}

// next is Next, and with shared NextShared.
func (r *Reader) next(p *Packet, buf []byte, shared bool) (Segment, []byte, error) {
	if r.closed {
		return Segment{}, buf, errors.New("capture: Next on a closed Reader")
	}
	r.sharing = shared
	if !r.primed {
		r.primed = true
		for _, s := range r.srcs {
			if s.pr != nil && r.advance(s) {
				r.heap = append(r.heap, s)
				r.up(len(r.heap) - 1)
			}
		}
	} else if r.last != nil {
		// The file whose packet was handed out last is read only now, so
		// that packet's bytes stayed valid until this call: the per-file
		// zero-copy buffers need no copy for the merge.
		if r.advance(r.last) {
			r.down(0)
		} else {
			r.pop()
		}
		r.last = nil
	}
	for len(r.heap) > 0 {
		s := r.heap[0]
		seg := s.head.Segment
		*p = s.head
		switch {
		case shared && s.mapped != nil && !s.owned:
			m := s.mapped
			if m.pendingFrom < 0 {
				m.pendingFrom = m.recStart
			}
			p.Segment, p.TCP = nil, nil
			r.last = s
			return Segment{b: seg, m: m, frame: s.frame, Fixed: s.fixed}, buf, nil
		case shared:
			buf = append(buf, seg...)
			seg = buf[len(buf)-len(seg) : len(buf) : len(buf)]
			p.Segment, p.TCP = nil, nil
			r.last = s
			return Segment{b: seg, Fixed: [20]byte(seg)}, buf, nil
		case s.mapped != nil && !s.owned:
			var ok bool
			if r.own, ok = r.copyOut(s, r.own[:0], seg); !ok {
				r.pop() // the file became shorter (s.stop)
				continue
			}
			seg = r.own[:len(r.own):len(r.own)]
			p.Segment = seg
			if p.TCP != nil {
				hlen := len(p.TCP.Contents)
				p.TCP.Contents, p.TCP.Payload = seg[:hlen:hlen], seg[hlen:]
			}
		}
		r.last = s
		return Segment{}, buf, nil
	}
	return Segment{}, buf, io.EOF
}

// copyOut appends seg, in s's mapping, to dst. It returns false, and dst
// as it was, when the file became shorter and seg's pages are gone.
func (r *Reader) copyOut(s *source, dst, seg []byte) (out []byte, ok bool) {
	out = dst
	defer r.guardFault(s, debug.SetPanicOnFault(true), &ok)
	return append(dst, seg...), true
}

// guardFault ends each function that reads s's mapping, deferred with
// what debug.SetPanicOnFault(true) returned when it began: it puts that
// setting back and, when the function faulted in the mapping (the file
// became shorter, and the pages past its new end are gone), records that
// as what stopped the file, at the frame being read, and sets *ok false.
// Any other panic goes on. Faults are panics only inside these functions,
// and such a panic never leaves this package.
func (r *Reader) guardFault(s *source, old bool, ok *bool) {
	debug.SetPanicOnFault(old)
	v := recover()
	if v == nil {
		return
	}
	if !s.mapped.m.isFault(v) {
		panic(v)
	}
	// The frame read last is at fault unless the fault came while the
	// next one's record header was read.
	frame := s.frame
	if s.mapped.reading {
		frame++
		s.mapped.reading = false
	}
	s.stop = &FrameError{File: s.name, Frame: frame, Err: errShrank}
	*ok = false
}

// advance reads s up to its next TCP segment and stores it in s.head. It
// returns false at the end of the file or when the file cannot be read on.
// A mapped file's head segment is left in the mapping, for Next to copy.
func (r *Reader) advance(s *source) (ok bool) {
	if s.mapped != nil {
		defer r.guardFault(s, debug.SetPanicOnFault(true), &ok)
	}
	for {
		data, ci, err := s.pr.ZeroCopyReadPacketData()
		if err != nil {
			// io.EOF is a clean end: the readers report a file that
			// ends inside a record or block as io.ErrUnexpectedEOF.
			if err == io.EOF {
				return false
			}
			if r.readPast(s, err) {
				continue
			}
			r.fileProblem(s, err)
			return false
		}
		s.frame++
		r.stats.Packets++
		r.stats.Bytes += int64(len(data))
		link, fcs := s.link, s.fcs
		if s.ng != nil {
			link, fcs = s.ng.link, s.ng.fcs
		}
		wire := ci.Length
		if len(data) > wire {
			// The record holds more than the frame had on the wire: its
			// bytes are what there is, so they are read, as Wireshark
			// does, and the file is reported once.
			s.noteLonger(len(data), wire)
			wire = len(data)
		}
		if r.filter.f != nil && !r.filter.accept(link, data) {
			r.stats.Filtered++
			continue
		}
		frame, frameLen := data, wire
		if fcs != 0 {
			frame, frameLen = stripFCS(data, wire, fcs)
		}
		tcp := &s.tcp
		if r.leaveTCP {
			tcp = nil
		}
		v, info := decodeFrame(link, frame, frameLen-len(frame), tcp, &s.head.Network)
		if !r.stats.count(v, info) {
			continue
		}
		s.head.File = s.index
		s.head.Frame = s.frame
		s.head.Time = ci.Timestamp
		s.head.Cut = info.cut
		s.head.Segment = info.seg
		s.head.WireLength = wire
		if s.mapped != nil {
			// Read here, where faults are caught already: the fixed
			// header for NextShared, the whole segment for Next.
			s.fixed = [20]byte(info.seg)
			s.owned = !r.sharing
			if s.owned {
				s.own = append(s.own[:0], info.seg...)
				seg := s.own[:len(s.own):len(s.own)]
				s.head.Segment = seg
				if tcp != nil {
					hlen := len(tcp.Contents)
					tcp.Contents, tcp.Payload = seg[:hlen:hlen], seg[hlen:]
				}
			}
		}
		return true
	}
}

// stripFCS takes the FCS, the last fcs bytes of a frame of wire bytes on
// the wire, off the captured bytes data (a snap length may have cut it
// already), and returns them with the frame's length without it.
func stripFCS(data []byte, wire, fcs int) ([]byte, int) {
	wire = max(wire-fcs, 0)
	return data[:min(len(data), wire)], wire
}

// noteLonger counts a record captured longer than its original length.
func (s *source) noteLonger(captured, original int) {
	if s.longer.n == 0 {
		s.longer = longerRecords{first: s.frame, captured: captured, original: original}
	}
	s.longer.n++
}

// readPast counts a pcapng block that was over a limit and skipped, and
// returns false for any other err.
func (r *Reader) readPast(s *source, err error) bool {
	switch err {
	case errOversize:
		s.frame++
		r.stats.Packets++
		r.stats.OversizedFrames++
		if s.over.n == 0 {
			s.over = oversized{first: s.frame, captured: s.ng.overCap, max: s.ng.overLimit}
		}
		s.over.n++
	case errIfaceNotKept:
		r.stats.ExtraInterfaces++
		if s.extra.n == 0 {
			s.extra.first = s.frame + 1
		}
		s.extra.n++
	case errIfaceFrame:
		s.frame++
		r.stats.Packets++
		r.stats.ExtraInterfaceFrames++
		s.extra.frames++
	default:
		return false
	}
	return true
}

// fileProblem records why s could not be read to its end.
func (r *Reader) fileProblem(s *source, err error) {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = errTruncatedRecord
		if s.ng != nil {
			err = errTruncatedBlock
		}
	}
	s.stop = &FrameError{File: s.name, Frame: s.frame + 1, Err: err}
}

// before orders heads by time, then by file index.
func before(a, b *source) bool {
	if c := a.head.Time.Compare(b.head.Time); c != 0 {
		return c < 0
	}
	return a.index < b.index
}

func (r *Reader) up(i int) {
	h := r.heap
	for i > 0 {
		parent := (i - 1) / 2
		if !before(h[i], h[parent]) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (r *Reader) down(i int) {
	h := r.heap
	for {
		least := i
		if l := 2*i + 1; l < len(h) && before(h[l], h[least]) {
			least = l
		}
		if rt := 2*i + 2; rt < len(h) && before(h[rt], h[least]) {
			least = rt
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}

func (r *Reader) pop() {
	n := len(r.heap) - 1
	r.heap[0] = r.heap[n]
	r.heap[n] = nil
	r.heap = r.heap[:n]
	r.down(0)
}

// Stats returns the counters so far. Inputs are read one packet ahead of
// what Next has returned, so the counts may include that packet.
func (r *Reader) Stats() Stats { return r.stats }

// Problems returns the input problems in the order of the files, each
// naming its file: for each file, the quirks and limits of its records
// that were read past (see Recovered), if any, as *FrameError values
// naming the frame, then what stopped it before its end, if anything did,
// also a *FrameError, or what kept it from being opened (an error naming
// the file).
func (r *Reader) Problems() []error {
	var out []error
	for _, s := range r.srcs {
		if l := s.longer; l.n > 0 {
			out = append(out, &FrameError{File: s.name, Frame: l.first, Err: &LongerError{Captured: l.captured, Original: l.original, More: l.n - 1}})
		}
		if o := s.over; o.n > 0 {
			out = append(out, &FrameError{File: s.name, Frame: o.first, Err: &OversizeError{Captured: o.captured, Limit: o.max, More: o.n - 1}})
		}
		if x := s.extra; x.n > 0 {
			out = append(out, &FrameError{File: s.name, Frame: x.first, Err: &InterfaceLimitError{Limit: maxInterfaces, NotKept: x.n, Frames: x.frames}})
		}
		if stop := s.stopped(); stop != nil {
			out = append(out, stop)
		}
	}
	return out
}

// LongerError is the problem of a file whose records say that frames were
// captured longer than they were on the wire, which a capture cannot be.
// Wireshark reads the bytes the record holds, and so does the Reader: the
// file is read to its end, and this is reported once for it, at the first
// such frame.
type LongerError struct {
	Captured, Original int   // the first such frame's lengths
	More               int64 // how many more frames of the file are so
}

func (e *LongerError) Error() string {
	msg := "captured length " + strconv.Itoa(e.Captured) + " exceeds the original length " + strconv.Itoa(e.Original)
	switch {
	case e.More == 1:
		msg += " (so does 1 more frame)"
	case e.More > 1:
		msg += " (so do " + strconv.FormatInt(e.More, 10) + " more frames)"
	}
	return msg + "; read as captured, as Wireshark reads it"
}

// OversizeError is the problem of a pcapng file with packet blocks whose
// captured length is over the packet limit: such a block is skipped by its
// block length, unread, and the file read on. It is reported once for the
// file, at the first such frame.
type OversizeError struct {
	Captured, Limit int   // the first such frame's captured length, and the limit
	More            int64 // how many more frames of the file are so
}

func (e *OversizeError) Error() string {
	msg := "captured length " + strconv.Itoa(e.Captured) + " is over the " + strconv.Itoa(e.Limit) + "-byte packet limit; frame skipped unread"
	switch {
	case e.More == 1:
		msg += " (so is 1 more frame)"
	case e.More > 1:
		msg += " (so are " + strconv.FormatInt(e.More, 10) + " more frames)"
	}
	return msg
}

// InterfaceLimitError is the problem of a pcapng file with a section that
// describes more interfaces than the Reader keeps: the descriptions past
// the limit are skipped, and the frames on those interfaces, whose link
// type is not known then, are skipped undecoded. It is reported once for
// the file, at the frame after the first description not kept.
type InterfaceLimitError struct {
	Limit   int   // interfaces kept of a section
	NotKept int64 // descriptions skipped, over the file
	Frames  int64 // frames on them, skipped
}

func (e *InterfaceLimitError) Error() string {
	return "more than " + strconv.Itoa(e.Limit) + " interfaces in a pcapng section: " +
		strconv.FormatInt(e.NotKept, 10) + " interface descriptions not kept, " +
		strconv.FormatInt(e.Frames, 10) + " frames on them skipped"
}

// Recovered reports whether err, one of Reader.Problems, left its file
// read to its end: a quirk of the file's records that the Reader read past
// (a *LongerError, *OversizeError or *InterfaceLimitError), not what
// stopped the file or kept it from being opened.
func Recovered(err error) bool {
	var (
		l *LongerError
		o *OversizeError
		x *InterfaceLimitError
	)
	return errors.As(err, &l) || errors.As(err, &o) || errors.As(err, &x)
}

// OnSecrets asks for the decryption secrets blocks of pcapng inputs: f is
// called, on the goroutine that reads, with the input's index, the
// secrets type (SecretsTLSKeyLog for a TLS key log) and the secrets, as
// each block is read, before the packets that follow it. Without it the
// blocks are discarded unread, so that secrets are never in memory. Call
// it before the first Next.
func (r *Reader) OnSecrets(f func(file int, typ uint32, data []byte)) {
	for _, s := range r.srcs {
		if s.ng != nil {
			index := s.index
			s.ng.secrets = func(typ uint32, data []byte) { f(index, typ, data) }
		}
	}
}

// FileComment is a comment of a pcapng file's section header.
type FileComment struct {
	File int // index of the input, as Packet.File
	Text string
}

// Comments are the inputs' capture comments (pcapng section header
// opt_comment) read so far, a few per file, for the report's summary.
func (r *Reader) Comments() []FileComment {
	var out []FileComment
	for _, s := range r.srcs {
		if s.ng != nil {
			for _, c := range s.ng.comments {
				out = append(out, FileComment{File: s.index, Text: c})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b FileComment) int { return a.File - b.File })
	return out
}

// Files returns the input names in the order given, stdin shown as "stdin";
// Packet.File indexes this list.
func (r *Reader) Files() []string {
	names := make([]string, len(r.srcs))
	for i, s := range r.srcs {
		names[i] = s.name
	}
	return names
}

// BytesRead returns how many bytes of the inputs were consumed so far, as
// stored (compressed bytes for a gzip file), counted in read-ahead chunks.
// It is meant for a progress bar and may be called from any goroutine.
func (r *Reader) BytesRead() int64 { return r.read.Load() }

// Close closes the input files (not stdin, which the caller owns).
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	var first error
	for _, s := range r.srcs {
		if s.mapped != nil {
			s.mapped.m.unmap()
		}
		if s.closer != nil {
			if err := s.closer.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	r.heap, r.last = nil, nil
	return first
}
