package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// pcapng is read here rather than with pcapgo's NgReader, which reads
// every block these files hold but leaves out two things Wireshark does:
// it drops an interface's if_fcslen option, so the FCS on the frames of an
// interface that declares one cannot be stripped, and it skips custom
// blocks (and systemd journal and sysdig event blocks), which Wireshark
// numbers as frames, so every frame number after one would be off. Reading
// here also hands a packet out where it lies in the read buffer, as
// pcapRecords does for classic pcap, instead of copying it.

// Block types (pcapng specification, and Wireshark for the ones it shows
// as frames).
const (
	ngSHB          = 0x0a0d0d0a // section header
	ngIDB          = 0x00000001 // interface description
	ngPB           = 0x00000002 // packet (obsolete)
	ngSPB          = 0x00000003 // simple packet
	ngEPB          = 0x00000006 // enhanced packet
	ngJournal      = 0x00000009 // systemd journal export
	ngDSB          = 0x0000000a // decryption secrets
	ngSysdig       = 0x00000204 // sysdig event
	ngSysdigV2     = 0x00000216 // sysdig event, v2
	ngSysdigV2L    = 0x00000221 // sysdig event, v2 large
	ngCustom       = 0x00000bad // custom, may be copied
	ngCustomNoCopy = 0x40000bad // custom, must not be copied
)

// Interface description options read.
const (
	optEnd      = 0
	optTSResol  = 9
	optFCSLen   = 13
	optTSOffset = 14
)

const ngByteOrderMagic = 0x1a2b3c4d

// Limits on what a pcapng file's lengths may claim. Only a packet block's
// header and captured bytes are ever held in memory, and those are
// bounded by the interface's packet limit (packetLimit); every other block,
// and a packet block's options, are read through the read buffer or
// discarded. maxBlockLength is a matter of belief, not memory: a block
// declared longer is taken for garbage and stops the file, rather than the
// rest of the file being skipped as one block. 16 MiB is far over any real
// section or interface header (whose options are at most 64 KiB each) or
// decryption secrets block. maxInterfaces bounds the interface table of a
// section: real files describe a handful of interfaces, and a table that
// grew with a file of nothing but interface descriptions would be the
// file's size many times over.
const (
	maxBlockLength = 16 << 20
	maxInterfaces  = 1 << 16
)

// ngRecords reads the blocks of a pcapng file out of the input's read
// buffer. A packet that fits in the buffer is handed out where it lies,
// valid until the next call.
type ngRecords struct {
	br     *bufio.Reader
	be     bool // the current section is big-endian
	ifaces []ngInterface
	// described counts the interface descriptions of the current section,
	// those past maxInterfaces included, which are not kept.
	described int
	big       []byte // a packet too large for the read buffer is copied here
	// Of the record returned last: the link type (linkUnknown for a frame
	// that is no packet, such as a custom block) and the length of the
	// FCS at the end of its data.
	link layers.LinkType
	fcs  int
	// Of the frame returned last as errOversize: its captured length and
	// the limit it is over.
	overCap, overLimit int
	// secrets, when set, is handed the data of each decryption secrets
	// block; when nil they are discarded unread.
	secrets func(typ uint32, data []byte)
	// comments are the section headers' comments (sectionComments).
	comments []string
}

// SecretsTLSKeyLog is the secrets type of a decryption secrets block that
// holds a TLS key log in the NSS format (what editcap --inject-secrets
// tls,FILE writes).
const SecretsTLSKeyLog = 0x544c534b

// Blocks read past rather than read: ZeroCopyReadPacketData returns these
// for the Reader to count, and the file goes on.
var (
	// errOversize: a packet block whose captured length is over its
	// interface's packet limit (r.overCap, r.overLimit), skipped by its
	// block length. It is a frame.
	errOversize = errors.New("pcapng packet block over the packet limit")
	// errIfaceNotKept: an interface description past maxInterfaces.
	errIfaceNotKept = errors.New("pcapng interface description past the limit")
	// errIfaceFrame: a packet block on an interface not kept. It is a
	// frame, which cannot be decoded without its link type.
	errIfaceFrame = errors.New("pcapng packet block on an interface not kept")
)

