package netsim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// Link is the link-layer encapsulation of an interface's frames.
type Link int

const (
	Ethernet     Link = iota // Ethernet II
	EthernetVLAN             // Ethernet with one 802.1Q tag (Options.VLAN)
	EthernetQinQ             // Ethernet with an 802.1ad S-tag (Options.VLAN) and an 802.1Q C-tag (Options.InnerVLAN)
	LinuxSLL                 // Linux cooked capture v1 (tcpdump -i any, before libpcap 1.10)
	LinuxSLL2                // Linux cooked capture v2 (tcpdump -i any)
	Null                     // BSD loopback (DLT_NULL): AF_INET 2 or AF_INET6 30 (macOS), little-endian
	RawIP                    // raw IPv4 or IPv6, no link header (LINKTYPE_RAW)
	// EthernetFCS is Ethernet II with the 4-byte FCS (CRC-32) at the end
	// of every frame, as a tap or a port mirror captures it; the file
	// says so in the link-type field's FCS bits. Pcap formats only:
	// pcapgo's pcapng writer has no if_fcslen option.
	EthernetFCS
)

var linkNames = [...]string{"Ethernet", "EthernetVLAN", "EthernetQinQ", "LinuxSLL", "LinuxSLL2", "Null", "RawIP", "EthernetFCS"}

func (l Link) String() string {
	if l >= 0 && int(l) < len(linkNames) {
		return linkNames[l]
	}
	return fmt.Sprintf("Link(%d)", int(l))
}

// LinkType is the pcap link type that files record for l.
func (l Link) LinkType() layers.LinkType {
	switch l {
	case Ethernet, EthernetVLAN, EthernetQinQ, EthernetFCS:
		return layers.LinkTypeEthernet
	case LinuxSLL:
		return layers.LinkTypeLinuxSLL
	case LinuxSLL2:
		return layers.LinkTypeLinuxSLL2
	case Null:
		return layers.LinkTypeNull
	case RawIP:
		return layers.LinkTypeRaw
	}
	panic(fmt.Sprintf("netsim: unknown link %d", int(l)))
}

// ifName is the interface name written into pcapng interface blocks.
func (l Link) ifName() string {
	switch l {
	case LinuxSLL, LinuxSLL2:
		return "any"
	case Null:
		return "lo0"
	case RawIP:
		return "tun0"
	}
	return "eth0"
}

func (l Link) ethernet() bool {
	return l == Ethernet || l == EthernetVLAN || l == EthernetQinQ || l == EthernetFCS
}

// Format is the capture file format.
type Format int

const (
	Pcap          Format = iota // pcap, little-endian, microsecond timestamps
	PcapNano                    // pcap, little-endian, nanosecond timestamps
	PcapBigEndian               // pcap, big-endian, microsecond timestamps
	PcapNG                      // pcapng, little-endian, nanosecond timestamps
)

// Options configure a Capture. The zero value is a usable Ethernet pcap.
type Options struct {
	Format Format
	Gzip   bool // gzip-compress the whole file

	// Link is the link type of interface 0 (the only one in pcap files).
	Link Link
	// MoreLinks adds interfaces 1, 2, ... with these link types (PcapNG
	// only); ConnOptions.Interface puts a connection on one of them.
	MoreLinks []Link
	// VLAN is the 802.1Q tag of EthernetVLAN and the outer (S) tag of
	// EthernetQinQ, InnerVLAN the inner (C) tag of EthernetQinQ. Zero means
	// 100 and 200.
	VLAN, InnerVLAN uint16

	// Start is the time of the first frame (zero: 2025-01-01 12:00:00 UTC);
	// each frame advances the clock by Step (zero: 100µs).
	Start time.Time
	Step  time.Duration
	// Seed derives ISNs, IPv4 IDs, TCP timestamp clocks and IPv6 flow labels.
	Seed uint64
	// Snaplen cuts every frame to this many bytes (zero: 262144).
	Snaplen int
	// ZeroSnaplen writes 0 as the snap length in the file (the pcap
	// header, the pcapng interfaces), as writers that mean "no limit" do;
	// frames are still cut at Snaplen.
	ZeroSnaplen bool

	// Pad pads Ethernet frames shorter than 60 bytes with zeros up to 60,
	// as frames received from the wire are (the IP length is unchanged).
	// With TCP timestamps on, no IPv4 TCP frame is that short: combine with
	// NoTimestamps to get padded ACKs.
	Pad bool
	// NoTimestamps leaves out the TCP timestamps option (as Windows does);
	// the default segment size then grows by 12 bytes.
	NoTimestamps bool
	// IPv6HopByHop puts a Hop-by-Hop Options extension header (8 bytes, one
	// PadN option) between the IPv6 and the TCP header of every IPv6 packet.
	IPv6HopByHop bool
}

