package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Recorder writes the frames a live capture reads to pcapng files, so that
// the evidence can be analysed again later. With a size limit it rotates:
// x.pcapng, then x-2.pcapng, x-3.pcapng, …; frame numbers restart in each
// file, as Wireshark counts them. It rotates by time too (RotateEvery),
// and with MaxFiles keeps a ring of that many files, as tcpdump -C/-G
// with -W does.
//
// A Recorder is used on one goroutine, the capture's: time rotation
// happens when a frame or a Tick comes after the deadline, never on a
// timer of its own.
//
// The files hold whatever crossed the wire, SASL/PLAIN passwords included,
// and live creates them as root in directories other users may write
// (/var/tmp): each is created new, mode 0600 whatever the umask, and never
// through a symbolic link or into a file someone else made beforehand
// (createFile).
type Recorder struct {
	base    string
	link    layers.LinkType
	snaplen int
	max     int64
	force   bool
	iface   pcapgo.NgInterface
	every   time.Duration
	ring    int // MaxFiles
	// deadline is when the current file is closed for the next (every).
	deadline time.Time
	// began is when the recording started, last the latest time seen (a
	// frame's timestamp or a Tick's), for the statistics block.
	began, last time.Time
	stats       func() (received, dropped int64)
	// created are the files this Recorder made, by name, so that the ring
	// removes only its own (never one that was put in its place).
	created map[string]fs.FileInfo
	index   int // of the file being written, from 0
	frame   int64
	f       *os.File
	bf      *blockFile
	w       *pcapgo.NgWriter
	size    int64
	names   []string
	// secrets are the decryption secrets written so far (WriteSecrets),
	// written again at the start of each file a rotation opens, so that
	// every file can be decrypted on its own; the newest maxKeptSecrets
	// bytes of them, as a live capture runs for days.
	secrets     []secretsBlock
	secretsKept int
	// Secrets blocks written after the current file's first frame: at
	// close their text is moved ahead of its frames (moveSecretsAhead),
	// for Wireshark reads a secrets block only for the handshakes after
	// it. late holds their data and where each block is, within
	// maxLateSecrets.
	late        []secretsBlock
	lateBytes   int64
	lateTooMany bool
	// room is where the block kept for them is, ahead of the first frame
	// (-1: none), roomSize its size, and nextRoom the size the next file
	// keeps (twice the late secrets of the last, within bounds).
	room, roomSize, nextRoom int64
	seekable                 bool
	// stopped is why the Recorder stopped writing (a full disk), nil
	// while it writes; unwritten counts the frames captured that no file
	// holds since.
	stopped   error
	unwritten int64
	warn      func(error)
}

type secretsBlock struct {
	typ  uint32
	data []byte
	at   int64 // where the block is in the file (late blocks only)
}

// ngRoom is the type of the block kept ahead of a file's frames for its
// late secrets: a type of the range pcapng keeps for local use, which
// readers skip (tshark and kidscope do), turned into a decryption secrets
// block when the file closes.
const ngRoom = 0x8000_4b53

// The room a file keeps for its late secrets: 64 KiB (some 60 TLS 1.3
// connections' keys), and twice what the last file needed, up to
// maxLateSecrets.
const minRoom = 64 << 10

// maxSecretsBlock is the largest decryption secrets block written: the
// reader refuses blocks over maxBlock.
const maxSecretsBlock = 1 << 20

// maxKeptSecrets bounds the secrets kept to start each rotated file with:
// some 20,000 TLS 1.3 connections' keys, more than a file's connections.
const maxKeptSecrets = 8 << 20

// maxLateSecrets bounds the secrets blocks of one file that reorder moves
// ahead of its frames (kept in memory until the file closes).
const maxLateSecrets = 8 << 20