// ngInterface is what an interface description block says.
type ngInterface struct {
	link   layers.LinkType
	maxCap int    // longest captured length taken, as for classic pcap
	snap   uint32 // the snap length, named in the error for a longer packet
	fcs    int    // bytes of FCS at the end of each frame; 0 none or unknown
	units  uint64 // timestamp units per second (if_tsresol)
	scale  uint64 // nanoseconds per unit when that is whole, else 0
	offset int64  // seconds added to every timestamp (if_tsoffset)
}

// newNgRecords reads the section header that begins br.
func newNgRecords(br *bufio.Reader) (*ngRecords, error) {
	r := &ngRecords{br: br, link: linkUnknown}
	h, err := br.Peek(12)
	if len(h) < 12 {
		return nil, unexpected(err)
	}
	if err := r.section(h); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *ngRecords) u16(b []byte) uint16 {
	if r.be {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *ngRecords) u32(b []byte) uint32 {
	if r.be {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// ZeroCopyReadPacketData returns the next frame: a packet, with the
// interface's link type and FCS length in r.link and r.fcs, or a block
// Wireshark shows as a frame but that holds no packet (nil data, link
// linkUnknown). Other blocks are skipped: statistics, name resolution,
// decryption secrets (never read into memory) and types this reader does
// not know. It returns io.EOF at a clean end of the file,
// io.ErrUnexpectedEOF when the file ends inside a block, and errOversize,
// errIfaceNotKept or errIfaceFrame for a block read past (the next call
// reads on).
func (r *ngRecords) ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	for {
		h, err := r.br.Peek(12)
		if len(h) < 12 {
			if len(h) == 0 && err == io.EOF {
				return nil, gopacket.CaptureInfo{}, io.EOF
			}
			// A last block shorter than 12 bytes is cut, or not a block.
			return nil, gopacket.CaptureInfo{}, unexpected(err)
		}
		switch typ := r.u32(h[0:4]); typ {
		case ngEPB, ngPB, ngSPB:
			return r.packetBlock(typ, h)
		case ngSHB:
			if err := r.section(h); err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
		case ngIDB:
			if err := r.iface(h); err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
		case ngDSB:
			if err := r.decryptionSecrets(h); err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
		case ngCustom, ngCustomNoCopy, ngJournal, ngSysdig, ngSysdigV2, ngSysdigV2L:
			if err := r.skip(h); err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
			r.link, r.fcs = linkUnknown, 0
			return nil, gopacket.CaptureInfo{}, nil
		default:
			if err := r.skip(h); err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
		}
	}
}

// decryptionSecrets reads a decryption secrets block, whose first 12 bytes
// are h, for r.secrets, or skips it unread when no one asked for secrets.
// The secrets are copied into memory of their own (at most the block's
// length, itself under maxBlockLength), which the callee owns.
func (r *ngRecords) decryptionSecrets(h []byte) error {
	if r.secrets == nil {
		return r.skip(h)
	}
	n, err := r.length(h)
	if err != nil {
		return err
	}
	if n < 20 {
		return fmt.Errorf("pcapng decryption secrets block: total length %d is too short", n)
	}
	typ, size := r.u32(h[8:12]), 0
	b, err := r.br.Peek(16)
	if len(b) < 16 {
		return unexpected(err)
	}
	size = int(r.u32(b[12:16]))
	if size > n-20 {
		return fmt.Errorf("pcapng decryption secrets block: %d bytes of secrets do not fit in its %d-byte block", size, n)
	}
	_, _ = r.br.Discard(16)
	data := make([]byte, size)
	if _, err := io.ReadFull(r.br, data); err != nil {
		return unexpected(err)
	}
	if err := r.end(ngDSB, n, 16+size); err != nil {
		return err
	}
	r.secrets(typ, data)
	return nil
}

// length reads the total length of the block whose first 12 bytes are h,
// setting the byte order first when it is a section header.
func (r *ngRecords) length(h []byte) (int, error) {
	typ := binary.LittleEndian.Uint32(h[0:4]) // the same in either order for ngSHB
	if typ == ngSHB {
		switch {
		case binary.LittleEndian.Uint32(h[8:12]) == ngByteOrderMagic:
			r.be = false
		case binary.BigEndian.Uint32(h[8:12]) == ngByteOrderMagic:
			r.be = true
		default:
			return 0, fmt.Errorf("pcapng section header: bad byte-order magic % x", h[8:12])
		}
	}
	n := r.u32(h[4:8])
	if n < 12 || n%4 != 0 {
		return 0, fmt.Errorf("pcapng block of type %#x: bad total length %d", r.u32(h[0:4]), n)
	}
	if n > maxBlockLength {
		return 0, fmt.Errorf("pcapng block of type %#x: total length %d is over the %d-byte limit", r.u32(h[0:4]), n, maxBlockLength)
	}
	return int(n), nil
}

// skip discards a block without reading it into memory.
func (r *ngRecords) skip(h []byte) error {
	n, err := r.length(h)
	if err != nil {
		return err
	}
	return r.end(r.u32(h[0:4]), n, 0)
}

// end discards the rest of a block of type typ and total length n, of
// which done bytes were read, up to its trailing copy of the length, and
// checks that copy: a block whose two lengths agree was skipped to where
// the next one starts.
func (r *ngRecords) end(typ uint32, n, done int) error {
	if _, err := r.br.Discard(n - 4 - done); err != nil {
		return unexpected(err)
	}
	t, err := r.br.Peek(4)
	if len(t) < 4 {
		return unexpected(err)
	}
	if end := r.u32(t); int(end) != n {
		return fmt.Errorf("pcapng block of type %#x: total length %d at its start, %d at its end", typ, n, end)
	}
	_, _ = r.br.Discard(4)
	return nil
}

// block reads the whole block of total length n, no larger than the read
// buffer, and checks its trailing copy of the length. The bytes are valid
// until the next read.
func (r *ngRecords) block(n int) ([]byte, error) {
	b, err := r.br.Peek(n)
	if len(b) < n {
		return nil, unexpected(err)
	}
	// Discard only moves the read position: b stays in place until the
	// buffer is next filled, by the next read.
	_, _ = r.br.Discard(n)
	if end := r.u32(b[n-4:]); int(end) != n {
		return nil, fmt.Errorf("pcapng block of type %#x: total length %d at its start, %d at its end", r.u32(b[0:4]), n, end)
	}
	return b, nil
}

// section reads a section header block, whose first 12 bytes are h: its
// byte order (set by length), its version; the interfaces of the section
// before are forgotten. Its options are discarded unread.
func (r *ngRecords) section(h []byte) error {
	n, err := r.length(h)
	if err != nil {
		return err
	}
	if n < 28 {
		return fmt.Errorf("pcapng section header: block too short (%d bytes)", n)
	}
	b, err := r.br.Peek(16)
	if len(b) < 16 {
		return unexpected(err)
	}
	// 1.2 is what some writers put for the same format; Wireshark reads
	// it, and refuses other versions.
	major, minor := r.u16(b[12:14]), r.u16(b[14:16])
	if major != 1 || minor != 0 && minor != 2 {
		return fmt.Errorf("pcapng section header: unsupported version %d.%d", major, minor)
	}
	r.ifaces, r.described = r.ifaces[:0], 0
	if b, _ := r.br.Peek(n); len(b) == n {
		r.sectionComments(b[24 : n-4])
	}
	return r.end(ngSHB, n, 0)
}

// Of a file's section comments (opt_comment), the first maxComments are
// kept, each cut to maxCommentBytes: they are for the report's summary.
const (
	maxComments     = 8
	maxCommentBytes = 1024
)

// sectionComments keeps the comments among a section header's options
// (those of a header longer than the read buffer are not read).
func (r *ngRecords) sectionComments(opts []byte) {
	for len(opts) >= 4 && len(r.comments) < maxComments {
		code, n := r.u16(opts[0:2]), int(r.u16(opts[2:4]))
		if code == optEnd || 4+n > len(opts) {
			return
		}
		if code == optComment {
			r.comments = append(r.comments, clip(string(opts[4:4+n]), maxCommentBytes))
		}
		opts = opts[min(len(opts), 4+(n+3)&^3):]
	}
}

// iface reads an interface description block, whose first 12 bytes are
// h, through the read buffer: its options one at a time, so that a block
// of any length takes no memory. Past maxInterfaces in a section it is
// skipped, and errIfaceNotKept returned.
func (r *ngRecords) iface(h []byte) error {
	n, err := r.length(h)
	if err != nil {
		return err
	}
	if n < 20 {
		return fmt.Errorf("pcapng interface description: block too short (%d bytes)", n)
	}
	id := r.described
	r.described++
	if len(r.ifaces) >= maxInterfaces {
		if err := r.end(ngIDB, n, 0); err != nil {
			return err
		}
		return errIfaceNotKept
	}
	b, err := r.br.Peek(16)
	if len(b) < 16 {
		return unexpected(err)
	}
	f := ngInterface{link: layers.LinkType(r.u16(b[8:10])), snap: r.u32(b[12:16]), units: 1e6, scale: 1e3}
	f.maxCap = packetLimit(f.snap)
	_, _ = r.br.Discard(16)
	done, rest := 16, n-20 // rest: option bytes not read yet, a multiple of 4
	for rest >= 4 {
		o, err := r.br.Peek(4)
		if len(o) < 4 {
			return unexpected(err)
		}
		code, ln := r.u16(o[0:2]), int(r.u16(o[2:4]))
		if code == optEnd {
			break
		}
		if 4+ln > rest {
			return fmt.Errorf("pcapng interface %d: option %d runs past the end of its block", id, code)
		}
		// No option read here needs more than its first 8 bytes.
		o, err = r.br.Peek(4 + min(ln, 8))
		if len(o) < 4+min(ln, 8) {
			return unexpected(err)
		}
		if err := f.option(r, code, o[4:], ln); err != nil {
			return fmt.Errorf("pcapng interface %d: %w", id, err)
		}
		step := 4 + (ln+3)&^3
		if _, err := r.br.Discard(step); err != nil {
			return unexpected(err)
		}
		done, rest = done+step, rest-step
	}
	if f.link != layers.LinkTypeEthernet {
		// Only Ethernet frames are parsed with their FCS in mind.
		f.fcs = 0
	}
	if err := r.end(ngIDB, n, done); err != nil {
		return err
	}
	r.ifaces = append(r.ifaces, f)
	return nil
}

// option reads interface option code, whose value is ln bytes long and
// starts with v (its first 8 bytes at most).
func (f *ngInterface) option(r *ngRecords, code uint16, v []byte, ln int) error {
	switch {
	case code == optTSResol && ln >= 1:
		exp := uint(v[0] & 0x7f)
		if v[0]&0x80 != 0 {
			if exp > 63 {
				return fmt.Errorf("timestamp resolution 2^-%d is too fine", exp)
			}
			f.units = 1 << exp
		} else {
			if exp > 19 {
				return fmt.Errorf("timestamp resolution 10^-%d is too fine", exp)
			}
			f.units = 1
			for range exp {
				f.units *= 10
			}
		}
		f.scale = 0
		if f.units <= 1e9 && 1e9%f.units == 0 {
			f.scale = 1e9 / f.units
		}
	case code == optTSOffset && ln >= 8:
		if r.be {
			f.offset = int64(binary.BigEndian.Uint64(v))
		} else {
			f.offset = int64(binary.LittleEndian.Uint64(v))
		}
	case code == optFCSLen && ln >= 1:
		// The specification counts bits; some writers put bytes. As
		// Wireshark does, a value that is not a whole number of bytes is
		// taken as bytes.
		f.fcs = int(v[0])
		if f.fcs%8 == 0 {
			f.fcs /= 8
		}
	}
	return nil
}

// packetBlock reads an enhanced, simple or (obsolete) packet block whose
// first 12 bytes are h. One that fits in the read buffer is handed out
// where it lies; a larger one has its header and captured bytes, which
// its interface's packet limit bounds, copied into r.big, and its options
// discarded. One whose captured length is over that limit is skipped by
// its block length, as is one on an interface not kept.
func (r *ngRecords) packetBlock(typ uint32, h []byte) ([]byte, gopacket.CaptureInfo, error) {
	var ci gopacket.CaptureInfo
	n, err := r.length(h)
	if err != nil {
		return nil, ci, err
	}
	if n <= r.br.Size() {
		b, err := r.block(n)
		if err != nil {
			return nil, ci, err
		}
		hdr, err := r.packet(typ, b, n, &ci)
		if err != nil {
			return nil, ci, err // the block is read already, to its end
		}
		end := hdr + ci.CaptureLength
		return b[hdr:end:end], ci, nil
	}
	// n is over the buffer's size, so the block has its 28-byte header.
	hb, err := r.br.Peek(28)
	if len(hb) < 28 {
		return nil, ci, unexpected(err)
	}
	hdr, err := r.packet(typ, hb, n, &ci)
	if err != nil {
		return nil, ci, r.skipped(err, typ, n, 0)
	}
	need := hdr + ci.CaptureLength
	r.big = slices.Grow(r.big[:0], need)[:need]
	if _, err := io.ReadFull(r.br, r.big); err != nil {
		return nil, ci, unexpected(err)
	}
	if err := r.end(typ, n, need); err != nil {
		return nil, ci, err
	}
	return r.big[hdr:need:need], ci, nil
}

// skipped is what packetBlock returns for err from packet, about a block
// of type typ and total length n of which done bytes were read: the block
// is discarded to its end and err returned when it is one to read past.
func (r *ngRecords) skipped(err error, typ uint32, n, done int) error {
	if err != errOversize && err != errIfaceFrame {
		return err
	}
	if e := r.end(typ, n, done); e != nil {
		return e
	}
	return err
}

// packet reads the header of a packet block of type typ and total length
// n, whose first bytes are b (all of it, or its first 28 bytes), into ci,
// and sets r.link and r.fcs to its interface's. It returns where the
// packet data starts in the block, errOversize (with r.overCap and
// r.overLimit) for a captured length over the interface's limit, and
// errIfaceFrame for an interface not kept.
func (r *ngRecords) packet(typ uint32, b []byte, n int, ci *gopacket.CaptureInfo) (hdr int, err error) {
	var (
		id              int
		caplen, origLen uint32
	)
	if typ == ngSPB {
		hdr = 12
		if n < 16 {
			return hdr, fmt.Errorf("pcapng simple packet block too short (%d bytes)", n)
		}
		if len(r.ifaces) == 0 {
			return hdr, errors.New("pcapng simple packet block before any interface description")
		}
		origLen = r.u32(b[8:12])
		caplen = origLen
		if s := r.ifaces[0].snap; s != 0 && caplen > s {
			caplen = s
		}
	} else {
		hdr = 28
		if n < 32 {
			return hdr, fmt.Errorf("pcapng packet block too short (%d bytes)", n)
		}
		v := r.u32(b[8:12])
		if typ == ngPB {
			v = uint32(r.u16(b[8:10]))
		}
		switch {
		case uint64(v) < uint64(len(r.ifaces)):
		case uint64(v) < uint64(r.described):
			return hdr, errIfaceFrame
		default:
			return hdr, fmt.Errorf("pcapng packet block on interface %d, which the section does not describe (%d interfaces)", v, r.described)
		}
		id = int(v)
		caplen, origLen = r.u32(b[20:24]), r.u32(b[24:28])
	}
	f := &r.ifaces[id]
	if uint64(caplen) > uint64(n-hdr-4) {
		return hdr, fmt.Errorf("pcapng packet block: captured length %d does not fit in its %d-byte block", caplen, n)
	}
	if int(caplen) > f.maxCap {
		// Wireshark stops the file here. The block's length tells where
		// the next one starts, so it is skipped instead, and the file
		// read on.
		r.overCap, r.overLimit = int(caplen), f.maxCap
		return hdr, errOversize
	}
	ci.CaptureLength, ci.Length, ci.InterfaceIndex = int(caplen), int(origLen), id
	if typ != ngSPB {
		ci.Timestamp = f.time(r.u32(b[12:16]), r.u32(b[16:20]))
	}
	r.link, r.fcs = f.link, f.fcs
	return hdr, nil
}

// time converts a timestamp in the interface's units.
func (f *ngInterface) time(hi, lo uint32) time.Time {
	ts := uint64(hi)<<32 | uint64(lo)
	sec, frac := ts/f.units, ts%f.units
	var nsec uint64
	if f.scale != 0 {
		nsec = frac * f.scale
	} else {
		// frac < units, so the quotient is below 1e9 and fits.
		h, l := bits.Mul64(frac, 1e9)
		nsec, _ = bits.Div64(h, l, f.units)
	}
	return time.Unix(int64(sec)+f.offset, int64(nsec)).UTC()
}
