// Command pcapcut writes the beginning of a classic pcap file: its header
// and the packets that fit in -bytes, cut at a packet boundary. The bench
// scripts give tshark the first 100 MB of the load this way, so that tshark
// and kidscope can be compared on the same packets.
//
//	go run ./bench/pcapcut -bytes 100MB -o cut.pcap load.pcap
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kidscope/kidscope/internal/size"
)

func main() {
	limitS := flag.String("bytes", "100MB", "largest size of the output (KB, MB, GB = 10^3..; KiB, MiB, GiB = 2^10..)")
	out := flag.String("o", "", "output file")
	flag.Parse()
	limit, err := size.Parse(*limitS)
	if err != nil || *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: pcapcut -bytes 100MB -o OUT.pcap IN.pcap")
		os.Exit(2)
	}
	n, err := cut(flag.Arg(0), *out, limit)
	if err != nil {
		os.Remove(*out)
		fmt.Fprintln(os.Stderr, "pcapcut:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "pcapcut: %s: the first %d packets of %s, %s\n", *out, n.packets, flag.Arg(0), size.Human(n.bytes))
}

type counts struct{ packets, bytes int64 }

func cut(in, out string, limit int64) (counts, error) {
	var n counts
	f, err := os.Open(in)
	if err != nil {
		return n, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var hdr [24]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return n, fmt.Errorf("%s: no pcap file header: %w", in, err)
	}
	var order binary.ByteOrder
	switch binary.LittleEndian.Uint32(hdr[:]) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		order = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		order = binary.BigEndian
	default:
		return n, fmt.Errorf("%s: not a classic pcap file (pcapng is not supported)", in)
	}
	if limit < 24 {
		return n, fmt.Errorf("-bytes %d: smaller than the file header", limit)
	}
	o, err := os.Create(out)
	if err != nil {
		return n, err
	}
	w := bufio.NewWriterSize(o, 1<<20)
	w.Write(hdr[:])
	n.bytes = 24
	var rec [16]byte
	buf := make([]byte, 0, 1<<16)
	for {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			o.Close()
			return n, fmt.Errorf("%s: record header of packet %d: %w", in, n.packets+1, err)
		}
		l := int64(order.Uint32(rec[8:]))
		if l > 1<<26 {
			o.Close()
			return n, fmt.Errorf("%s: packet %d claims %d bytes", in, n.packets+1, l)
		}
		if n.bytes+16+l > limit {
			break
		}
		if int64(cap(buf)) < l {
			buf = make([]byte, l)
		}
		buf = buf[:l]
		if _, err := io.ReadFull(r, buf); err != nil {
			o.Close()
			return n, fmt.Errorf("%s: packet %d: %w", in, n.packets+1, err)
		}
		w.Write(rec[:])
		w.Write(buf)
		n.bytes += 16 + l
		n.packets++
	}
	if err := w.Flush(); err != nil {
		o.Close()
		return n, err
	}
	return n, o.Close()
}
