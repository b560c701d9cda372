// Package rules owns the rule catalogue of docs/design/rules.md and applies it.
//
// The rules are applied by checkers. A rule is one declaration (Rule) in
// the checker that applies it: its ID, severity, group, profile, whether it
// looks across connections, whether it decides a broker verdict, whether
// its findings point at the answer, and the texts users read (summary,
// what fires, why it matters, how to fix it, the example scenario). The
// only other list a rule can be in is the precedence list of docs/design/rules.md §1
// (catalog.go). The catalogue, docs/rules.md, `kidscope rules`, the
// sample scenarios' lookups and the tests read the declarations. Each
// checker owns the state its rules need across connections and, per
// connection, the events it reacts to: header (the KIP-1313 profiles and
// their auto selection, established IDs), telemetry (KIP-714 IDs across
// connections), broker (the KIP-1313 verdict of each broker, requests it
// rejects that no rule finds wrong), group (member IDs), inventory
// (client instances across connections) and stream (what the capture
// cannot show). The engine keeps what every checker reads of a
// connection, routes events to the checkers, holds each request's
// candidate findings until they can be decided and applies the precedence.
// Adding a rule touches the checker that applies it, its tests and a
// sample scenario that shows it.
//
// Findings carry typed evidence, never sentences: expected and seen
// values (a kind and the raw IDs, strings and addresses), the broker's
// answer (error codes, or what became of the request), related frames with
// their roles. Package report says them in words.
//
// What the engine keeps for its report is capped (Options: findings,
// connection rows, instances, brokers, evidence frames; cross-connection
// maps forget their oldest entries; a capture's long strings are kept cut):
// memory does not grow with the capture. What a cap leaves out is counted
// in Result (Dropped, FindingsByRule, FindingCounts, Broker.Enforced and
// Ignored, Instance.ConnectionCount), so that the report's counts are true;
// a Tally keeps and counts findings so, for the engine and for a caller
// that gathers findings from several engines (kidscope fleet).
//
// Observations (Options.Observe) are the inputs of the rules across
// connections, for an engine made with Options.Replay that checks those
// rules over every host's.
//
// It is pure: decoded events in, findings out; no I/O, clocks, goroutines
// or globals beyond immutable tables.
package rules
