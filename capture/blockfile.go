package capture

import (
	"errors"
	"os"
)

// blockFile holds what a capture file's writer produces and writes it to
// the file only up to the end of the last whole block, so that the file
// on disk always ends where a block ends: a process killed at any moment
// leaves a file every reader takes whole (tshark included), losing only
// what was still held here. A write the disk cannot take whole (full, or
// over a quota) is cut back to the last whole block it holds, and the
// file stays readable.
type blockFile struct {
	f     *os.File
	buf   []byte
	whole int        // len(buf) at the end of the last whole block
	ends  []blockEnd // the ends of the whole blocks in buf, for a short write
	off   int64      // the file's length: where buf[0] goes
	// frames is how many frames the file holds (those written out).
	frames int64
}

// blockEnd is where a whole block ends in the buffer, and the number of
// frames written up to it.
type blockEnd struct {
	at     int
	frames int64
}

// blockFileBuffer is how much is held before it is written out.
const blockFileBuffer = 1 << 20

func newBlockFile(f *os.File) *blockFile {
	return &blockFile{f: f, buf: make([]byte, 0, blockFileBuffer+64<<10)}
}

// Write holds p; it is written out after a block ends (mark).
func (b *blockFile) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// mark says that what is held so far ends with a whole block, the frames
// written up to it numbering frames, and writes it out once enough is
// held.
func (b *blockFile) mark(frames int64) error {
	if b.whole == len(b.buf) {
		return nil
	}
	b.whole = len(b.buf)
	b.ends = append(b.ends, blockEnd{b.whole, frames})
	if b.whole >= blockFileBuffer {
		return b.flush()
	}
	return nil
}

// flush writes the whole blocks held. When the file takes only part of
// them, it is cut back to the last whole block written, and the error
// returned: the blocks after it are lost.
func (b *blockFile) flush() error {
	if b.whole == 0 {
		return nil
	}
	// Write, not WriteAt: the file may be a FIFO or a device (--force).
	n, err := b.f.Write(b.buf[:b.whole])
	if err != nil {
		keep := 0
		for _, e := range b.ends {
			if e.at <= n {
				keep, b.frames = e.at, e.frames
			}
		}
		b.off += int64(keep)
		if terr := b.f.Truncate(b.off); terr != nil {
			return errors.Join(err, terr)
		}
		b.buf, b.ends, b.whole = b.buf[:0], b.ends[:0], 0
		return err
	}
	b.off += int64(n)
	b.frames = b.ends[len(b.ends)-1].frames
	rest := copy(b.buf, b.buf[b.whole:])
	b.buf, b.ends, b.whole = b.buf[:rest], b.ends[:0], 0
	return nil
}

// size is the file's length once what is held is written.
func (b *blockFile) size() int64 { return b.off + int64(len(b.buf)) }
