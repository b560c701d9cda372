package capture

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"unicode/utf8"
)

// An annotated copy (analyze --annotate) is the input as pcapng with a
// comment on the frames findings name and one on the section header. A
// pcapng input is copied block by block, as it is, so that its
// interfaces, link types, timestamps and comments survive: only the
// packet blocks of commented frames grow an opt_comment, and the section
// header its own. A classic pcap input becomes one interface and its
// records enhanced packet blocks with the same timestamps at the same
// resolution. Frames are counted as the Reader counts them (packet blocks
// and the blocks Wireshark shows as frames), so the comment lands on the
// frame number the report names.

// AnnotateOptions say what an annotated copy holds.
type AnnotateOptions struct {
	// Section is the comment of the (first) section header.
	Section string
	// Frames are the comments of frames, by 1-based frame number.
	Frames map[int64][]string
	// Secrets keeps the input's decryption secrets blocks, moved ahead of
	// its packets (Wireshark uses one only for the handshakes after it);
	// without it they are dropped: key material is a secret.
	Secrets bool
	// Force replaces an output file that exists (createWhole).
	Force bool
	// Keep, when set, chooses the frames copied (analyze --extract): the
	// others are left out, every interface description stays, so that
	// the frames kept keep their interfaces.
	Keep func(frame int64) bool
}

// AnnotateStats say what a copy wrote.
type AnnotateStats struct {
	Frames    int64 // frames read
	Written   int64 // frames written (all of them without Keep)
	Commented int64 // frames that got a comment
	// Uncommented are frames a comment was asked for that could not hold
	// one: simple packet blocks and other frames without options, or
	// frames past the end of the file.
	Uncommented  int64
	Secrets      int // decryption secrets blocks written
	SecretsDrop  int // decryption secrets blocks left out
	Truncated    bool
	Sections     int
	InputWasPcap bool
}

// ngOrder reads and appends in a pcapng section's byte order.
type ngOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// opt_comment, and the longest option value there is room for.
const (
	optComment    = 1
	maxOptionSize = 0xffff &^ 3
)

// maxCopiedSecrets bounds the secrets a copy moves ahead of its packets,
// held in memory until the first section header is written.
const maxCopiedSecrets = 64 << 20

// Annotate writes the annotated copy of the capture file in to out.
func Annotate(in, out string, opt AnnotateOptions) (AnnotateStats, error) {
	var st AnnotateStats
	var secrets []secretsBlock
	br, closeIn, err := openRaw(in)
	if err != nil {
		return st, err
	}
	defer closeIn()
	magic, _ := br.Peek(4)
	ng := string(magic) == "\x0a\x0d\x0d\x0a"
	if !ng && !isPcapMagic(magic) {
		return st, fmt.Errorf("annotate %s: not a pcap or pcapng file", in)
	}
	if ng && opt.Secrets {
		// A pass of its own: the secrets go ahead of the first packet, and
		// the file is read as a stream.
		sbr, closeS, err := openRaw(in)
		if err != nil {
			return st, err
		}
		secrets, err = collectSecrets(sbr)
		closeS()
		if err != nil {
			return st, fmt.Errorf("annotate %s: %w", in, err)
		}
	}
	f, err := createWhole(out, opt.Force)
	if err != nil {
		return st, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if ng {
		err = annotateNg(br, bw, opt, secrets, &st)
	} else {
		st.InputWasPcap = true
		err = annotatePcap(br, bw, opt, &st)
	}
	if e := bw.Flush(); err == nil {
		err = e
	}
	if err != nil {
		f.abort()
		// The temporary name is nothing to the user: the output's is.
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == f.Name() {
			err = pe.Err
		}
		return st, fmt.Errorf("annotate %s to %s: %w (nothing is left under that name)", in, out, err)
	}
	if err := f.commit(); err != nil {
		return st, fmt.Errorf("annotate %s to %s: %w", in, out, err)
	}
	for n := range opt.Frames {
		if n > st.Frames {
			st.Uncommented++
		}
	}
	return st, nil
}

// openRaw opens a capture file, through gzip when it is compressed.
func openRaw(name string) (*bufio.Reader, func(), error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("annotate: %w", err)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("annotate %s: gzip: %w", name, err)
		}
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	return br, func() { f.Close() }, nil
}

