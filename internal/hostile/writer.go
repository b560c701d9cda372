package hostile

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"io"
	"net/netip"
	"os"
	"time"
)

// file is an output capture file, gzip-compressed or not, written through
// a buffer; close flushes everything and reports the first error.
type file struct {
	f   *os.File
	gz  *gzip.Writer
	w   *bufio.Writer
	err error
}

func create(path string, compress bool) (*file, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	out := &file{f: f}
	var dst io.Writer = f
	if compress {
		out.gz, _ = gzip.NewWriterLevel(f, gzip.BestSpeed)
		dst = out.gz
	}
	out.w = bufio.NewWriterSize(dst, 1<<20)
	return out, nil
}

func (f *file) write(b []byte) {
	if f.err == nil {
		_, f.err = f.w.Write(b)
	}
}

// zeros writes n zero bytes.
func (f *file) zeros(n int64) {
	var z [64 << 10]byte
	for n > 0 && f.err == nil {
		k := min(n, int64(len(z)))
		f.write(z[:k])
		n -= k
	}
}

func (f *file) close() error {
	err := f.err
	if e := f.w.Flush(); err == nil {
		err = e
	}
	if f.gz != nil {
		if e := f.gz.Close(); err == nil {
			err = e
		}
	}
	if e := f.f.Close(); err == nil {
		err = e
	}
	return err
}

// pcap writes classic pcap records (microseconds, Ethernet) of IPv4 TCP
// segments built here: a few million of them must be written quickly,
// without holding a capture in memory as samples/netsim does.
type pcap struct {
	*file
	now   time.Time
	frame []byte
	ipID  uint16
}

func newPcap(path string, compress bool, snaplen uint32) (*pcap, error) {
	f, err := create(path, compress)
	if err != nil {
		return nil, err
	}
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], snaplen)
	binary.LittleEndian.PutUint32(h[20:], 1) // Ethernet
	f.write(h[:])
	return &pcap{file: f, now: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}, nil
}

// record writes one record holding data, captured whole.
func (p *pcap) record(data []byte) {
	p.now = p.now.Add(time.Microsecond)
	var h [16]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(p.now.Unix()))
	binary.LittleEndian.PutUint32(h[4:], uint32(p.now.Nanosecond()/1000))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(data)))
	p.write(h[:])
	p.write(data)
}

// TCP flags.
const (
	fin = 0x01
	syn = 0x02
	rst = 0x04
	psh = 0x08
	ack = 0x10
)

// segment writes one Ethernet/IPv4/TCP frame.
func (p *pcap) segment(src, dst netip.AddrPort, seq, ackNo uint32, flags byte, payload []byte) {
	const hdr = 14 + 20 + 20
	b := append(p.frame[:0], make([]byte, hdr)...)
	copy(b[0:6], []byte{0x02, 0, 0, 0, 0, 2})
	copy(b[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	b[12], b[13] = 0x08, 0x00
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+20+len(payload)))
	p.ipID++
	binary.BigEndian.PutUint16(ip[4:], p.ipID)
	ip[6] = 0x40 // don't fragment
	ip[8] = 64
	ip[9] = 6
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	tcp := b[34:54]
	binary.BigEndian.PutUint16(tcp[0:], src.Port())
	binary.BigEndian.PutUint16(tcp[2:], dst.Port())
	binary.BigEndian.PutUint32(tcp[4:], seq)
	binary.BigEndian.PutUint32(tcp[8:], ackNo)
	tcp[12] = 5 << 4
	tcp[13] = flags
	binary.BigEndian.PutUint16(tcp[14:], 65535)
	b = append(b, payload...)
	p.frame = b
	p.record(b)
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// mss is the payload size of a full segment.
const mss = 1448

// conn is one TCP connection written into a pcap: its handshake and the
// next sequence number of each side.
type conn struct {
	p              *pcap
	client, broker netip.AddrPort
	cseq, sseq     uint32
}

// open writes the three-way handshake of a connection from client to
// broker, with initial sequence numbers derived from isn.
func (p *pcap) open(client, broker netip.AddrPort, isn uint32) *conn {
	c := &conn{p: p, client: client, broker: broker, cseq: isn, sseq: isn*7 + 1000}
	p.segment(client, broker, c.cseq, 0, syn, nil)
	p.segment(broker, client, c.sseq, c.cseq+1, syn|ack, nil)
	c.cseq++
	c.sseq++
	p.segment(client, broker, c.cseq, c.sseq, ack, nil)
	return c
}

// send writes data from one side in full-sized segments.
func (c *conn) send(fromClient bool, data []byte) {
	for len(data) > 0 {
		n := min(len(data), mss)
		if fromClient {
			c.p.segment(c.client, c.broker, c.cseq, c.sseq, psh|ack, data[:n])
			c.cseq += uint32(n)
		} else {
			c.p.segment(c.broker, c.client, c.sseq, c.cseq, psh|ack, data[:n])
			c.sseq += uint32(n)
		}
		data = data[n:]
	}
}

// close writes a FIN from each side and the last ACK.
func (c *conn) close() {
	c.p.segment(c.client, c.broker, c.cseq, c.sseq, fin|ack, nil)
	c.cseq++
	c.p.segment(c.broker, c.client, c.sseq, c.cseq, fin|ack, nil)
	c.sseq++
	c.p.segment(c.client, c.broker, c.cseq, c.sseq, ack, nil)
}

// addr returns the n-th address of 10.0.0.0/8 with port.
func addr(n int, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)}), port)
}
