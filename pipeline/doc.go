// Package pipeline is the one path from a packet source to a result, used
// by every command and by the tests: capture → reassembly → decode → rules,
// with the counters of each stage gathered into a Summary and, when
// Options.Rules asks for them, the findings and inventory of the rules
// stage in Result.Rules. A Sink hears the decoded events (frames, live
// metrics) and, as a FindingSink, each finding as it is made (live). It
// reads no flags; the commands translate theirs into Options.
//
// With Options.Workers above one, a file is read by one goroutine and its
// connections are shared out by hash among that many workers, each with
// its own assembler and decoders; their records are merged back into
// capture order (parallel.go), so that the rules stage and the Sink hear
// exactly what they would from one. The rules stage runs on the merging
// goroutine: its cross-connection state needs every connection in order.
package pipeline
