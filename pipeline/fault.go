package pipeline

import (
	"runtime/debug"

	"github.com/kidscope/kidscope/capture"
)

// A classic pcap file is read where it lies in memory (capture maps it),
// and a file cut shorter while it is read leaves pages that fault when
// read. The goroutines that read packet bytes ask for such a fault as a
// panic, and catch it here: the run ends with an error naming the file,
// as for any unreadable input, not with a crash.

// catchFaults makes a fault on the calling goroutine a panic; call the
// function it returns, deferred, to put the old setting back.
func catchFaults() (restore func()) {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// faultError returns the error for v, recovered from a panic, when it is
// a fault in one of files' mappings; any other panic goes on.
func faultError(files *capture.Reader, v any) error {
	if err := files.Fault(v); err != nil {
		return err
	}
	panic(v)
}
