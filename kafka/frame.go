package kafka

import (
	"cmp"
	"time"
)

// FrameRef names a frame of the input: the input file (by index in the
// run's list of files), the frame's 1-based number in it, counted as
// Wireshark counts, and its capture time.
type FrameRef struct {
	File  int
	Frame int64
	Time  time.Time
}

// Compare orders frames by file, then by number: the order of a run's
// report. It returns -1, 0 or +1.
func (f FrameRef) Compare(g FrameRef) int {
	if c := cmp.Compare(f.File, g.File); c != 0 {
		return c
	}
	return cmp.Compare(f.Frame, g.Frame)
}

// Same reports whether f and g name the same frame (whatever their times).
func (f FrameRef) Same(g FrameRef) bool { return f.File == g.File && f.Frame == g.Frame }

// Span says that the bytes of a chunk of a stream before End (counted from
// the chunk's start) became available in order at frame At: the frame whose
// arrival completed them.
type Span struct {
	End int
	At  FrameRef
}