// ngBlock reads one whole pcapng block into buf's memory (grown as
// needed; valid until the next call with it) and its byte order (set by a
// section header, else order). It returns io.EOF at a clean end and
// io.ErrUnexpectedEOF for a block cut short.
func ngBlock(br *bufio.Reader, order ngOrder, buf []byte) ([]byte, ngOrder, error) {
	h, err := br.Peek(12)
	if len(h) < 12 {
		if len(h) == 0 && err == io.EOF {
			return nil, order, io.EOF
		}
		return nil, order, io.ErrUnexpectedEOF
	}
	if binary.LittleEndian.Uint32(h) == ngSHB {
		switch {
		case binary.LittleEndian.Uint32(h[8:12]) == ngByteOrderMagic:
			order = binary.LittleEndian
		case binary.BigEndian.Uint32(h[8:12]) == ngByteOrderMagic:
			order = binary.BigEndian
		default:
			return nil, order, fmt.Errorf("pcapng section header: bad byte-order magic % x", h[8:12])
		}
	}
	if order == nil {
		return nil, order, errors.New("pcapng: no section header first")
	}
	n := order.Uint32(h[4:8])
	if n < 12 || n%4 != 0 || n > maxBlockLength {
		return nil, order, fmt.Errorf("pcapng block of type %#x: bad total length %d", order.Uint32(h), n)
	}
	b := slices.Grow(buf[:0], int(n))[:n]
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, order, io.ErrUnexpectedEOF
	}
	if order.Uint32(b[n-4:]) != n {
		return nil, order, fmt.Errorf("pcapng block of type %#x: total length %d at its start, %d at its end", order.Uint32(h), n, order.Uint32(b[n-4:]))
	}
	return b, order, nil
}

// collectSecrets reads the decryption secrets blocks of a pcapng file:
// pairs of type (uint32) and data ([]byte).
func collectSecrets(br *bufio.Reader) ([]secretsBlock, error) {
	var out []secretsBlock
	var order ngOrder
	var buf []byte
	total := 0
	for {
		b, o, err := ngBlock(br, order, buf)
		buf = b
		order = o
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if order.Uint32(b) != ngDSB || len(b) < 20 {
			continue
		}
		size := int(order.Uint32(b[12:16]))
		if size > len(b)-20 {
			return nil, fmt.Errorf("pcapng decryption secrets block: %d bytes of secrets do not fit in its %d-byte block", size, len(b))
		}
		if total += size; total > maxCopiedSecrets {
			return nil, fmt.Errorf("the decryption secrets are over %d MiB: too many to move ahead of the packets", maxCopiedSecrets>>20)
		}
		out = append(out, secretsBlock{typ: order.Uint32(b[8:12]), data: append([]byte(nil), b[16:16+size]...)})
	}
}

// isFrame says whether a block of type typ is a frame as the Reader
// counts them (ZeroCopyReadPacketData).
func isFrame(typ uint32) bool {
	switch typ {
	case ngEPB, ngPB, ngSPB, ngCustom, ngCustomNoCopy, ngJournal, ngSysdig, ngSysdigV2, ngSysdigV2L:
		return true
	}
	return false
}