// Capture collects the frames of many connections, in the order they are
// made. It is not safe for concurrent use.
type Capture struct {
	opt      Options
	links    []Link
	frames   []frame
	numbered int // frames with a frame number: packets and custom blocks
	now      time.Time
	conns    int
}

// frame is a packet, or a pcapng block that holds none (AddBlock).
type frame struct {
	iface  int
	ts     time.Time
	data   []byte // the whole frame as on the wire
	caplen int    // bytes of data captured
	short  int    // the record states an original length this much shorter than data (CaplenOverLen)
	block  []byte // a whole pcapng block, written instead of a packet
}

// Default values of Options fields left zero.
var (
	DefaultStart = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
)

const (
	DefaultStep      = 100 * time.Microsecond
	DefaultSnaplen   = 262144
	DefaultVLAN      = 100
	DefaultInnerVLAN = 200
)

// New returns an empty capture.
func New(opts Options) *Capture {
	if opts.Start.IsZero() {
		opts.Start = DefaultStart
	}
	if opts.Step <= 0 {
		opts.Step = DefaultStep
	}
	if opts.Snaplen <= 0 {
		opts.Snaplen = DefaultSnaplen
	}
	if opts.VLAN == 0 {
		opts.VLAN = DefaultVLAN
	}
	if opts.InnerVLAN == 0 {
		opts.InnerVLAN = DefaultInnerVLAN
	}
	if opts.Format < Pcap || opts.Format > PcapNG {
		panic(fmt.Sprintf("netsim: unknown format %d", int(opts.Format)))
	}
	if len(opts.MoreLinks) > 0 && opts.Format != PcapNG {
		panic("netsim: MoreLinks needs the PcapNG format")
	}
	links := append([]Link{opts.Link}, opts.MoreLinks...)
	for _, l := range links {
		l.LinkType() // panics on an unknown link
		if l == EthernetFCS && opts.Format == PcapNG {
			panic("netsim: EthernetFCS needs a pcap format")
		}
	}
	opts.MoreLinks = nil
	return &Capture{opt: opts, links: links, now: opts.Start}
}

// Frames is the number of frames written so far, which is also the 1-based
// frame number of the last one.
func (c *Capture) Frames() int { return c.numbered }

// Block is a pcapng block that holds no packet: its type and body.
type Block struct {
	Type uint32
	Body []byte
}

// AddBlock writes b (its body padded to 4 bytes) after the frames made so
// far: real captures carry custom blocks, Decryption Secrets Blocks
// (0x0000000A) and blocks of types a reader may not know between their
// packets. Wireshark (4.0) shows custom blocks (0x00000BAD, 0x40000BAD),
// systemd journal (0x00000009) and sysdig event blocks (0x00000204,
// 0x00000216, 0x00000221) as frames of their own, so these take a frame
// number here too; other blocks do not. PcapNG only.
func (c *Capture) AddBlock(b Block) {
	if c.opt.Format != PcapNG {
		panic("netsim: AddBlock needs the PcapNG format")
	}
	body := append(slices.Clone(b.Body), make([]byte, (4-len(b.Body)%4)%4)...)
	n := uint32(12 + len(body))
	raw := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, b.Type), n)
	raw = binary.LittleEndian.AppendUint32(append(raw, body...), n)
	c.frames = append(c.frames, frame{block: raw})
	switch b.Type {
	case 0x00000bad, 0x40000bad, 0x00000009, 0x00000204, 0x00000216, 0x00000221:
		c.numbered++
	}
}

// Advance moves the capture clock forward by d, as an idle period between
// two frames.
func (c *Capture) Advance(d time.Duration) {
	if d < 0 {
		panic("netsim: Advance with a negative duration")
	}
	c.now = c.now.Add(d)
}

// Now is the time the next frame will get.
func (c *Capture) Now() time.Time { return c.now }