// RecordOptions configure a Recorder.
type RecordOptions struct {
	// MaxSize rotates to a new file before one would grow past it; 0 or
	// less means one file.
	MaxSize int64
	// Force replaces regular files that exist instead of refusing them,
	// and writes into a FIFO or character device of root's or the
	// process's own; a symbolic link or anything else is still refused.
	Force bool
	// RotateEvery rotates to a new file once a frame's timestamp, or a
	// Tick, is this long after the current file began; 0: never.
	RotateEvery time.Duration
	// MaxFiles, with MaxSize or RotateEvery, keeps at most this many
	// files: the next one replaces the oldest (x.pcapng, x-2.pcapng, …,
	// x-N.pcapng, then x.pcapng again). Only a file this Recorder created
	// is removed; anything else found under the name is refused as for
	// the first file. 0: no limit.
	MaxFiles int
	// Interface, Filter and OS describe the capture in each file's
	// interface description block (if_name, if_filter, if_os).
	Interface, Filter, OS string
	// Start is when the capture began (the first file's start and the
	// statistics' isb_starttime); the zero time is now.
	Start time.Time
	// Warn, when set, is told what went wrong with the files while the
	// capture went on: writing stopped (a full disk: the file was cut at
	// its last whole block and closed; Unwritten counts what followed),
	// or a file's late secrets could not be moved ahead of its frames.
	Warn func(error)
}

// NewRecorder creates the first file.
func NewRecorder(path string, link layers.LinkType, snaplen int, opt RecordOptions) (*Recorder, error) {
	r := &Recorder{base: path, link: link, snaplen: snaplen, max: opt.MaxSize, force: opt.Force,
		every: opt.RotateEvery, ring: opt.MaxFiles, began: opt.Start, created: map[string]fs.FileInfo{}, warn: opt.Warn}
	if r.began.IsZero() {
		r.began = time.Now()
	}
	if r.max <= 0 && r.every <= 0 {
		r.ring = 0 // one file: nothing to keep a ring of
	}
	r.last = r.began
	name := opt.Interface
	if name == "" {
		name = "kidscope"
	}
	r.iface = pcapgo.NgInterface{Name: name, Filter: opt.Filter, OS: opt.OS,
		LinkType: link, SnapLength: uint32(snaplen), TimestampResolution: 9}
	if err := r.open(r.began); err != nil {
		return nil, err
	}
	return r, nil
}

// SetStats gives the Recorder the capture's counters: received and dropped
// since the capture began, written in an interface statistics block at the
// end of each file (without them the block is left out).
func (r *Recorder) SetStats(stats func() (received, dropped int64)) { r.stats = stats }

// name is the path of file i: with a ring of MaxFiles, i counts around it.
func (r *Recorder) name(i int) string {
	if r.ring > 0 {
		i %= r.ring
	}
	if i == 0 {
		return r.base
	}
	return NumberedName(r.base, i+1)
}

// NumberedName is path with -n before its extension: x.pcapng, 2 is
// x-2.pcapng (the names of a rotation, and of analyze --annotate's copies
// of several inputs).
func NumberedName(path string, n int) string {
	ext := ""
	base := path
	if j := strings.LastIndex(base, "."); j > strings.LastIndex(base, "/") {
		base, ext = base[:j], base[j:]
	}
	return fmt.Sprintf("%s-%d%s", base, n, ext)
}

