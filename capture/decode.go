package capture

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/kidscope/kidscope/capture/filter"
)

// The link and IP layers are parsed by hand rather than with a
// gopacket.DecodingLayerParser: the parser has no notion of "the IP length
// says more than was captured" versus "trailing padding", which is exactly
// what Cut, Padded and Malformed need, and several link types here (NULL in
// either byte order, SLL2, raw IP by version nibble) would each need a
// wrapper anyway. Only the TCP layer is gopacket's own, decoded in place into
// a reused layers.TCP, because that is what reassembly.Assembler takes.

// verdict is what decodeFrame made of one frame.
type verdict uint8

const (
	isTCP       verdict = iota // a TCP segment, decoded
	notTCP                     // not IP, not TCP, a later IP fragment, or an unknown link type
	isMalformed                // a link, IP or TCP header is cut short or invalid
)

// linkUnknown is no link type at all: it decodes as not TCP.
const linkUnknown layers.LinkType = 0xffff

// EtherTypes handled; 0x9100..0x9300 are the pre-802.1ad vendor QinQ tags
// still seen on older switches.
const (
	etherIPv4   = 0x0800
	etherIPv6   = 0x86dd
	etherDot1Q  = 0x8100
	etherDot1AD = 0x88a8
	etherQinQ1  = 0x9100
	etherQinQ2  = 0x9200
	etherQinQ3  = 0x9300
)

// IP protocol numbers of the IPv6 extension headers walked before TCP.
const (
	protoHopByHop = 0
	protoTCP      = 6
	protoRouting  = 43
	protoFragment = 44
	protoAH       = 51
	protoDestOpts = 60
)

// frameInfo is what decodeFrame reports beside its verdict.
type frameInfo struct {
	cut    bool   // the snap length cut the TCP payload
	padded bool   // bytes after the IP packet were trimmed
	seg    []byte // the TCP segment, trimmed to the IP length
}

// decodeFrame decodes one frame of the given link type, without its FCS.
// missing is how many bytes of the frame the capture left out (the snap
// length cut them): the IP packet had that many more on the wire. For a
// TCP segment it fills flow and, when tcp is not nil, tcp (whose Payload
// aliases data, trimmed to the IP length).
func decodeFrame(link layers.LinkType, data []byte, missing int, tcp *tcpLayer, flow *gopacket.Flow) (verdict, frameInfo) {
	ipb, version, v := linkPayload(link, data)
	if v != isTCP {
		return v, frameInfo{}
	}
	var (
		seg      []byte // the TCP segment as captured, trimmed to the IP length
		declared int    // the TCP segment's length according to the IP header
		info     frameInfo
	)
	switch version {
	case 4:
		seg, declared, v, info = ipv4(ipb, len(ipb)+missing, flow)
	case 6:
		seg, declared, v, info = ipv6(ipb, len(ipb)+missing, flow)
	default:
		return notTCP, frameInfo{}
	}
	if v != isTCP {
		return v, frameInfo{}
	}
	// The TCP header must be whole: a segment whose header the snap length
	// cut cannot be placed in its stream.
	if len(seg) < 20 {
		return isMalformed, frameInfo{}
	}
	hlen := int(seg[12]>>4) * 4
	if hlen < 20 || hlen > declared || hlen > len(seg) {
		return isMalformed, frameInfo{}
	}
	// The TCP decoder fails on nothing more than the checks above: a
	// caller may leave it to later, on the segment.
	if tcp != nil {
		if err := tcp.dec.Decode(&tcp.TCP, seg); err != nil {
			return isMalformed, frameInfo{}
		}
	}
	info.cut = len(seg) < declared
	info.seg = seg
	return isTCP, info
}

// linkPayload strips the link-layer header and returns the IP packet with
// its version (4 or 6), as the link header says.
func linkPayload(link layers.LinkType, b []byte) (ip []byte, version int, v verdict) {
	switch link {
	case layers.LinkTypeEthernet:
		if len(b) < 14 {
			return nil, 0, isMalformed
		}
		return etherPayload(binary.BigEndian.Uint16(b[12:14]), b[14:])
	case layers.LinkTypeLinuxSLL:
		if len(b) < 16 {
			return nil, 0, isMalformed
		}
		return etherPayload(binary.BigEndian.Uint16(b[14:16]), b[16:])
	case layers.LinkTypeLinuxSLL2:
		if len(b) < 20 {
			return nil, 0, isMalformed
		}
		return etherPayload(binary.BigEndian.Uint16(b[0:2]), b[20:])
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		// NULL stores the address family in the capturing host's byte order,
		// LOOP in network order; families are small numbers, so whichever
		// reading fits in 16 bits is the right one.
		if len(b) < 4 {
			return nil, 0, isMalformed
		}
		fam := binary.LittleEndian.Uint32(b[0:4])
		if fam > 0xffff {
			fam = binary.BigEndian.Uint32(b[0:4])
		}
		switch fam {
		case 2: // AF_INET everywhere
			return b[4:], 4, isTCP
		case 24, 28, 30: // AF_INET6 on NetBSD/OpenBSD, FreeBSD, Darwin
			return b[4:], 6, isTCP
		}
		return nil, 0, notTCP
	case layers.LinkTypeRaw, filter.LinkTypeRaw12, filter.LinkTypeRaw14:
		if len(b) == 0 {
			return nil, 0, isMalformed
		}
		switch b[0] >> 4 {
		case 4:
			return b, 4, isTCP
		case 6:
			return b, 6, isTCP
		}
		return nil, 0, isMalformed
	case layers.LinkTypeIPv4:
		return b, 4, isTCP
	case layers.LinkTypeIPv6:
		return b, 6, isTCP
	}
	return nil, 0, notTCP
}

