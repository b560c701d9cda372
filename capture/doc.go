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
//     reading goes on; nothing in a file can make the reader panic. An
//     input that cannot be opened or is not a capture file is a problem
//     of its own and the others are read; Open fails only when none can
//     be;
//   - hostile lengths: every length read from a file is checked before
//     memory is given to it, so reading a file takes memory bounded by
//     these limits, not by what its lengths declare. A record's captured
//     length may be max(snap length, 256 KiB), up to 1 MiB; a snap length
//     over 1 MiB is not believed, and 256 KiB is the limit (packetLimit).
//     A classic pcap record over it stops the file, as nothing says where
//     the next record starts. A pcapng block may be 16 MiB long; one over
//     that stops the file. Only a packet block's header and captured bytes
//     are copied when it does not fit in the read buffer; a packet block
//     over the packet limit is skipped by its length (its two copies of
//     the length agreeing) and counted (Stats.OversizedFrames, a
//     recovered *OversizeError); section and interface headers are read
//     option by option through the read buffer, and every other block is
//     discarded through it. A section keeps 65,536 interfaces; those past
//     that and the frames on them are counted (Stats.ExtraInterfaces,
//     ExtraInterfaceFrames, a recovered *InterfaceLimitError);
//   - quirks of real captures, read as Wireshark reads them: pcapng blocks
//     that hold no packet (custom blocks, systemd journal and sysdig event
//     blocks take a frame number, as in Wireshark 4.0; statistics, name
//     resolution, decryption secrets and unknown blocks are skipped
//     unread, discarded through the read buffer, so secrets are never
//     copied out of it unless the caller asks for them with
//     Reader.OnSecrets, for TLS decryption); records captured longer
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
// A mapped file's bytes never reach another package as a slice: Next
// copies a mapped packet's segment into a buffer of the Reader as it reads
// it (its caller reads it at once, on the same goroutine), and
// NextShared, for a caller that hands segments to other goroutines, gives
// a Segment whose bytes are read with Segment.Bytes or OwnSegments under
// a Lease (lease.go).
//
// Why so. A file cut shorter while it is read faults when its lost pages
// are read, by whichever goroutine reads them, pages read before the cut
// included. For that to be an error here and never a panic in the
// pipeline, every byte a consumer reads must be copied out of the mapping
// by a function of this package that asks for faults as panics and
// recovers them there (guardFault, mapping.catch, catchAt); the file then
// stops with one *FrameError in Problems naming it and the first frame
// found gone, like a file that ends inside a record, and Next goes on
// with the other files. The copy is not free: analyze reads few of a
// segment's payload bytes (the decoder skips record data), so copying
// them all costs memory bandwidth the mapping saved.
//
// Of the two places for that copy, the reading goroutine (Next for every
// consumer, into the pipeline's chunk arenas) and the consumers' (a lease
// over segments left in the mapping, copied by the worker that reads
// them), this is the lease: on the shared bench's 1 GB load the copy on
// the reading goroutine took as much CPU or more, and it sits on the
// goroutine every other one waits for, where the workers' copies run in
// parallel. Measured on the 2 shared cores, both cost analyze about a
// sixth more CPU than reading the mapping in place did (see the commits).
// The lease, not a constant shared with the consumer, also bounds how
// much of a file stays mapped: its pages are given back behind the oldest
// lease not released.
//
// A cut inside a page leaves the rest of that page reading as zeros, not
// faulting: the frame across the cut is read with a zeroed tail, and the
// zeros as empty records, until the next page faults.
//
// Live capture and the capture filter, in capture/filter, belong here too,
// and the recording of a live capture to pcapng (record.go): its files
// hold credentials, so each is created new, mode 0600, never through a
// symbolic link nor into a file that was there before (a forced
// replacement is a new file renamed over the old one; a forced FIFO or
// device must be root's or the process's own).
package capture
