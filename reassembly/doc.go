// Package reassembly owns TCP connections: both directions of each in
// order, retransmissions and overlaps, out-of-order segments held within
// caps, gaps where bytes were lost, connections whose handshake the
// capture missed, FIN/RST closes and idle expiry by capture time, reuse of
// a 4-tuple, and which side is the broker. It maps every byte it hands
// over to the frame that completed it, so that later stages can name
// frames as Wireshark does. It knows nothing of Kafka.
//
// The assembler is written here rather than taken from gopacket's
// reassembly package, which it replaced, because that one does not do
// what a capture analyser needs:
//   - it visits connections in Go map order when it flushes, so the
//     order in which connections are handed over by time or at the end
//     changes from run to run; here flushes visit connections in the
//     order of their first frames, kept in a list per input file;
//   - it can attach nothing to bytes but a CaptureInfo, so the frame that
//     completed each byte had to travel packed inside one; here held
//     pages keep their frame as plain fields;
//   - an RST ends only the direction that carried it, and the other stays
//     open until idle, catching a new connection on the same 4-tuple;
//     here an RST ends both, after the data held out of order is handed
//     over;
//   - it cannot give up a hole when the peer acknowledges the missing
//     bytes (the capture lost them) except by being fed made-up segments;
//     here such a hole is given up at once, so that a response is never
//     handed over before its request.
//
// In-order segments are handed to the Handler straight from the packet's
// bytes; only segments that arrive out of order are copied, into pages of
// 1900 bytes that count against the caps, kept per direction in a tree by
// sequence number so that a segment in any order is placed in a number of
// steps logarithmic in the pages held. How overlaps, holes and closes are
// treated matches the gopacket-based assembler this one replaced (kept in
// internal/gopacketref for the differential fuzz test that checks it), so
// that captures decode exactly as before, with two exceptions:
//   - a segment held more than a quarter of the sequence space ahead is
//     placed by its distance from the next byte, where gopacket compared
//     it with each page by a difference that is no order that far apart;
//   - a new connection takes a 4-tuple from one the capture did not see
//     close: at a SYN other than the one it began with, when the old
//     connection was closing, silent for FlushAfter or marked
//     Conn.Abandoned by the Handler (it was not Kafka); or, without a SYN,
//     at bytes 16 MiB or more from the old stream's next byte, when it
//     was silent or Abandoned. The old one is closed first, with what it
//     held handed over, and counted in Stats.Reused. gopacket, like a
//     receiver (RFC 5961), dropped such a SYN and fed the new bytes to
//     the old connection.
//
// MaxConnections is applied by a Gate in capture order before segments
// are shared among assemblers (see Options.Split), so that which
// connections are analysed does not depend on how many assemblers there
// are; an assembler's own cap is then only a bound behind it.
package reassembly
