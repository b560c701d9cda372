// Package netsim writes realistic, deterministic TCP conversations into
// capture files, for the tests of the reassembly and decode stages and for
// the scenario generator.
//
// A Capture collects the frames of many connections in the order they are
// made; a Conn is one TCP connection in it. Open writes the three-way
// handshake (or nothing, for a connection seen mid-stream), Send writes one
// message of one side as MSS-sized segments with the peer's ACKs the way
// Linux sends them (an ACK for every second segment, immediate duplicate
// ACKs with SACK blocks for out-of-order and duplicate data, everything else
// piggybacked on the peer's next segment), and Close or Reset end the
// connection. SendParts writes several messages in one write, so that one
// segment can end one message and start the next, and reports where each
// is complete. SegOpt values passed to Send bend one message: cut it at
// chosen offsets, reorder, retransmit, overlap, lose or snap-cut its
// segments, or give them quirks of real capture files (IPv4Length for
// TSO/GRO lengths, CaplenOverLen for records longer than their frames).
//
//	c := netsim.New(netsim.Options{Link: netsim.Ethernet, Format: netsim.PcapNG})
//	cn := c.Open(netip.MustParseAddrPort("10.0.0.1:50000"),
//		netip.MustParseAddrPort("10.0.0.2:9092"), netsim.ConnOptions{})
//	done := cn.Send(true, request, netsim.SplitAt(4)) // frame where the request is complete
//	cn.Send(false, response)
//	cn.Close(true)
//	err := c.WriteFile("produce.pcapng")
//
// What a capture holds:
//
//   - link headers for Ethernet (plain, 802.1Q, 802.1ad QinQ), Linux cooked
//     v1 and v2, BSD loopback (DLT_NULL) and raw IP; in pcapng, connections
//     can sit on different interfaces with different link types;
//   - IPv4 (DF, TTL 64, an ID counter per sender) or IPv6 (hop limit 64, a
//     flow label per direction, optionally a Hop-by-Hop extension header);
//   - TCP with ISNs, IP IDs and timestamp clocks derived from Options.Seed,
//     Linux's SYN options (MSS, SACK permitted, timestamps, window scale 7)
//     and the timestamps option on every segment (unless turned off);
//   - checksums computed by gopacket, and frame times that start at
//     Options.Start and advance Options.Step per frame;
//   - quirks of real capture files: Ethernet with its FCS declared in the
//     pcap header (EthernetFCS), a snap length of 0 in the file
//     (Options.ZeroSnaplen), and pcapng blocks that hold no packet between
//     the packets (AddBlock).
//
// The same calls with the same options give the same bytes: nothing reads the
// clock, a random source or a map.
//
// Methods panic on arguments that are programming errors (a segment index out
// of range, an interface that does not exist, mixed address families, Send
// after Close); errors are only those of writing the file.
package netsim
