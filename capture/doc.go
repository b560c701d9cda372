// Package capture is kidscope's packet source: it turns capture files into
// the TCP segments the reassembly stage consumes, and knows nothing of Kafka.
//
// It owns:
//
//   - opening inputs: classic pcap (either byte order, micro- or nanosecond
//     timestamps) and pcapng (several interfaces with different link types,
//     several sections), each possibly gzip-compressed, from files or
//     standard input, told apart by their first bytes rather than by file
//     names. pcapng blocks are read here, not by pcapgo's NgReader, which
//     drops the interface option that declares an FCS and skips blocks
//     Wireshark numbers as frames (pcapng.go);
//   - merging several inputs into one stream in capture-time order, while
//     keeping each file's own order (a pcapng may go back in time);
//   - frame numbering: 1-based per input file, counting every frame, TCP or
//     not, the way Wireshark does, so a finding can be looked up there;
//   - link, IP and TCP header parsing (Ethernet with any depth of 802.1Q and
//     802.1ad tags, Linux SLL and SLL2, BSD NULL and LOOP, raw IPv4/IPv6;
//     IPv4 options, IPv6 extension headers) into gopacket TCP layers and
//     network flows ready for gopacket's reassembly.Assembler;
//   - bad input: a truncated file, a frame cut by the snap length or a
//     malformed header is counted or recorded with its file and frame, and
//     reading goes on; nothing in a file can make the reader panic;
//   - quirks of real captures, read as Wireshark reads them: pcapng blocks
//     that hold no packet (custom blocks, systemd journal and sysdig event
//     blocks take a frame number, as in Wireshark 4.0; statistics, name
//     resolution, decryption secrets and unknown blocks are skipped
//     unread, so secrets are never in memory); records captured longer
//     than the frame's original length (the captured bytes are read, and
//     the file has one problem, which Recovered tells from one that stopped
//     it); a snap length of 0 in a pcap header (no limit); the IPv4 total
//     length of 0 or over the frame that TSO/GSO, GRO and LRO leave on a
//     broker host (the frame's length is taken; IPv6 payload lengths
//     alike); an FCS that a pcap header's link-type FCS bits or a pcapng
//     interface's if_fcslen declares (stripped from Ethernet frames before
//     IP; undeclared, the IP length trims it as it trims padding).
//
// Hot path: a classic pcap file is mapped into memory and its record and
// frame headers are read where they lie, with the pages behind the read
// position given back as it goes (mapped.go). Other inputs (stdin, pcapng,
// gzip) are read with zero-copy reads out of a read buffer. Headers are
// decoded into layer structs that are reused, the TCP options skipped
// (TCPDecoder), so reading allocates nothing per packet. Several files are
// merged without copying: a file is read on only after its last packet was
// handed out, at the next call to Next, so that packet's bytes stay valid
// until then.
//
// Memory handed out is the Reader's or the caller's, never the mapping:
// Next copies a mapped packet's TCP segment into a buffer of the Reader,
// and NextAppend copies any packet's into the caller's buffer, the one
// copy a caller that keeps segments past Next (the pipeline's dealer) made
// anyway. Of the two ways to keep a mapping safe, copies and leases (the
// consumer gives each packet's bytes back, and the mapping is let go of
// only behind what was given back), copies are the one that keeps a file
// cut shorter while it is read inside this package: its pages past the
// new end fault when read by anyone, and with leases the readers would be
// the consumers' goroutines, in reassembly and decoding, which would each
// have to turn a fault into a panic and recover it. With copies every read
// of the mapping is in a function of this package that asks for a fault as
// a panic and recovers it there (guardFault): the file stops with a
// *FrameError in Problems naming it and the frame, like a file that ends
// inside a record, Next goes on with the other files, and no consumer
// needs to know how the bytes were read or how long they stay mapped. The
// copy costs the reading goroutine the segment's bytes, which the mapping
// saved.
//
// Live capture and the capture filter, in capture/filter, belong here too.
package capture