func annotateNg(br *bufio.Reader, w io.Writer, opt AnnotateOptions, secrets []secretsBlock, st *AnnotateStats) error {
	var order ngOrder
	var buf []byte
	for {
		b, o, err := ngBlock(br, order, buf)
		buf = b
		order = o
		if err == io.EOF {
			return nil
		}
		if err == io.ErrUnexpectedEOF {
			// The report names the cut; what was read is copied.
			st.Truncated = true
			return nil
		}
		if err != nil {
			return err
		}
		typ := order.Uint32(b)
		switch {
		case typ == ngSHB:
			if len(b) < 28 {
				return fmt.Errorf("pcapng section header: block too short (%d bytes)", len(b))
			}
			// The section grows by the comments: its length, when the
			// header gives one, would be wrong, so it is made unknown.
			b[16], b[17], b[18], b[19], b[20], b[21], b[22], b[23] = 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
			st.Sections++
			if st.Sections == 1 {
				if opt.Section != "" {
					b = withComments(b, 24, order, []string{opt.Section})
				}
				if _, err := w.Write(b); err != nil {
					return err
				}
				for _, s := range secrets {
					if _, err := w.Write(dsbBlockOrder(order, s.typ, s.data)); err != nil {
						return err
					}
					st.Secrets++
				}
				continue
			}
		case typ == ngDSB:
			// Written ahead of the packets (secrets), or left out.
			if !opt.Secrets {
				st.SecretsDrop++
			}
			continue
		case isFrame(typ):
			st.Frames++
			if opt.Keep != nil && !opt.Keep(st.Frames) {
				continue
			}
			st.Written++
			if c := opt.Frames[st.Frames]; len(c) > 0 {
				if (typ == ngEPB || typ == ngPB) && len(b) >= 32 {
					capLen := int(order.Uint32(b[20:24]))
					at := 28 + (capLen+3)&^3
					if at <= len(b)-4 {
						b = withComments(b, at, order, c)
						st.Commented++
						break
					}
				}
				st.Uncommented++
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
}

// withComments is block b, whose options start at offset at, with an
// opt_comment for each of comments added after the options it has.
func withComments(b []byte, at int, order ngOrder, comments []string) []byte {
	end := len(b) - 4
	opts := b[at:end]
	// The options without their end marker (and anything after it).
	keep := 0
	for keep+4 <= len(opts) {
		code, n := order.Uint16(opts[keep:]), int(order.Uint16(opts[keep+2:]))
		if code == optEnd || keep+4+(n+3)&^3 > len(opts) {
			break
		}
		keep += 4 + (n+3)&^3
	}
	out := make([]byte, 0, len(b)+64)
	out = append(out, b[:at+keep]...)
	for _, c := range comments {
		out = appendOption(out, order, optComment, []byte(clip(c, maxOptionSize)))
	}
	out = appendOption(out, order, optEnd, nil)
	out = order.AppendUint32(out, 0)
	total := uint32(len(out))
	order.PutUint32(out[4:8], total)
	order.PutUint32(out[len(out)-4:], total)
	return out
}

func appendOption(b []byte, order ngOrder, code uint16, v []byte) []byte {
	b = order.AppendUint16(b, code)
	b = order.AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	return append(b, make([]byte, (4-len(v)%4)%4)...)
}

// clip cuts s to at most n bytes, at a character's start.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// dsbBlockOrder is dsbBlock in the byte order of the section it goes in.
func dsbBlockOrder(order ngOrder, typ uint32, data []byte) []byte {
	b := dsbBlock(typ, data)
	if order == binary.LittleEndian {
		return b
	}
	for _, at := range []int{0, 4, 8, 12, len(b) - 4} {
		order.PutUint32(b[at:], binary.LittleEndian.Uint32(b[at:]))
	}
	return b
}

// annotatePcap writes a classic pcap file as pcapng: a section header, one
// interface with the file's link type, snap length, timestamp resolution
// and FCS length, and an enhanced packet block for each record.
func annotatePcap(br *bufio.Reader, w io.Writer, opt AnnotateOptions, st *AnnotateStats) error {
	hdr, _ := br.Peek(24)
	f, link, err := pcapHeader(hdr)
	if err != nil {
		return err
	}
	_, _ = br.Discard(24)
	le := binary.LittleEndian
	st.Sections = 1
	shb := le.AppendUint32(nil, ngSHB)
	shb = le.AppendUint32(shb, 0)
	shb = le.AppendUint32(shb, ngByteOrderMagic)
	shb = le.AppendUint16(shb, 1)
	shb = le.AppendUint16(shb, 0)
	shb = le.AppendUint64(shb, ^uint64(0))
	shb = le.AppendUint32(shb, 0)
	var sc []string
	if opt.Section != "" {
		sc = []string{opt.Section}
	}
	if _, err := w.Write(withComments(shb, 24, le, sc)); err != nil {
		return err
	}
	idb := le.AppendUint32(nil, ngIDB)
	idb = le.AppendUint32(idb, 0)
	idb = le.AppendUint16(idb, uint16(link))
	idb = le.AppendUint16(idb, 0)
	idb = le.AppendUint32(idb, f.snap)
	var opts []byte
	if f.nanos == 1 {
		opts = appendOption(opts, le, optTSResol, []byte{9})
	}
	if f.fcs > 0 {
		opts = appendOption(opts, le, optFCSLen, []byte{byte(f.fcs * 8)})
	}
	idb = append(idb, opts...)
	idb = appendOption(idb, le, optEnd, nil)
	idb = le.AppendUint32(idb, 0)
	le.PutUint32(idb[4:], uint32(len(idb)))
	le.PutUint32(idb[len(idb)-4:], uint32(len(idb)))
	if _, err := w.Write(idb); err != nil {
		return err
	}
	var rec [16]byte
	var data []byte
	for {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			if err != io.EOF {
				st.Truncated = true
			}
			return nil
		}
		sec, frac := uint64(f.order.Uint32(rec[0:4])), uint64(f.order.Uint32(rec[4:8]))
		capLen, origLen := f.order.Uint32(rec[8:12]), f.order.Uint32(rec[12:16])
		if capLen > maxSnapLength {
			return fmt.Errorf("frame %d: captured length %d is over the %d-byte limit", st.Frames+1, capLen, maxSnapLength)
		}
		data = append(data[:0], make([]byte, capLen)...)
		if _, err := io.ReadFull(br, data); err != nil {
			st.Truncated = true
			return nil
		}
		st.Frames++
		if opt.Keep != nil && !opt.Keep(st.Frames) {
			continue
		}
		st.Written++
		units := uint64(1_000_000)
		if f.nanos == 1 {
			units = 1_000_000_000
		}
		ts := sec*units + frac
		b := le.AppendUint32(make([]byte, 0, 64+len(data)), ngEPB)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint32(b, 0) // interface 0
		b = le.AppendUint32(b, uint32(ts>>32))
		b = le.AppendUint32(b, uint32(ts))
		b = le.AppendUint32(b, capLen)
		b = le.AppendUint32(b, origLen)
		b = append(b, data...)
		b = append(b, make([]byte, (4-len(data)%4)%4)...)
		at := len(b)
		b = le.AppendUint32(b, 0)
		if c := opt.Frames[st.Frames]; len(c) > 0 {
			b = withComments(b, at, le, c)
			st.Commented++
		} else {
			le.PutUint32(b[4:], uint32(len(b)))
			le.PutUint32(b[len(b)-4:], uint32(len(b)))
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
}
