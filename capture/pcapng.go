package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
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

// maxBlockLength bounds a block read whole into memory: packet blocks and
// interface and section headers (other blocks are skipped unread), far
// over any real one, so that a lying length is an error, not memory.
const maxBlockLength = 16 << 20

// ngRecords reads the blocks of a pcapng file out of the input's read
// buffer. A packet that fits in the buffer is handed out where it lies,
// valid until the next call.
type ngRecords struct {
	br     *bufio.Reader
	be     bool // the current section is big-endian
	ifaces []ngInterface
	big    []byte // a block larger than the read buffer is copied here
	// Of the record returned last: the link type (linkUnknown for a frame
	// that is no packet, such as a custom block) and the length of the
	// FCS at the end of its data.
	link layers.LinkType
	fcs  int
}

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
	b, err := r.block(h)
	if err != nil {
		return nil, err
	}
	if err := r.section(b); err != nil {
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
// not know. It returns io.EOF at a clean end of the file and
// io.ErrUnexpectedEOF when the file ends inside a block.
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
			b, err := r.block(h)
			if err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
			return r.packet(typ, b)
		case ngSHB:
			b, err := r.block(h)
			if err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
			if err := r.section(b); err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
		case ngIDB:
			b, err := r.block(h)
			if err != nil {
				return nil, gopacket.CaptureInfo{}, err
			}
			if err := r.iface(b); err != nil {
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
	if uint64(n) > uint64(maxInt) {
		return 0, fmt.Errorf("pcapng block of type %#x: total length %d too large", r.u32(h[0:4]), n)
	}
	return int(n), nil
}

const maxInt = int(^uint(0) >> 1)

// skip discards a block without reading it into memory.
func (r *ngRecords) skip(h []byte) error {
	n, err := r.length(h)
	if err != nil {
		return err
	}
	if _, err := r.br.Discard(n); err != nil {
		return unexpected(err)
	}
	return nil
}

// block reads the whole block whose first 12 bytes are h and checks its
// trailing copy of the length. The bytes are valid until the next read.
func (r *ngRecords) block(h []byte) ([]byte, error) {
	n, err := r.length(h)
	if err != nil {
		return nil, err
	}
	var b []byte
	if n <= r.br.Size() {
		b, err = r.br.Peek(n)
		if len(b) < n {
			return nil, unexpected(err)
		}
		// Discard only moves the read position: b stays in place until
		// the buffer is next filled, by the next read.
		_, _ = r.br.Discard(n)
	} else {
		if n > maxBlockLength {
			return nil, fmt.Errorf("pcapng block of type %#x: total length %d is over the %d-byte limit", r.u32(h[0:4]), n, maxBlockLength)
		}
		// The buffer grows with the bytes actually there, so a lying
		// length cannot claim megabytes up front.
		b = r.big[:0]
		for len(b) < n {
			chunk := min(n-len(b), 1<<20)
			b = append(b, make([]byte, chunk)...)
			if _, err := io.ReadFull(r.br, b[len(b)-chunk:]); err != nil {
				return nil, unexpected(err)
			}
		}
		r.big = b
	}
	if end := r.u32(b[n-4:]); int(end) != n {
		return nil, fmt.Errorf("pcapng block of type %#x: total length %d at its start, %d at its end", r.u32(b[0:4]), n, end)
	}
	return b, nil
}

// section reads a section header block: its byte order (set by length),
// its version; the interfaces of the section before are forgotten.
func (r *ngRecords) section(b []byte) error {
	if len(b) < 28 {
		return fmt.Errorf("pcapng section header: block too short (%d bytes)", len(b))
	}
	// 1.2 is what some writers put for the same format; Wireshark reads
	// it, and refuses other versions.
	major, minor := r.u16(b[12:14]), r.u16(b[14:16])
	if major != 1 || minor != 0 && minor != 2 {
		return fmt.Errorf("pcapng section header: unsupported version %d.%d", major, minor)
	}
	r.ifaces = r.ifaces[:0]
	return nil
}

// iface reads an interface description block.
func (r *ngRecords) iface(b []byte) error {
	if len(b) < 20 {
		return fmt.Errorf("pcapng interface description: block too short (%d bytes)", len(b))
	}
	f := ngInterface{link: layers.LinkType(r.u16(b[8:10])), snap: r.u32(b[12:16]), units: 1e6, scale: 1e3}
	f.maxCap = maxRecordLength
	if uint64(f.snap) > uint64(maxRecordLength) && uint64(f.snap) <= uint64(maxInt) {
		f.maxCap = int(f.snap)
	}
	id := len(r.ifaces)
	opts := b[16 : len(b)-4]
	for len(opts) >= 4 {
		code, n := r.u16(opts[0:2]), int(r.u16(opts[2:4]))
		if code == optEnd {
			break
		}
		if 4+n > len(opts) {
			return fmt.Errorf("pcapng interface %d: option %d runs past the end of its block", id, code)
		}
		v := opts[4 : 4+n]
		switch {
		case code == optTSResol && n >= 1:
			exp := uint(v[0] & 0x7f)
			if v[0]&0x80 != 0 {
				if exp > 63 {
					return fmt.Errorf("pcapng interface %d: timestamp resolution 2^-%d is too fine", id, exp)
				}
				f.units = 1 << exp
			} else {
				if exp > 19 {
					return fmt.Errorf("pcapng interface %d: timestamp resolution 10^-%d is too fine", id, exp)
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
		case code == optTSOffset && n >= 8:
			if r.be {
				f.offset = int64(binary.BigEndian.Uint64(v))
			} else {
				f.offset = int64(binary.LittleEndian.Uint64(v))
			}
		case code == optFCSLen && n >= 1:
			// The specification counts bits; some writers put bytes.
			// As Wireshark does, a value that is not a whole number of
			// bytes is taken as bytes.
			f.fcs = int(v[0])
			if f.fcs%8 == 0 {
				f.fcs /= 8
			}
		}
		opts = opts[4+(n+3)&^3:]
	}
	if f.link != layers.LinkTypeEthernet {
		// Only Ethernet frames are parsed with their FCS in mind.
		f.fcs = 0
	}
	r.ifaces = append(r.ifaces, f)
	return nil
}

// packet reads an enhanced, simple or (obsolete) packet block.
func (r *ngRecords) packet(typ uint32, b []byte) ([]byte, gopacket.CaptureInfo, error) {
	var ci gopacket.CaptureInfo
	var (
		id      int
		data    []byte
		hdr     = 28 // bytes before the packet data
		caplen  uint32
		origLen uint32
	)
	if typ == ngSPB {
		hdr = 12
		if len(b) < 16 {
			return nil, ci, fmt.Errorf("pcapng simple packet block too short (%d bytes)", len(b))
		}
		if len(r.ifaces) == 0 {
			return nil, ci, errors.New("pcapng simple packet block before any interface description")
		}
		origLen = r.u32(b[8:12])
		caplen = origLen
		if s := r.ifaces[0].snap; s != 0 && caplen > s {
			caplen = s
		}
	} else {
		if len(b) < 32 {
			return nil, ci, fmt.Errorf("pcapng packet block too short (%d bytes)", len(b))
		}
		v := r.u32(b[8:12])
		if typ == ngPB {
			v = uint32(r.u16(b[8:10]))
		}
		if uint64(v) >= uint64(len(r.ifaces)) {
			return nil, ci, fmt.Errorf("pcapng packet block on interface %d, which the section does not describe (%d interfaces)", v, len(r.ifaces))
		}
		id = int(v)
		caplen, origLen = r.u32(b[20:24]), r.u32(b[24:28])
	}
	f := &r.ifaces[id]
	if uint64(caplen) > uint64(len(b)-hdr-4) {
		return nil, ci, fmt.Errorf("pcapng packet block: captured length %d does not fit in its %d-byte block", caplen, len(b))
	}
	if int(caplen) > f.maxCap {
		return nil, ci, fmt.Errorf("capture length exceeds snap length: %d > %d", caplen, f.snap)
	}
	data = b[hdr : hdr+int(caplen) : hdr+int(caplen)]
	ci.CaptureLength, ci.Length, ci.InterfaceIndex = int(caplen), int(origLen), id
	if typ != ngSPB {
		ci.Timestamp = f.time(r.u32(b[12:16]), r.u32(b[16:20]))
	}
	r.link, r.fcs = f.link, f.fcs
	return data, ci, nil
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
