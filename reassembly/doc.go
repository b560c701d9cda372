// Package reassembly owns TCP connections: both directions of each in
// order (with gopacket's reassembly), retransmissions and overlaps,
// out-of-order segments, gaps where bytes were lost, connections whose
// handshake the capture missed, FIN/RST closes and idle expiry by capture
// time, reuse of a 4-tuple, memory caps, and which side is the broker. It
// maps every byte it hands over to the frame that completed it, so that
// later stages can name frames as Wireshark does. Flushes over all
// connections (by time, at the end) hand their connections over in the
// order of their first frames, not gopacket's map order, so that runs and
// assemblers that share a capture agree. It knows nothing of Kafka.
package reassembly