// ConnOptions configure one connection. The zero value is a connection with
// a handshake on interface 0 and the default segment size.
type ConnOptions struct {
	// MidStream leaves out the handshake: the capture starts in the middle
	// of the connection and its first frames carry data.
	MidStream bool
	// MSS is the TCP payload size of a full segment (zero: 1448 for IPv4,
	// 1428 for IPv6, 12 bytes more without timestamps). The SYNs advertise
	// it (plus 12 with timestamps) as their MSS option.
	MSS int
	// Interface is the pcapng interface the connection's frames are
	// captured on: 0 for Options.Link, i for Options.MoreLinks[i-1].
	Interface int
	// ClientISN and ServerISN force the initial sequence numbers (zero:
	// derived from the seed), e.g. to make sequence numbers wrap.
	ClientISN, ServerISN uint32
}

// Open starts a connection from cli (the client) to srv (the server) and, unless MidStream,
// writes its handshake: SYN, SYN/ACK, ACK. Both addresses must be of one
// family (an IPv4-mapped IPv6 address counts as IPv4).
func (c *Capture) Open(cli, srv netip.AddrPort, o ConnOptions) *Conn {
	ca, sa := cli.Addr().Unmap(), srv.Addr().Unmap()
	if !ca.IsValid() || !sa.IsValid() {
		panic("netsim: Open with an invalid address")
	}
	if ca.Is4() != sa.Is4() {
		panic(fmt.Sprintf("netsim: Open with mixed address families %v and %v", ca, sa))
	}
	if o.Interface < 0 || o.Interface >= len(c.links) {
		panic(fmt.Sprintf("netsim: interface %d does not exist (have %d)", o.Interface, len(c.links)))
	}
	c.conns++
	cn := &Conn{
		c:     c,
		id:    c.conns,
		ep:    [2]netip.AddrPort{netip.AddrPortFrom(ca, cli.Port()), netip.AddrPortFrom(sa, srv.Port())},
		iface: o.Interface,
		link:  c.links[o.Interface],
		v6:    !ca.Is4(),
		ts:    !c.opt.NoTimestamps,
	}
	cn.mss = o.MSS
	if cn.mss == 0 {
		cn.mss = 1460
		if cn.v6 {
			cn.mss -= 20
		}
		if cn.ts {
			cn.mss -= 12
		}
	}
	if cn.mss < 1 || cn.mss > 65000 {
		panic(fmt.Sprintf("netsim: MSS %d out of range 1..65000", cn.mss))
	}
	for side := range 2 {
		cn.mac[side] = macOf(cn.ep[side].Addr())
		cn.isn[side] = uint32(mix(c.opt.Seed, uint64(cn.id), uint64(side), 1))
		cn.ipid[side] = uint16(mix(c.opt.Seed, uint64(cn.id), uint64(side), 2))
		cn.tsBase[side] = uint32(mix(c.opt.Seed, uint64(cn.id), uint64(side), 3))
		cn.flow[side] = uint32(mix(c.opt.Seed, uint64(cn.id), uint64(side), 4)) & 0xfffff
	}
	if o.ClientISN != 0 {
		cn.isn[client] = o.ClientISN
	}
	if o.ServerISN != 0 {
		cn.isn[server] = o.ServerISN
	}
	if o.MidStream {
		for side := range 2 {
			cn.nxt[side] = cn.isn[side]
			cn.rcv[side] = cn.isn[side]
		}
		// Each side has seen the other's clock before the capture started.
		cn.tsRecent[client] = cn.tsBase[server]
		cn.tsRecent[server] = cn.tsBase[client]
		return cn
	}
	cn.handshake()
	return cn
}

// mix is splitmix64 over the seed and a few small integers.
func mix(seed uint64, xs ...uint64) uint64 {
	h := seed
	for _, x := range xs {
		h += 0x9e3779b97f4a7c15 ^ x*0xbf58476d1ce4e5b9
		z := h
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		h = z ^ (z >> 31)
	}
	return h
}

// macOf is a locally administered MAC address made from the last four bytes
// of the IP address, the way Docker numbers its containers.
func macOf(a netip.Addr) [6]byte {
	b := a.AsSlice()
	b = b[len(b)-4:]
	return [6]byte{0x02, 0x42, b[0], b[1], b[2], b[3]}
}
