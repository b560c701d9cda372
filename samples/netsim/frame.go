package netsim

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var serializeOpts = gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}

// Linux cooked-capture values.
const (
	sllHost     = 0 // packet type: to this host
	sllOutgoing = 4 // packet type: sent by this host
	arphrdEther = 1
	arphrdLoop  = 772
	ifindexLo   = 1
	ifindexEth  = 2
)

// build serializes one frame from side from: link header, IP, TCP, payload,
// any Ethernet padding and FCS. hdr is the length of everything before the
// TCP payload. total >= 0 replaces the IPv4 total length (IPv4Length).
//
// Cooked captures are taken on the server's host: frames to the server are
// "host", frames from it "outgoing".
func (cn *Conn) build(from int, t *layers.TCP, payload []byte, ipid uint16, total int) (data []byte, hdr int) {
	c := cn.c
	src, dst := cn.ep[from].Addr(), cn.ep[1-from].Addr()
	var ip gopacket.SerializableLayer
	ethType := layers.EthernetTypeIPv4
	family := layers.ProtocolFamilyIPv4
	if cn.v6 {
		ip6 := &layers.IPv6{
			Version:    6,
			FlowLabel:  cn.flow[from],
			NextHeader: layers.IPProtocolTCP,
			HopLimit:   64,
			SrcIP:      src.AsSlice(),
			DstIP:      dst.AsSlice(),
		}
		if c.opt.IPv6HopByHop {
			hbh := &layers.IPv6HopByHop{Options: []*layers.IPv6HopByHopOption{{OptionType: 1, OptionData: make([]byte, 4)}}}
			hbh.NextHeader = layers.IPProtocolTCP
			ip6.HopByHop = hbh
			ip6.NextHeader = layers.IPProtocolIPv6HopByHop
		}
		if err := t.SetNetworkLayerForChecksum(ip6); err != nil {
			panic(err)
		}
		ip = ip6
		ethType = layers.EthernetTypeIPv6
		family = layers.ProtocolFamilyIPv6Darwin
	} else {
		ip4 := &layers.IPv4{
			Version:  4,
			IHL:      5,
			Id:       ipid,
			Flags:    layers.IPv4DontFragment,
			TTL:      64,
			Protocol: layers.IPProtocolTCP,
			SrcIP:    src.AsSlice(),
			DstIP:    dst.AsSlice(),
		}
		if err := t.SetNetworkLayerForChecksum(ip4); err != nil {
			panic(err)
		}
		ip = ip4
	}

	var ls []gopacket.SerializableLayer
	linkLen := 0
	eth := &layers.Ethernet{SrcMAC: cn.mac[from][:], DstMAC: cn.mac[1-from][:], EthernetType: ethType}
	switch cn.link {
	case Ethernet, EthernetFCS:
		ls, linkLen = append(ls, eth), 14
	case EthernetVLAN:
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls, linkLen = append(ls, eth, &layers.Dot1Q{VLANIdentifier: c.opt.VLAN, Type: ethType}), 18
	case EthernetQinQ:
		eth.EthernetType = layers.EthernetTypeQinQ
		ls = append(ls, eth,
			&layers.Dot1Q{VLANIdentifier: c.opt.VLAN, Type: layers.EthernetTypeDot1Q},
			&layers.Dot1Q{VLANIdentifier: c.opt.InnerVLAN, Type: ethType})
		linkLen = 22
	case Null:
		ls, linkLen = append(ls, &layers.Loopback{Family: family}), 4
	case LinuxSLL:
		linkLen = 16
	case LinuxSLL2:
		linkLen = 20
	}
	ls = append(ls, ip, t, gopacket.Payload(payload))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, serializeOpts, ls...); err != nil {
		panic(fmt.Sprintf("netsim: serialize: %v", err))
	}
	var ipLen int
	if cn.v6 {
		ipLen = 40 + int(ip.(*layers.IPv6).Length)
	} else {
		ipLen = int(ip.(*layers.IPv4).Length)
	}

	// gopacket cannot serialize the cooked headers: write them by hand.
	loop := dst.IsLoopback()
	pktType := byte(sllHost)
	if from == server {
		pktType = sllOutgoing
	}
	var addr [8]byte
	arphrd, ifindex := uint16(arphrdEther), uint32(ifindexEth)
	if loop {
		arphrd, ifindex = arphrdLoop, ifindexLo
	} else {
		copy(addr[:], cn.mac[from][:])
	}
	switch cn.link {
	case LinuxSLL:
		h, err := buf.PrependBytes(16)
		if err != nil {
			panic(err)
		}
		binary.BigEndian.PutUint16(h[0:], uint16(pktType))
		binary.BigEndian.PutUint16(h[2:], arphrd)
		binary.BigEndian.PutUint16(h[4:], 6)
		copy(h[6:14], addr[:])
		binary.BigEndian.PutUint16(h[14:], uint16(ethType))
	case LinuxSLL2:
		h, err := buf.PrependBytes(20)
		if err != nil {
			panic(err)
		}
		binary.BigEndian.PutUint16(h[0:], uint16(ethType))
		binary.BigEndian.PutUint16(h[2:], 0)
		binary.BigEndian.PutUint32(h[4:], ifindex)
		binary.BigEndian.PutUint16(h[8:], arphrd)
		h[10] = pktType
		h[11] = 6
		copy(h[12:20], addr[:])
	}

	// gopacket pads every Ethernet frame to 60 bytes: undo that unless asked.
	data = buf.Bytes()[:linkLen+ipLen]
	hdr = len(data) - len(payload)
	if total >= 0 {
		setIPv4Length(data[linkLen:], total)
	}
	if c.opt.Pad && cn.link.ethernet() && len(data) < 60 {
		data = append(data, make([]byte, 60-len(data))...)
	}
	if cn.link == EthernetFCS {
		data = binary.LittleEndian.AppendUint32(data, crc32.ChecksumIEEE(data))
	}
	return data, hdr
}

// setIPv4Length writes total into the IPv4 header ip and computes its
// checksum again.
func setIPv4Length(ip []byte, total int) {
	binary.BigEndian.PutUint16(ip[2:], uint16(total))
	binary.BigEndian.PutUint16(ip[10:], 0)
	var sum uint32
	for i := 0; i < int(ip[0]&0x0f)*4; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
}
