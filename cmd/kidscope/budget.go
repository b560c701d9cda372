package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/internal/size"
	"github.com/kidscope/kidscope/rules"
)

// budget is what each stage may hold, shared out of one memory limit so
// that the limit holds whatever a capture holds: connections tracked at
// once, out-of-order data, the bytes of connection sides that lost their
// framing, bodies being collected, and what the rules keep for the
// report. A cap given by its own flag overrides its share.
//
// The shares are of the soft limit the garbage collector keeps the heap
// under (budgetFor lists them). They add up to a little more than the
// whole: with every one full at once the heap would pass the limit, and
// the governor (memlimit.go) lets it grow rather than collect without
// end. Each hostile input fills one or two of them, and stays under it.
type budget struct {
	connections  int   // tracked at once (--max-connections)
	pages        int   // out-of-order pages in all (--max-buffer)
	pagesPerConn int   // out-of-order pages of one connection
	resyncBytes  int64 // bytes kept by lost sides (--max-resync-buffer)
	closedConns  int   // closed connections the report keeps
	instances    int   // instance IDs the inventory keeps
	findings     int   // findings the report keeps
	bodyBytes    int64 // bytes of bodies being collected (--max-body-buffer)
	tlsHeld      int64 // ciphertext held by TLS connections waiting for their keys
	tlsKeys      int   // client randoms of the key logs kept, by every worker together
	tcpStreams   int   // TCP 4-tuples numbered as Wireshark's tcp.stream
}

// Costs per entry, measured on the hostile inputs (peak RSS at two
// limits, divided by the entries the caps let in): a connection tracked
// at once costs about 2.9 KB of state across the stages (reassembly's
// stream, the decoder, the rules' state, the gate's entry) and more while
// its events are in flight; a closed connection's record and an instance
// of the inventory about 2 KB each with their indexes and their part of
// the report; a finding with its (capped) evidence and its part of the
// report about 2 KB. Each is rounded up.
const (
	connectionCost   = 3 << 10
	closedConnCost   = 2 << 10
	instanceCost     = 2 << 10
	findingCost      = 2 << 10
	tlsKeyCost       = 512 // a TLS 1.3 client random with its four secrets: 420 B measured
	tcpStreamCost    = 256 // a 4-tuple's key and state in a map, and its stream's start (estimated, not measured)
	pageSize         = 1900
	maxPagesPerConn  = 4096 // 7.8 MB: a window of a fast connection
	defaultBudgetFor = 200 << 20
)

// budgetFor shares limit (bytes; 0 means no limit, and the shares of the
// default limit) among the stages. The shares add up to more than the
// whole: the connections tracked at once and the records of closed ones
// are rarely both full, and neither is full with out-of-order data and
// lost sides at their caps.
func budgetFor(limit int64) budget {
	if limit <= 0 {
		limit = defaultBudgetFor
	}
	share := func(fraction float64, cost int64) int {
		return int(max(min(float64(limit)*fraction/float64(cost), 1<<30), 16))
	}
	b := budget{
		connections: share(0.45, connectionCost),
		pages:       share(0.125, pageSize),
		resyncBytes: max(limit/16, 1<<20),
		bodyBytes:   max(limit/16, 1<<20),
		tlsHeld:     max(limit/16, 1<<20),
		tlsKeys:     share(1.0/16, tlsKeyCost),
		closedConns: share(0.1, closedConnCost),
		instances:   share(0.1, instanceCost),
		findings:    share(0.15, findingCost),
		tcpStreams:  share(1.0/16, tcpStreamCost),
	}
	b.pagesPerConn = min(maxPagesPerConn, max(b.pages/4, 16))
	return b
}

// effectiveLimit is the limit the run works under: --memory-limit, or
// GOMEMLIMIT when that is set and the flag is not given.
func (f *inputFlags) effectiveLimit(cmd *cobra.Command) (int64, error) {
	if env, set := os.LookupEnv("GOMEMLIMIT"); set && !cmd.Flags().Changed("memory-limit") {
		if env == "off" {
			return 0, nil
		}
		n, err := size.Parse(env)
		if err != nil {
			return 0, fmt.Errorf("GOMEMLIMIT %w", err)
		}
		return n, nil
	}
	return f.memoryLimit.n, nil
}

// rulesOptions are the rules engine's caps from the budget.
func (b budget) rulesOptions() rules.Options {
	return rules.Options{MaxConnections: b.closedConns, MaxInstances: b.instances, MaxFindings: b.findings}
}

// liveRulesOptions are the caps of live, which keeps less for its report
// than a file's: it runs for days, and its report is a status, not a
// record of everything.
func (b budget) liveRulesOptions() rules.Options {
	return rules.Options{MaxConnections: min(b.closedConns, 2000), MaxInstances: min(b.instances, 5000),
		MaxFindings: min(b.findings, 10000)}
}
