// Package rules owns the rule catalogue of RULES.md and the engine that
// applies it: per-connection state (the profiles and their auto selection,
// established IDs), cross-connection state (telemetry IDs, group members,
// client instances, brokers), and findings with their evidence, plus the
// inventory of instances, brokers and connections. It is pure: decoded
// events in, findings out; no I/O, clocks, goroutines or globals, and it
// knows nothing of how anything is printed.
package rules
