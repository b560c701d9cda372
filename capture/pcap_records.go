package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Limits on a record's captured length, the only length in a file that
// memory is given to (a pcapng packet block is bounded by it too).
// maxRecordLength mirrors pcapgo's and Wireshark's default: a record may
// be that long whatever the snap length says, so that both readers fail
// on the same files with the same words. A snap length above it raises the
// limit up to maxSnapLength: that covers the longest TCP frames a capture
// of a host with TSO/GSO or Linux BIG TCP holds (512 KiB), with room. A
// snap length above maxSnapLength is not believed, as libpcap clamps it:
// no link type read here has frames that long, and the limit is what a
// record too large for the read buffer may make the reader hold.
const (
	maxRecordLength = 256 << 10
	maxSnapLength   = 1 << 20
)

// packetLimit is the longest captured length taken under snap length snap.
func packetLimit(snap uint32) int {
	if snap <= maxRecordLength || snap > maxSnapLength {
		return maxRecordLength
	}
	return int(snap)
}

// capLenError is the error for a captured length over limit, taken under
// snap length snap: in pcapgo's words when the snap length says less.
func capLenError(caplen, limit int, snap uint32) error {
	if uint64(caplen) > uint64(snap) {
		return fmt.Errorf("capture length exceeds snap length: %d > %d", caplen, snap)
	}
	return fmt.Errorf("capture length %d is over the %d-byte limit (snap length %d)", caplen, limit, snap)
}

// pcapRecords reads the records of a classic pcap file out of the input's
// read buffer: a record that fits in the buffer is handed out where it
// lies, not copied into a packet buffer first as pcapgo does. That copy was
// about a tenth of the cost of reading a large capture.
type pcapRecords struct {
	pcapFormat
	br  *bufio.Reader
	big []byte // a record larger than the read buffer is copied here
}

// pcapFormat is what a classic pcap file's header says about its records.
type pcapFormat struct {
	order  binary.ByteOrder
	nanos  uint32 // nanoseconds per unit of the timestamp's fraction field
	maxCap int
	snap   uint32 // the header's snap length, named in the error for a longer record
	fcs    int    // bytes of FCS at the end of each Ethernet frame; 0 none or unknown
}

// pcapHeader checks a classic pcap file's header with pcapgo's reader (a
// bad header is refused in its words) and reads what it says. A snap
// length of 0, which some writers put for "no limit", limits nothing more
// than any other below maxRecordLength: Wireshark reads such files too.
func pcapHeader(hdr []byte) (pcapFormat, layers.LinkType, error) {
	pr, err := pcapgo.NewReader(bytes.NewReader(hdr))
	if err != nil {
		return pcapFormat{}, 0, err
	}
	f := newPcapFormat(hdr)
	link := pr.LinkType() // the field's low 16 bits: the FCS bits are not part of it
	if link != layers.LinkTypeEthernet {
		f.fcs = 0
	}
	return f, link, nil
}

// newPcapFormat reads the 24-byte file header hdr, which pcapgo has checked.
func newPcapFormat(hdr []byte) pcapFormat {
	f := pcapFormat{order: binary.LittleEndian, nanos: 1000}
	switch string(hdr[:4]) {
	case "\xa1\xb2\xc3\xd4":
		f.order = binary.BigEndian
	case "\x4d\x3c\xb2\xa1":
		f.nanos = 1
	case "\xa1\xb2\x3c\x4d":
		f.order, f.nanos = binary.BigEndian, 1
	}
	f.snap = f.order.Uint32(hdr[16:20])
	f.maxCap = packetLimit(f.snap)
	// The link-type field's upper bits (libpcap's pcap-linktype): with
	// the F bit 0x04000000 set, bits 28-31 count the 16-bit words of FCS
	// at the end of every frame.
	if network := f.order.Uint32(hdr[20:24]); network&0x04000000 != 0 {
		f.fcs = int(network>>28) * 2
	}
	return f
}

// record reads the 16-byte record header h. A captured length larger than
// the original length is no error here: the record holds that many bytes,
// and the Reader reads them, as Wireshark does, and reports the file once.
func (f *pcapFormat) record(h []byte) (gopacket.CaptureInfo, error) {
	var ci gopacket.CaptureInfo
	ci.Timestamp = time.Unix(int64(f.order.Uint32(h[0:4])), int64(f.order.Uint32(h[4:8])*f.nanos)).UTC()
	ci.CaptureLength = int(f.order.Uint32(h[8:12]))
	ci.Length = int(f.order.Uint32(h[12:16]))
	if ci.CaptureLength > f.maxCap {
		return ci, capLenError(ci.CaptureLength, f.maxCap, f.snap)
	}
	return ci, nil
}

// ZeroCopyReadPacketData returns the next record's bytes, valid until the
// next call, and its capture info: io.EOF at a clean end of the file,
// io.ErrUnexpectedEOF when it ends inside a record.
func (r *pcapRecords) ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	var ci gopacket.CaptureInfo
	h, err := r.br.Peek(16)
	if len(h) < 16 {
		if len(h) == 0 && err == io.EOF {
			return nil, ci, io.EOF
		}
		return nil, ci, unexpected(err)
	}
	ci, err = r.record(h)
	if err != nil {
		return nil, ci, err
	}
	n := 16 + ci.CaptureLength
	if n <= r.br.Size() {
		rec, err := r.br.Peek(n)
		if len(rec) < n {
			return nil, ci, unexpected(err)
		}
		// Discard only moves the read position: rec stays in place
		// until the buffer is next filled, by the next call.
		_, _ = r.br.Discard(n)
		return rec[16:], ci, nil
	}
	_, _ = r.br.Discard(16)
	// The length comes from the file, checked against the limit: the
	// buffer grows with the bytes actually there, so even a lying header
	// under the limit gets no more memory than the file has bytes.
	data := r.big[:0]
	for len(data) < ci.CaptureLength {
		chunk := min(ci.CaptureLength-len(data), 1<<20)
		data = append(data, make([]byte, chunk)...)
		if _, err := io.ReadFull(r.br, data[len(data)-chunk:]); err != nil {
			return nil, ci, unexpected(err)
		}
	}
	r.big = data
	return data, ci, nil
}

// unexpected is the error for a file that ends inside a record: the end is
// unexpected there, while other read errors keep their own words.
func unexpected(err error) error {
	if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