// open creates the file of r.index, which begins at start.
func (r *Recorder) open(start time.Time) error {
	name := r.name(r.index)
	if err := r.removeOwn(name); err != nil {
		return err
	}
	f, err := createFile(name, r.force)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		r.created[name] = fi
	}
	r.f, r.bf = f, newBlockFile(f)
	r.w, err = pcapgo.NewNgWriterInterface(r.bf, r.iface,
		pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "kidscope live"}})
	if err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if r.every > 0 {
		r.deadline = start.Add(r.every)
	}
	r.frame, r.size = 0, 0
	r.late, r.lateBytes, r.lateTooMany, r.room, r.roomSize = nil, 0, false, -1, 0
	if fi, err := f.Stat(); err == nil {
		r.seekable = fi.Mode().IsRegular()
	}
	r.names = append(r.names, name)
	for _, b := range r.secrets {
		if _, err := r.writeSecrets(b.typ, b.data); err != nil {
			return err
		}
	}
	// The header on disk at once: a file of no frames yet is a capture
	// file all the same.
	if err := r.push(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := r.bf.flush(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// push hands what the pcapng writer holds, which ends with a whole block,
// to the block file.
func (r *Recorder) push() error {
	if err := r.w.Flush(); err != nil {
		return err
	}
	return r.bf.mark(r.frame)
}

// WriteSecrets writes a decryption secrets block (pcapng's DSB; typ is
// SecretsTLSKeyLog for lines of a TLS key log) before the frames written
// next, as editcap --inject-secrets does, and again at the start of every
// file a rotation opens. Only live --write-secrets calls it: the key
// material is a secret, and the files are 0600 for what they already hold.
func (r *Recorder) WriteSecrets(typ uint32, data []byte) error {
	if r.stopped != nil {
		return nil
	}
	for len(data) > 0 {
		n := len(data)
		if n > maxSecretsBlock {
			// Cut at a line's end when the text is a key log's.
			n = maxSecretsBlock
			if i := bytes.LastIndexByte(data[:n], '\n'); i > 0 {
				n = i + 1
			}
		}
		chunk := bytes.Clone(data[:n])
		data = data[n:]
		r.secrets = append(r.secrets, secretsBlock{typ: typ, data: chunk})
		r.secretsKept += len(chunk)
		for r.secretsKept > maxKeptSecrets && len(r.secrets) > 1 {
			r.secretsKept -= len(r.secrets[0].data)
			r.secrets = r.secrets[1:]
		}
		at, err := r.writeSecrets(typ, chunk)
		if err != nil {
			r.stop(err)
			return r.stopped
		}
		if r.frame > 0 {
			r.lateBytes += int64(blockSize(chunk))
			if r.lateBytes <= maxLateSecrets {
				r.late = append(r.late, secretsBlock{typ, chunk, at})
			} else {
				r.lateTooMany = true
			}
		}
	}
	return nil
}

// blockSize is the size of the decryption secrets block that holds data.
func blockSize(data []byte) int { return 20 + (len(data)+3)&^3 }

// writeSecrets writes one decryption secrets block into the current file,
// after what the pcapng writer holds.
func (r *Recorder) writeSecrets(typ uint32, data []byte) (at int64, err error) {
	if err := r.w.Flush(); err != nil {
		return 0, fmt.Errorf("write %s: %w", r.names[len(r.names)-1], err)
	}
	b := dsbBlock(typ, data)
	at = r.bf.size()
	_, _ = r.bf.Write(b) // held in memory: it cannot fail
	r.size += int64(len(b))
	if err := r.bf.mark(r.frame); err != nil {
		return 0, fmt.Errorf("write %s: %w", r.names[len(r.names)-1], err)
	}
	return at, nil
}

// dsbBlock is the decryption secrets block that holds data, little-endian
// as the pcapng writer writes the others.
func dsbBlock(typ uint32, data []byte) []byte {
	le := binary.LittleEndian
	total := uint32(blockSize(data))
	b := make([]byte, 0, total)
	b = le.AppendUint32(b, ngDSB)
	b = le.AppendUint32(b, total)
	b = le.AppendUint32(b, typ)
	b = le.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	b = append(b, make([]byte, int(total)-20-len(data))...)
	return le.AppendUint32(b, total)
}

// removeOwn removes, when the ring comes back to name, the file this
// Recorder created there, if it is still that file: whatever else is there
// (a symbolic link, another's file) is left for createFile to refuse.
func (r *Recorder) removeOwn(name string) error {
	mine, ok := r.created[name]
	if !ok {
		return nil
	}
	delete(r.created, name)
	now, err := os.Lstat(name)
	if err != nil || !os.SameFile(mine, now) {
		return nil
	}
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("rotate: remove the oldest file %s: %w", name, err)
	}
	return nil
}

// rotate closes the current file and opens the next, which begins at start.
func (r *Recorder) rotate(start time.Time) error {
	if err := r.closeFile(); err != nil {
		return err
	}
	r.index++
	return r.open(start)
}

// Write records one frame and returns the file index and the frame number
// it has there. Once writing has stopped (Unwritten) the frame is counted
// and not written: its number is 0, for no file holds it. The error is
// always nil: a file that cannot be written stops the recording, which
// Warn is told, and the capture goes on.
func (r *Recorder) Write(ci gopacket.CaptureInfo, data []byte) (file int, frame int64, err error) {
	if ci.Timestamp.After(r.last) {
		r.last = ci.Timestamp
	}
	if r.stopped != nil {
		r.unwritten++
		return r.index, 0, nil
	}
	switch {
	case r.frame == 0:
	case r.max > 0 && r.size+int64(len(data)) > r.max:
		err = r.rotate(ci.Timestamp)
	case r.every > 0 && !ci.Timestamp.Before(r.deadline):
		err = r.rotate(r.nextStart(ci.Timestamp))
	}
	if err != nil || r.stopped != nil {
		r.stop(err)
		r.unwritten++
		return r.index, 0, nil
	}
	ci.InterfaceIndex = 0
	ci.AncillaryData = nil
	if r.frame == 0 && r.seekable && len(r.secrets) > 0 {
		r.keepRoom()
	}
	if err := r.w.WritePacket(ci, data); err != nil {
		r.stop(err)
		r.unwritten++
		return r.index, 0, nil
	}
	r.frame++
	r.size += int64(len(data)) + 32 // the enhanced packet block's own bytes
	if err := r.push(); err != nil {
		frame := r.frame
		r.stop(err)
		if frame > r.frame {
			return r.index, 0, nil // cut off with the blocks after the last whole one
		}
	}
	return r.index, r.frame, nil
}

// stop ends the recording after err (a full disk): the current file is
// closed where its last whole block ends, the frames it lost are counted
// unwritten, and Warn is told once. Frames captured after are counted,
// not written.
func (r *Recorder) stop(err error) {
	if r.stopped != nil {
		return
	}
	if err == nil {
		err = errors.New("the recording stopped")
	}
	name := r.names[len(r.names)-1]
	if r.f != nil {
		lost := r.frame - r.bf.frames
		r.unwritten += lost
		r.frame = r.bf.frames
		r.f.Close()
		r.f = nil
	}
	if !strings.Contains(err.Error(), name) {
		err = fmt.Errorf("write %s: %w", name, err)
	}
	r.stopped = &StoppedError{Err: err, File: name, Frames: r.frame}
	if r.warn != nil {
		r.warn(r.stopped)
	}
}

// StoppedError says why a Recorder stopped writing and where: File ends
// with its frame Frames, the last whole one the disk took.
type StoppedError struct {
	Err    error
	File   string
	Frames int64
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("%v: the recording stopped; %s ends at its last whole frame (%d)", e.Err, e.File, e.Frames)
}

func (e *StoppedError) Unwrap() error { return e.Err }

// Unwritten returns the frames captured that no file holds, and why:
// nil while the Recorder writes every frame.
func (r *Recorder) Unwritten() (int64, *StoppedError) {
	se, _ := r.stopped.(*StoppedError)
	return r.unwritten, se
}

// nextStart is when the file that follows the current one at time t
// begins: on the period's boundary, as tcpdump -G keeps the files' spans
// equal, unless t is more than a period past the deadline (nothing came
// for a while), when it begins at t.
func (r *Recorder) nextStart(t time.Time) time.Time {
	if t.Sub(r.deadline) < r.every {
		return r.deadline
	}
	return t
}

// Tick rotates by time when now is past the current file's deadline and
// the file holds frames (an idle capture makes no empty files); live calls
// it at each of its ticks, on the capture's goroutine.
func (r *Recorder) Tick(now time.Time) error {
	if now.After(r.last) {
		r.last = now
	}
	if r.every <= 0 || r.f == nil || r.stopped != nil || now.Before(r.deadline) {
		return nil
	}
	if r.frame == 0 {
		r.deadline = now.Add(r.every)
		return nil
	}
	if err := r.rotate(r.nextStart(now)); err != nil {
		r.stop(err)
		return r.stopped
	}
	return nil
}

// Files are the paths written so far, in order, one for each file index
// (with MaxFiles the names repeat, and an older file of a name is gone).
func (r *Recorder) Files() []string { return append([]string(nil), r.names...) }

// Chown gives the files to another user: live, giving up root, hands the
// first file to the -Z user when it keeps a ring, so that the user may
// remove it when the ring comes round (in a sticky directory only the
// owner may).
func (r *Recorder) Chown(uid, gid int) error {
	if r.f == nil {
		return nil
	}
	if err := r.f.Chown(uid, gid); err != nil {
		return fmt.Errorf("write %s: %w", r.names[len(r.names)-1], err)
	}
	return nil // the file is the one created: os.SameFile still knows it
}

// writeStats writes the interface statistics block that ends a file. The
// counts are the capture's since it began, not this file's: pcapng's
// isb_ifrecv and isb_ifdrop count from the start of the capture on the
// interface, with isb_starttime saying when that was.
func (r *Recorder) writeStats() error {
	if r.stats == nil {
		return nil
	}
	recv, drop := r.stats()
	// The end is the latest time seen, a frame's or a Tick's: the clock
	// the Recorder is given, so that its files agree with their frames.
	end := r.last
	return r.w.WriteInterfaceStats(0, pcapgo.NgInterfaceStatistics{LastUpdate: end, StartTime: r.began, EndTime: end,
		PacketsReceived: uint64(max(recv, 0)), PacketsDropped: uint64(max(drop, 0))})
}

// closeFile ends the current file with its statistics, writes it out and
// syncs it to disk (a rotated file is then whole even after a power cut),
// and moves its late secrets ahead of its frames. A file that cannot be
// written whole stops the recording (stop).
func (r *Recorder) closeFile() error {
	if r.f == nil {
		return nil
	}
	err := r.writeStats()
	if err == nil {
		err = r.push()
	}
	if err == nil {
		err = r.bf.flush()
	}
	if err == nil && r.seekable {
		err = r.f.Sync()
	}
	if err != nil {
		r.stop(err)
		return r.stopped
	}
	name := r.names[len(r.names)-1]
	if len(r.late) > 0 && r.room >= 0 {
		if err := r.moveSecretsAhead(); err != nil && r.warn != nil {
			r.warn(fmt.Errorf("%s: its late decryption secrets stay after the frames they decrypt (kidscope reads them there; Wireshark needs editcap --inject-secrets): %w", name, err))
		}
	}
	if r.room >= 0 {
		r.nextRoom = min(max(2*r.lateBytes, minRoom), maxLateSecrets)
	}
	err = r.f.Close()
	r.f = nil
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// keepRoom writes, ahead of a file's first frame, a block of a type
// readers skip, which the text of the secrets written after that frame
// replaces when the file closes.
func (r *Recorder) keepRoom() {
	if err := r.w.Flush(); err != nil {
		return // written with the next frame, which fails the same way
	}
	size := max(r.nextRoom, minRoom)
	b := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint32(b, ngRoom)
	le.PutUint32(b[4:], uint32(size))
	le.PutUint32(b[size-4:], uint32(size))
	r.room, r.roomSize = r.bf.size(), size
	_, _ = r.bf.Write(b)
	r.size += size
}

// moveSecretsAhead puts the text of the late secrets blocks into the room
// kept ahead of the frames, as one decryption secrets block of the room's
// size (key log text padded with empty lines), then makes the late blocks
// blocks readers skip. Each step leaves a file every reader takes whole:
// the text is written while its block is still of a type readers skip,
// then one aligned 4-byte write of the type makes it a secrets block (the
// length at both ends stays the room's); until each late block is turned
// off, its keys are read twice, which changes nothing. Late secrets past
// the room stay where they are.
func (r *Recorder) moveSecretsAhead() error {
	le := binary.LittleEndian
	space := int(r.roomSize) - 20
	var text []byte
	moved := 0
	for _, sb := range r.late {
		if sb.typ != SecretsTLSKeyLog || len(text)+len(sb.data) > space {
			break
		}
		text = append(text, sb.data...)
		moved++
	}
	if moved == 0 {
		return fmt.Errorf("%d bytes of secrets, room for %d", len(r.late[0].data), space)
	}
	body := make([]byte, 8+space)
	le.PutUint32(body, SecretsTLSKeyLog)
	le.PutUint32(body[4:], uint32(space))
	n := copy(body[8:], text)
	for i := 8 + n; i < len(body); i++ {
		body[i] = '\n'
	}
	if _, err := r.f.WriteAt(body, r.room+8); err != nil {
		return err
	}
	// On disk before the type says what it is (a crash of the machine,
	// not only of the process, keeps the order).
	if err := r.f.Sync(); err != nil {
		return err
	}
	var word [4]byte
	le.PutUint32(word[:], ngDSB)
	if _, err := r.f.WriteAt(word[:], r.room); err != nil {
		return err
	}
	le.PutUint32(word[:], ngRoom)
	for _, sb := range r.late[:moved] {
		if _, err := r.f.WriteAt(word[:], sb.at); err != nil {
			return err
		}
	}
	return r.f.Sync()
}

// Flush writes out what is held (live calls it at each tick, so that the
// file is readable while the capture runs). A failure stops the
// recording (Unwritten says so) and is not returned again.
func (r *Recorder) Flush() error {
	if r.f == nil || r.stopped != nil {
		return nil
	}
	err := r.push()
	if err == nil {
		err = r.bf.flush()
	}
	if err != nil {
		r.stop(err)
		return r.stopped
	}
	return nil
}

// Close finishes the current file. A file that could not be finished
// stops the recording, which Warn is told and Unwritten says: that is not
// returned again.
func (r *Recorder) Close() error {
	err := r.closeFile()
	if r.stopped != nil {
		return nil
	}
	return err
}

// ExistsError is createFile's error for a file that is there already and
// may not be replaced.
type ExistsError struct {
	Path string
	// Why it may not be replaced: empty for a regular file (Force would
	// replace it), else what it is.
	Kind string
}

func (e *ExistsError) Error() string {
	if e.Kind != "" {
		return fmt.Sprintf("%s is %s: refusing to write there", e.Path, e.Kind)
	}
	return fmt.Sprintf("%s exists: refusing to overwrite it", e.Path)
}

// Is makes errors.Is(err, fs.ErrExist) true.
func (e *ExistsError) Is(target error) bool { return target == fs.ErrExist }

// createFile creates name for writing, mode 0600. O_EXCL makes the kernel
// refuse a name that exists, a symbolic link (dangling or not) included,
// so a link or a file planted by another user is never written through;
// O_NOFOLLOW says the same for the last component should O_EXCL ever be
// dropped. With force, an existing regular file is replaced by a new one
// renamed over it: the old inode, which another user may own, hold open or
// have hard-linked elsewhere, is never opened or truncated.
func createFile(name string, force bool) (*os.File, error) {
	// Read and written: --write-secrets reorders the file's blocks at close.
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err == nil {
		if err := exactMode(f, name); err != nil {
			f.Close()
			os.Remove(name)
			return nil, err
		}
		return f, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	fi, lerr := os.Lstat(name)
	switch {
	case lerr != nil:
		return nil, fmt.Errorf("write %s: %w", name, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &ExistsError{Path: name, Kind: "a symbolic link"}
	case fi.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice) != 0 && force:
		return openStream(name, fi)
	case !fi.Mode().IsRegular():
		return nil, &ExistsError{Path: name, Kind: "not a regular file"}
	case !force:
		return nil, &ExistsError{Path: name}
	}
	return replaceFile(name)
}

// openStream opens, with force, a FIFO (to a Wireshark reading it) or a
// character device (/dev/null) as it is: only one of root's or the
// process's own, for another user's FIFO would hand that user the
// capture. What is opened is checked to be what was looked at.
func openStream(name string, fi fs.FileInfo) (*os.File, error) {
	owner := func(fi fs.FileInfo) int {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return int(st.Uid)
		}
		return -1
	}
	if u := owner(fi); u != 0 && u != os.Geteuid() {
		return nil, &ExistsError{Path: name, Kind: fmt.Sprintf("a FIFO or device of another user's (uid %d)", u)}
	}
	f, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	now, err := f.Stat()
	if err != nil || !os.SameFile(fi, now) {
		f.Close()
		return nil, fmt.Errorf("write %s: it was replaced while being opened", name)
	}
	return f, nil
}

// replaceFile creates a new file beside name and renames it over name. A
// rename replaces the directory entry, whatever it has become since it was
// looked at (a symbolic link too), and follows nothing.
func replaceFile(name string) (*os.File, error) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*") // O_EXCL, 0600
	if err != nil {
		return nil, fmt.Errorf("replace %s: %w", name, err)
	}
	if err := exactMode(f, name); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := os.Rename(f.Name(), name); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("replace %s: %w", name, err)
	}
	return f, nil
}

// exactMode sets 0600 on a file just created: the umask may have left it
// narrower (0400 under umask 0277), and nothing wider is wanted.
func exactMode(f *os.File, name string) error {
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// UnsafeDirectory says why the directory a recording goes to lets other
// users tamper with it, or "" when it does not: a directory every user may
// write without the sticky bit lets anyone rename or remove the capture
// and put another file in its place (it cannot be read: it is 0600).
func UnsafeDirectory(path string) string {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o002 == 0 || fi.Mode()&fs.ModeSticky != 0 {
		return ""
	}
	return fmt.Sprintf("%s is writable by every user and has no sticky bit: anyone may remove or replace the capture files there", dir)
}
