package capture

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Recorder writes the frames a live capture reads to pcapng files, so that
// the evidence can be analysed again later. With a size limit it rotates:
// x.pcapng, then x-2.pcapng, x-3.pcapng, …; frame numbers restart in each
// file, as Wireshark counts them.
type Recorder struct {
	base    string
	link    layers.LinkType
	snaplen int
	max     int64
	index   int // of the file being written, from 0
	frame   int64
	f       *os.File
	bw      *bufio.Writer
	w       *pcapgo.NgWriter
	size    int64
	names   []string
}

// NewRecorder creates the first file. maxSize <= 0 means one file.
func NewRecorder(path string, link layers.LinkType, snaplen int, maxSize int64) (*Recorder, error) {
	r := &Recorder{base: path, link: link, snaplen: snaplen, max: maxSize}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

// name is the path of file i.
func (r *Recorder) name(i int) string {
	if i == 0 {
		return r.base
	}
	ext := ""
	base := r.base
	if j := strings.LastIndex(base, "."); j > strings.LastIndex(base, "/") {
		base, ext = base[:j], base[j:]
	}
	return fmt.Sprintf("%s-%d%s", base, i+1, ext)
}

func (r *Recorder) open() error {
	name := r.name(r.index)
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	r.f, r.bw = f, bufio.NewWriterSize(f, 1<<20)
	r.w, err = pcapgo.NewNgWriterInterface(r.bw, pcapgo.NgInterface{
		Name: "kidscope", LinkType: r.link, SnapLength: uint32(r.snaplen), TimestampResolution: 9,
	}, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "kidscope live"}})
	if err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	r.frame, r.size = 0, 0
	r.names = append(r.names, name)
	return nil
}

// Write records one frame and returns the file index and the frame number
// it has there.
func (r *Recorder) Write(ci gopacket.CaptureInfo, data []byte) (file int, frame int64, err error) {
	if r.max > 0 && r.frame > 0 && r.size+int64(len(data)) > r.max {
		if err := r.closeFile(); err != nil {
			return 0, 0, err
		}
		r.index++
		if err := r.open(); err != nil {
			return 0, 0, err
		}
	}
	ci.InterfaceIndex = 0
	ci.AncillaryData = nil
	if err := r.w.WritePacket(ci, data); err != nil {
		return 0, 0, fmt.Errorf("write %s: %w", r.names[len(r.names)-1], err)
	}
	r.frame++
	r.size += int64(len(data)) + 32 // the enhanced packet block's own bytes
	return r.index, r.frame, nil
}

// Files are the paths written so far, in order.
func (r *Recorder) Files() []string { return append([]string(nil), r.names...) }

func (r *Recorder) closeFile() error {
	if r.f == nil {
		return nil
	}
	err := r.w.Flush()
	if e := r.bw.Flush(); err == nil {
		err = e
	}
	if e := r.f.Close(); err == nil {
		err = e
	}
	r.f = nil
	if err != nil {
		return fmt.Errorf("write %s: %w", r.names[len(r.names)-1], err)
	}
	return nil
}

// Flush pushes what was written to the file (live captures call it now and
// then, so the file is readable while the capture runs).
func (r *Recorder) Flush() error {
	if r.f == nil {
		return nil
	}
	if err := r.w.Flush(); err != nil {
		return err
	}
	return r.bw.Flush()
}

// Close finishes the current file.
func (r *Recorder) Close() error { return r.closeFile() }
