package result

import (
	"net/netip"
	"time"
)

// Agent is one kidscope agent whose published records a fleet read (the
// AGENTS section of kidscope fleet's report).
type Agent struct {
	Name    string
	Source  string // the interface it captured on, or the files it read
	Version string // its kidscope version
	Runs    int    // how many times it started (frame numbers start again with each)
	// Brokers are the broker endpoints its connections went to (the first
	// 64).
	Brokers []netip.AddrPort
	// Records is how many of its records the fleet read; Published and
	// Dropped are what its last description said it had published and
	// dropped (its buffer full, or Kafka unreachable).
	Records, Published, Dropped int64
	// LastSeen is the time of its newest record, by its own clock.
	LastSeen time.Time
	// Stopped: its last description said it was stopping.
	Stopped bool
	// Reported counts its runs whose report (totals and tables, published
	// when a run stops) was read.
	Reported int
}

// FleetCounts are what a fleet skipped or put aside of the records it read.
type FleetCounts struct {
	Records    int64 // records read
	Unreadable int64 // records that are not kidscope's, skipped
	Future     int64 // records of a later schema than this kidscope reads, skipped
	Late       int64 // records replayed before older ones (the ordering buffer was full)
	Duplicates int64 // findings made again from records read twice, not emitted
	// Runs counts the agent runs whose records were read; Reported those
	// of them whose report was read: the fleet's totals and tables (its
	// summary, connections, instances, brokers and matrix) are theirs.
	Runs, Reported int64
	// ReportRowsMissing counts the rows that the reports read say were
	// published but that were not read (dropped by their agent, or not on
	// the partitions read); ReportRowsDropped those past the fleet's
	// bound, not kept.
	ReportRowsMissing, ReportRowsDropped int64
}
