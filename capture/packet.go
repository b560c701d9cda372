package capture

import (
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Packet is one captured frame that carried a TCP segment, as the reassembly
// stage needs it. The reader reuses a Packet's TCP layer and payload between
// calls to Next: a consumer that keeps bytes must copy them, or take them
// from Reader.NextShared.
type Packet struct {
	File  int       // index of the input file in the order the caller named them
	Frame int64     // 1-based frame number within that file, as Wireshark counts
	Time  time.Time // capture timestamp
	// Network is the IP source → destination flow and TCP the decoded TCP
	// layer, ready for gopacket's reassembly.Assembler.
	Network gopacket.Flow
	TCP     *layers.TCP
	// Segment is the TCP header and payload as captured, trimmed to the IP
	// length. With Reader.LeaveTCP, TCP is nil and Segment is what there
	// is, for the caller to decode (it decodes without error).
	Segment []byte
	// Cut is true when the snap length cut this frame's TCP payload: the
	// payload is shorter than the IP header says, so bytes are missing.
	Cut bool
	// WireLength is the frame's original length on the wire.
	WireLength int
}

// Stats counts what the reader saw, for the summary line and the report.
type Stats struct {
	Packets   int64 // every frame read, TCP or not
	Bytes     int64 // captured bytes of every frame
	TCP       int64 // frames that carried a TCP segment
	NotTCP    int64 // frames skipped: not IP, not TCP, or an unknown link type
	Cut       int64 // frames cut by the snap length inside the TCP payload
	Padded    int64 // frames whose captured length exceeds the IP length (trailing padding, trimmed)
	Malformed int64 // frames whose link, IP or TCP header does not parse
	Filtered  int64 // frames the capture filter rejected
	// KernelDrops are frames a live capture's kernel ring had no room for.
	KernelDrops int64
	// Input over a limit that was read past (the file's Problems say
	// where): frames whose captured length is over the packet limit,
	// skipped by their pcapng block length; pcapng interface descriptions
	// past the limit of a section, not kept; and the frames on those
	// interfaces, skipped undecoded. The frames count among Packets.
	OversizedFrames      int64
	ExtraInterfaces      int64
	ExtraInterfaceFrames int64
}
