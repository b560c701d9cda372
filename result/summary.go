package result

import (
	"fmt"
	"time"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/reassembly"
)

// Summary is the run's totals.
type Summary struct {
	Files       []string
	First, Last time.Time // capture time of the first and last packet
	Capture     capture.Stats
	Reassembly  reassembly.Stats
	Connections int64
	// OutsideTime counts the packets --from/--to dropped before
	// reassembly (pipeline.TimeRange); Capture.Packets counts them too.
	OutsideTime int64
	// Counters are the decoders' totals over every connection.
	decode.Counters
	Gaps      int64
	NotKafka  int64
	Truncated int64 // streams that ended inside a frame
	// Problems are input problems that did not stop the run: what stopped
	// a file early (a truncated file), and quirks of a file's records it
	// was read past the way Wireshark reads them (capture.Recovered). One
	// line each, naming the file and frame.
	Problems []error
	// Comments are the inputs' capture comments (pcapng section headers).
	Comments []capture.FileComment
	// Interrupted is true when the context ended the run early.
	Interrupted bool
	// TLSKeysNotKept counts the key log lines not kept for want of room
	// (pipeline.Options.TLSMaxKeys, the client randoms kept, is
	// TLSKeysKept); a growing key log (live) counts the client randoms it
	// forgot instead. Their connections are named TLS (no key).
	TLSKeysNotKept int64
	TLSKeysKept    int
	// CutFrames are the first frames cut by the snap length inside their
	// TCP payload (Capture.Cut counts them all).
	CutFrames []kafka.FrameRef
	// OtherPorts are the busiest ports of the TCP packets on no broker
	// port (Reassembly.Ignored counts them all), each packet counted for
	// the port of its server as far as the capture tells; KafkaPorts are
	// those of them that Kafka requests seem to be sent to. They say what
	// a run that decoded no Kafka saw instead.
	OtherPorts, KafkaPorts []PortCount
}

// PortCount is a TCP port on no broker port, with the packets counted for
// it.
type PortCount struct {
	Port    uint16
	Packets int64
	Kafka   bool // Kafka requests seem to be sent to it
}

// InputStopped reports whether an input could not be read to its end: a
// problem other than a quirk the file was read past.
func (s *Summary) InputStopped() bool {
	for _, p := range s.Problems {
		if !capture.Recovered(p) {
			return true
		}
	}
	return false
}

// FileName returns the name of input i for output.
func (s *Summary) FileName(i int) string {
	if i >= 0 && i < len(s.Files) {
		return s.Files[i]
	}
	return fmt.Sprintf("file#%d", i)
}