// etherPayload follows VLAN tags, any number of them, to the IP packet.
// Every tag consumes four bytes, so the loop ends with the frame.
func etherPayload(et uint16, b []byte) ([]byte, int, verdict) {
	for et == etherDot1Q || et == etherDot1AD || et == etherQinQ1 || et == etherQinQ2 || et == etherQinQ3 {
		if len(b) < 4 {
			return nil, 0, isMalformed
		}
		et = binary.BigEndian.Uint16(b[2:4])
		b = b[4:]
	}
	switch et {
	case etherIPv4:
		return b, 4, isTCP
	case etherIPv6:
		return b, 6, isTCP
	}
	return nil, 0, notTCP
}

// ipv4 parses an IPv4 header (options included) and returns the TCP
// segment. wire is the longest the packet can be: its captured bytes and
// those of its frame the snap length cut.
func ipv4(b []byte, wire int, flow *gopacket.Flow) (seg []byte, declared int, v verdict, info frameInfo) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return nil, 0, isMalformed, info
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 || ihl > len(b) {
		return nil, 0, isMalformed, info
	}
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if total == 0 || total > wire {
		// A total length of 0, left for the NIC to fill in by TSO/GSO
		// on the capturing host, or one over the frame (GRO and LRO
		// merges, seen on a broker host): Wireshark takes the frame's
		// length then, and so do we. Only bytes the snap length cut
		// count as missing.
		total = wire
	}
	if total < ihl {
		return nil, 0, isMalformed, info
	}
	if binary.BigEndian.Uint16(b[6:8])&0x1fff != 0 {
		return nil, 0, notTCP, info // a later fragment: no TCP header in it
	}
	if b[9] != protoTCP {
		return nil, 0, notTCP, info
	}
	if len(b) > total {
		b = b[:total]
		info.padded = true
	}
	*flow = gopacket.NewFlow(layers.EndpointIPv4, b[12:16], b[16:20])
	return b[ihl:], total - ihl, isTCP, info
}

// ipv6 parses an IPv6 header and the extension headers before TCP, and
// returns the TCP segment. wire is as for ipv4.
func ipv6(b []byte, wire int, flow *gopacket.Flow) (seg []byte, declared int, v verdict, info frameInfo) {
	if len(b) < 40 || b[0]>>4 != 6 {
		return nil, 0, isMalformed, info
	}
	plen := int(binary.BigEndian.Uint16(b[4:6]))
	next := b[6]
	src, dst := b[8:24], b[24:40]
	rest := b[40:]
	if plen == 0 || plen > wire-40 {
		// A jumbogram, or TSO on the capturing host as for IPv4: the
		// frame is all there is to go by.
		plen = wire - 40
	}
	if len(rest) > plen {
		rest = rest[:plen]
		info.padded = true
	}
	for next != protoTCP {
		var hlen int
		switch next {
		case protoHopByHop, protoRouting, protoDestOpts:
			if len(rest) < 8 {
				return nil, 0, isMalformed, info
			}
			hlen = (int(rest[1]) + 1) * 8
		case protoAH:
			if len(rest) < 8 {
				return nil, 0, isMalformed, info
			}
			hlen = (int(rest[1]) + 2) * 4
		case protoFragment:
			if len(rest) < 8 {
				return nil, 0, isMalformed, info
			}
			if binary.BigEndian.Uint16(rest[2:4])>>3 != 0 {
				return nil, 0, notTCP, info // a later fragment
			}
			hlen = 8
		default:
			return nil, 0, notTCP, info
		}
		if hlen > len(rest) || hlen > plen {
			return nil, 0, isMalformed, info
		}
		next = rest[0]
		rest = rest[hlen:]
		plen -= hlen
	}
	*flow = gopacket.NewFlow(layers.EndpointIPv6, src, dst)
	return rest, plen, isTCP, info
}

// count adds a decoded frame to the counters and reports whether it is a
// TCP segment to hand on.
func (s *Stats) count(v verdict, info frameInfo) bool {
	switch v {
	case notTCP:
		s.NotTCP++
		return false
	case isMalformed:
		s.Malformed++
		return false
	}
	s.TCP++
	if info.padded {
		s.Padded++
	}
	if info.cut {
		s.Cut++
	}
	return true
}
