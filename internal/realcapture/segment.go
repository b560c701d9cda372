package realcapture

import (
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// segmentDecoder decodes the loopback Ethernet frames that both the capture
// and the check of the written files read, into reused layers.
type segmentDecoder struct {
	eth     layers.Ethernet
	ip4     layers.IPv4
	ip6     layers.IPv6
	tcp     layers.TCP
	payload gopacket.Payload
	decoded []gopacket.LayerType
	parser  *gopacket.DecodingLayerParser
}

func newSegmentDecoder() *segmentDecoder {
	d := &segmentDecoder{}
	d.parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &d.eth, &d.ip4, &d.ip6, &d.tcp, &d.payload)
	d.parser.IgnoreUnsupported = true
	return d
}

// decode returns a frame's TCP layer (reused by the next call) and its
// endpoints as ip:port; ok is false for a frame without TCP.
func (d *segmentDecoder) decode(data []byte) (tcp *layers.TCP, src, dst string, ok bool) {
	d.decoded = d.decoded[:0]
	_ = d.parser.DecodeLayers(data, &d.decoded)
	var srcIP, dstIP string
	for _, lt := range d.decoded {
		switch lt {
		case layers.LayerTypeIPv4:
			srcIP, dstIP = d.ip4.SrcIP.String(), d.ip4.DstIP.String()
		case layers.LayerTypeIPv6:
			srcIP, dstIP = d.ip6.SrcIP.String(), d.ip6.DstIP.String()
		case layers.LayerTypeTCP:
			ok = true
		}
	}
	if !ok {
		return nil, "", "", false
	}
	return &d.tcp, fmt.Sprintf("%s:%d", srcIP, d.tcp.SrcPort), fmt.Sprintf("%s:%d", dstIP, d.tcp.DstPort), true
}
