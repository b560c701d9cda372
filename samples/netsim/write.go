package netsim

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// WriteTo writes the capture file: every frame made so far, in the
// Options' format. It can be called more than once.
func (c *Capture) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	var dst io.Writer = cw
	var gz *gzip.Writer
	if c.opt.Gzip {
		gz = gzip.NewWriter(cw) // no name, no mtime: the same bytes every time
		dst = gz
	}
	bw := bufio.NewWriter(dst)
	var err error
	if c.opt.Format == PcapNG {
		err = c.writeNG(bw)
	} else {
		err = c.writePcap(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if gz != nil {
		if cerr := gz.Close(); err == nil {
			err = cerr
		}
	}
	return cw.n, err
}

// WriteFile writes the capture file to path.
func (c *Capture) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}

// writePcap writes by hand: pcapgo writes neither big-endian files nor
// files without a clock fallback.
func (c *Capture) writePcap(w io.Writer) error {
	var order binary.ByteOrder = binary.LittleEndian
	if c.opt.Format == PcapBigEndian {
		order = binary.BigEndian
	}
	magic, div := uint32(0xa1b2c3d4), int64(1000)
	if c.opt.Format == PcapNano {
		magic, div = 0xa1b23c4d, 1
	}
	var h [24]byte
	order.PutUint32(h[0:], magic)
	order.PutUint16(h[4:], 2)
	order.PutUint16(h[6:], 4)
	order.PutUint32(h[16:], c.snaplen())
	network := uint32(c.links[0].LinkType())
	if c.links[0] == EthernetFCS {
		// The FCS bits (pcap-linktype): F, and two 16-bit words.
		network |= 0x04000000 | 2<<28
	}
	order.PutUint32(h[20:], network)
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	for _, f := range c.frames {
		var r [16]byte
		order.PutUint32(r[0:], uint32(f.ts.Unix()))
		order.PutUint32(r[4:], uint32(int64(f.ts.Nanosecond())/div))
		order.PutUint32(r[8:], uint32(f.caplen))
		order.PutUint32(r[12:], uint32(len(f.data)-f.short))
		if _, err := w.Write(r[:]); err != nil {
			return err
		}
		if _, err := w.Write(f.data[:f.caplen]); err != nil {
			return err
		}
	}
	return nil
}

func (c *Capture) writeNG(w io.Writer) error {
	// Explicit section and interface options: the defaults name the host's
	// OS and architecture, which would make the bytes depend on the machine.
	intf := func(i int) pcapgo.NgInterface {
		return pcapgo.NgInterface{
			Name:                c.links[i].ifName(),
			LinkType:            c.links[i].LinkType(),
			SnapLength:          c.snaplen(),
			TimestampResolution: 9,
		}
	}
	ng, err := pcapgo.NewNgWriterInterface(w, intf(0), pcapgo.NgWriterOptions{
		SectionInfo: pcapgo.NgSectionInfo{Application: "kidscope netsim"},
	})
	if err != nil {
		return err
	}
	for i := 1; i < len(c.links); i++ {
		if _, err := ng.AddInterface(intf(i)); err != nil {
			return err
		}
	}
	for _, f := range c.frames {
		if f.block != nil {
			// pcapgo writes no such block: flush what it holds, then
			// write the block after it.
			if err := ng.Flush(); err != nil {
				return err
			}
			if _, err := w.Write(f.block); err != nil {
				return err
			}
			continue
		}
		ci := gopacket.CaptureInfo{
			Timestamp:      f.ts,
			CaptureLength:  f.caplen,
			Length:         len(f.data) - f.short,
			InterfaceIndex: f.iface,
		}
		if err := ng.WritePacket(ci, f.data[:f.caplen]); err != nil {
			return err
		}
	}
	return ng.Flush()
}

// snaplen is the snap length the file states.
func (c *Capture) snaplen() uint32 {
	if c.opt.ZeroSnaplen {
		return 0
	}
	return uint32(c.opt.Snaplen)
}
