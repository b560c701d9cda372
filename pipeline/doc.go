// Package pipeline is the one path from a packet source to decoded
// events, used by every command and by the tests: capture → reassembly →
// decode, with the counters of each stage gathered into a Summary. It reads
// no flags; the commands translate theirs into Options.
package pipeline
