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
// 1900 bytes that count against the caps. How overlaps, holes and closes
// are treated matches the gopacket-based assembler this one replaced
// (kept in internal/gopacketref for the differential fuzz test that checks
// it), so that captures decode exactly as before.
package reassembly
