// Package pipeline is the one path from a packet source to decoded
// events, used by every command and by the tests: capture → reassembly →
// decode, with the counters of each stage gathered into a Summary. It reads
// no flags; the commands translate theirs into Options.
//
// With Options.Workers above one, a file is read by one goroutine and its
// connections are shared out by hash among that many workers, each with
// its own assembler and decoders; their records are merged back into
// capture order (parallel.go), so that the Sink hears exactly what it
// would from one.
package pipeline
