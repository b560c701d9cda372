package main

import (
	"bufio"
	"encoding/binary"
	"math/bits"
)

// The packet layer: classic pcap records of Ethernet/IPv4/TCP frames, built
// into one reused header buffer and written with the payload straight from
// the Kafka message's bytes (no copy of the payload, no allocation).

// TCP flags as they sit in byte 13 of the TCP header.
const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagPSH = 0x08
	flagACK = 0x10
)

const (
	ethLen    = 14
	ipLen     = 20
	tcpLen    = 32 // 20 + NOP, NOP, timestamps: what Linux sends once established
	tcpSynLen = 40 // 20 + MSS, SACK permitted, timestamps, NOP, window scale
	mss       = 1448
	snaplen   = 262144
)

// host is one IPv4 machine: a broker or a client box.
type host struct {
	ip       [4]byte
	mac      [6]byte
	ipID     uint16 // the IPv4 identification counter
	tsBase   uint32 // offset of its TCP timestamp clock (1 kHz)
	nextPort uint16 // next ephemeral port (clients)
}

func newHost(ip [4]byte, ipID uint16, tsBase uint32) *host {
	return &host{ip: ip, mac: [6]byte{0x02, 0x42, ip[0], ip[1], ip[2], ip[3]}, ipID: ipID, tsBase: tsBase}
}

// tsval is the host's TCP timestamp clock at capture time ns.
func (h *host) tsval(ns int64) uint32 { return h.tsBase + uint32(ns/1e6) }

// pcapWriter writes a classic pcap file: little-endian, microseconds,
// Ethernet.
type pcapWriter struct {
	w       *bufio.Writer
	bytes   int64 // file size so far
	packets int64 // frames written: the last one's 1-based frame number
	hdr     [16 + ethLen + ipLen + tcpSynLen]byte
}

func newPcapWriter(w *bufio.Writer) (*pcapWriter, error) {
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], snaplen)
	binary.LittleEndian.PutUint32(h[20:], 1) // LINKTYPE_ETHERNET
	_, err := w.Write(h[:])
	return &pcapWriter{w: w, bytes: 24}, err
}

// tcpPacket is one TCP segment to write.
type tcpPacket struct {
	src, dst     *host
	sport, dport uint16
	seq, ack     uint32
	flags        uint8
	win          uint16
	tsval, tsecr uint32
	payload      []byte
}

// write writes p as one pcap record at capture time ns, with valid IPv4
// and TCP checksums. It returns the frame number.
func (pw *pcapWriter) write(ns int64, p *tcpPacket) (int64, error) {
	thl := tcpLen
	if p.flags&flagSYN != 0 {
		thl = tcpSynLen
	}
	frameLen := ethLen + ipLen + thl + len(p.payload)
	b := pw.hdr[:16+ethLen+ipLen+thl]
	// pcap record header
	binary.LittleEndian.PutUint32(b[0:], uint32(ns/1e9))
	binary.LittleEndian.PutUint32(b[4:], uint32(ns%1e9/1e3))
	binary.LittleEndian.PutUint32(b[8:], uint32(frameLen))
	binary.LittleEndian.PutUint32(b[12:], uint32(frameLen))
	// Ethernet
	e := b[16:]
	copy(e[0:6], p.dst.mac[:])
	copy(e[6:12], p.src.mac[:])
	e[12], e[13] = 0x08, 0x00
	// IPv4: DF, TTL 64
	ip := e[ethLen : ethLen+ipLen]
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen+thl+len(p.payload)))
	p.src.ipID++
	binary.BigEndian.PutUint16(ip[4:], p.src.ipID)
	ip[6], ip[7], ip[8], ip[9] = 0x40, 0, 64, 6
	ip[10], ip[11] = 0, 0
	copy(ip[12:16], p.src.ip[:])
	copy(ip[16:20], p.dst.ip[:])
	binary.BigEndian.PutUint16(ip[10:], checksum(sumLE(0, ip)))
	// TCP
	t := e[ethLen+ipLen:]
	binary.BigEndian.PutUint16(t[0:], p.sport)
	binary.BigEndian.PutUint16(t[2:], p.dport)
	binary.BigEndian.PutUint32(t[4:], p.seq)
	binary.BigEndian.PutUint32(t[8:], p.ack)
	t[12] = uint8(thl/4) << 4
	t[13] = p.flags
	binary.BigEndian.PutUint16(t[14:], p.win)
	t[16], t[17], t[18], t[19] = 0, 0, 0, 0
	o := t[20:thl]
	if p.flags&flagSYN != 0 {
		o[0], o[1] = 2, 4 // MSS
		binary.BigEndian.PutUint16(o[2:], mss+12)
		o[4], o[5] = 4, 2 // SACK permitted
		o[6], o[7] = 8, 10
		binary.BigEndian.PutUint32(o[8:], p.tsval)
		binary.BigEndian.PutUint32(o[12:], p.tsecr)
		o[16] = 1                     // NOP
		o[17], o[18], o[19] = 3, 3, 7 // window scale 7
	} else {
		o[0], o[1], o[2], o[3] = 1, 1, 8, 10
		binary.BigEndian.PutUint32(o[4:], p.tsval)
		binary.BigEndian.PutUint32(o[8:], p.tsecr)
	}
	var pseudo [12]byte
	copy(pseudo[0:4], p.src.ip[:])
	copy(pseudo[4:8], p.dst.ip[:])
	pseudo[9] = 6
	binary.BigEndian.PutUint16(pseudo[10:], uint16(thl+len(p.payload)))
	sum := sumLE(sumLE(sumLE(0, pseudo[:]), t[:thl]), p.payload)
	binary.BigEndian.PutUint16(t[16:], checksum(sum))
	if _, err := pw.w.Write(b); err != nil {
		return 0, err
	}
	if _, err := pw.w.Write(p.payload); err != nil {
		return 0, err
	}
	pw.bytes += int64(16 + frameLen)
	pw.packets++
	return pw.packets, nil
}

// sumLE adds b to a ones'-complement sum kept in 64 bits, reading b as
// little-endian 16-bit words, eight bytes at a time. The Internet checksum
// does not depend on byte order except for a final byte swap (RFC 1071),
// and 2^64 ≡ 1 mod 0xffff, so carries wrap around into bit 0. Every part
// given must start at an even offset of the checksummed data (only the
// last may have an odd length).
func sumLE(acc uint64, b []byte) uint64 {
	var c uint64
	for len(b) >= 32 {
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[8:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[16:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[24:]), c)
		b = b[32:]
	}
	for len(b) >= 8 {
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b), c)
		b = b[8:]
	}
	var tail uint64
	for i := 0; i+1 < len(b); i += 2 {
		tail += uint64(binary.LittleEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		tail += uint64(b[len(b)-1]) // the low byte of a little-endian word
	}
	acc, c = bits.Add64(acc, tail, c)
	for c != 0 {
		acc, c = bits.Add64(acc, c, 0)
	}
	return acc
}

// checksum folds a sumLE total to the 16-bit Internet checksum, in the
// network byte order value to store with binary.BigEndian.
func checksum(acc uint64) uint16 {
	acc = acc>>32 + acc&0xffffffff
	acc = acc>>32 + acc&0xffffffff
	for acc>>16 != 0 {
		acc = acc>>16 + acc&0xffff
	}
	return ^bits.ReverseBytes16(uint16(acc))
}
