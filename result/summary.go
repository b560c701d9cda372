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
	// Interrupted is true when the context ended the run early.
	Interrupted bool
	// TLSKeysNotKept counts the key log's client randoms not kept for
	// want of room (pipeline.Options.TLSMaxKeys): their connections are
	// named TLS (no key).
	TLSKeysNotKept int64
	// CutFrames are the first frames cut by the snap length inside their
	// TCP payload (Capture.Cut counts them all).
	CutFrames []kafka.FrameRef
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
