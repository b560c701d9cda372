package samples

import (
	"encoding/binary"

	"github.com/kidscope/kidscope/samples/netsim"
)

// Quirks of real capture files, each around a finding that needs every
// byte read right: records captured longer than their frames, TSO/GRO
// lengths on a broker host, Ethernet frames with their FCS, pcapng blocks
// that hold no packet, a snap length of 0. Wireshark reads all of them;
// so must kidscope, at the frames Wireshark numbers.

// Blocks of the pcapng scenario.
var (
	// A Decryption Secrets Block with a TLS key log line (made up): no
	// reader may print or keep it.
	secretsBlock = netsim.Block{Type: 0x0000000a, Body: append(binary.LittleEndian.AppendUint32(
		binary.LittleEndian.AppendUint32(nil, 0x544c534b), uint32(len(keyLogLine))), keyLogLine...)}
	keyLogLine = []byte("CLIENT_RANDOM 5d1e0c8a9b2f4e6d7c3b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d " +
		"8f2e4c6a1b3d5f7e9c0a2b4d6f8e1c3a5b7d9f0e2c4a6b8d1f3e5c7a9b0d2f4e6a8c1b3d5f7e9c0a2b4d6f8e1c3a\n")
)

// customBlock is a custom block (PEN 32473, the one for documentation);
// copy says whether a tool may copy it to a new file.
func customBlock(copy bool, text string) netsim.Block {
	typ := uint32(0x40000bad)
	if copy {
		typ = 0x00000bad
	}
	return netsim.Block{Type: typ, Body: append(binary.LittleEndian.AppendUint32(nil, 32473), text...)}
}

// withBlocks writes the blocks before the step.
func (s Step) withBlocks(b ...netsim.Block) Step {
	s.Blocks = append(s.Blocks, b...)
	return s
}

func quirkScenarios() []Scenario {
	ap, aq, ar, as := uid(801), uid(802), uid(803), uid(804)
	at, au, av, aw := uid(805), uid(806), uid(807), uid(808)
	return []Scenario{
		{
			Name: "net-caplen-gt-len",
			Description: "pcap records that say they captured more than the frame had (captured length over the original length, as some converters write): " +
				"read as captured, as Wireshark does; a seed client changes its ID, the KIP-1313 broker answers INVALID_REQUEST",
			Format: netsim.Pcap, Seed: 801,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{{Client: ep("10.0.3.40:41730"), Broker: broker1, ClientID: "orders-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(ap)).label("est").seg(netsim.CaplenOverLen(0, 4)).respSeg(netsim.CaplenOverLen(0, 4)),
				metadata(Tag(ap), "orders").respSeg(netsim.CaplenOverLen(0, 60)),
				gtsV0Err(Tag(aq), aq, errInvalidRequest).seg(netsim.CaplenOverLen(0, 4)).find("header-id-changed", "est"),
			}}},
		},
		{
			Name: "net-tso",
			Description: "captured on the broker host: 64 KiB TSO sends with an IPv4 total length of 0 and GRO-merged receives with one over the frame, " +
				"read as the frame's bytes, as Wireshark does; a seed client drops its ID, the pre-KIP-1313 broker answers NONE",
			Format: netsim.Pcap, Seed: 802,
			Brokers: []Broker{{broker2, Ignores}},
			Conns: []Conn{{Client: ep("10.0.3.41:52384"), Broker: broker2, ClientID: "orders-app", Profile: Seed, MSS: 64000, Steps: []Step{
				apiVersions(Tag(ar)).label("est"),
				metadata(Tag(ar), "orders"),
				produce("orders", 0, 300).seg(netsim.IPv4Length(0, 65535)),
				fetch("orders", 0, 1100).respSeg(netsim.IPv4Length(0, 0), netsim.IPv4Length(1, 0)),
				gtsV0(NoTag, ar, ZERO).find("header-id-dropped", "est"),
			}}},
		},
		{
			Name: "net-fcs",
			Description: "a tap's capture: every Ethernet frame ends with its FCS, which the pcap header's link-type field declares, short frames are padded; " +
				"a seed client changes its ID, the KIP-1313 broker answers INVALID_REQUEST",
			Format: netsim.Pcap, Link: netsim.EthernetFCS, Seed: 803,
			Net:     func(o *netsim.Options) { o.Pad, o.NoTimestamps = true, true },
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{{Client: ep("10.0.3.42:38214"), Broker: broker1, ClientID: "orders-consumer", Profile: Seed, Steps: []Step{
				apiVersions(Tag(as)).label("est"),
				metadata(Tag(as), "orders"),
				findCoordinator(Tag(as), group),
				gtsV0Err(Tag(at), at, errInvalidRequest).find("header-id-changed", "est"),
			}}},
		},
		{
			Name: "net-pcapng-unknown-blocks",
			Description: "pcapng with a Decryption Secrets Block, custom blocks (which Wireshark numbers as frames) and a block of an unknown type between the packets: " +
				"skipped, frames numbered as Wireshark numbers them; a seed client changes its ID, the KIP-1313 broker answers INVALID_REQUEST",
			Format: netsim.PcapNG, Seed: 804,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{{Client: ep("10.0.3.43:46602"), Broker: broker1, ClientID: "orders-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(au)).label("est").withBlocks(secretsBlock, customBlock(true, "capture started by the on-call engineer")),
				metadata(Tag(au), "orders").withBlocks(netsim.Block{Type: 0x00000123, Body: []byte("a block no reader knows")}, customBlock(false, "mark")),
				gtsV0Err(Tag(av), av, errInvalidRequest).withBlocks(customBlock(true, "the ID changes here")).find("header-id-changed", "est"),
			}}},
		},
		{
			Name: "net-snaplen-0",
			Description: "a pcap whose header gives a snap length of 0 (no limit, to Wireshark): a seed client whose ApiVersions carried no ID sends one later; " +
				"the pre-KIP-1313 broker answers NONE",
			Format: netsim.Pcap, Seed: 805,
			Net:     func(o *netsim.Options) { o.ZeroSnaplen = true },
			Brokers: []Broker{{broker2, Ignores}},
			Conns: []Conn{{Client: ep("10.0.3.44:59120"), Broker: broker2, ClientID: "orders-producer", Profile: Seed, Steps: []Step{
				apiVersions(NoTag).label("est"),
				metadata(Tag(aw), "orders").find("header-id-late", "est"),
				gtsV0(Tag(aw), aw, ZERO).find("header-id-late", "est"),
			}}},
		},
	}
}
