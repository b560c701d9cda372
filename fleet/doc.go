// Package fleet owns what kidscope agents on many broker hosts publish to
// a Kafka topic (live --publish, analyze --publish) and how kidscope fleet
// reads it back: the records' versioned JSON schema (record.go; schema
// 1, which named less, is read through schema1.go), the
// producer that never blocks the capture (publish.go), and the Merger,
// which puts every agent's records in time order and replays their
// observations into one rules engine, so that the rules across
// connections (docs/design/rules.md §4 across connections, §6 member IDs, §7 the
// instance inventory) see the whole fleet.
//
// What is published is what those rules read (rules.Observation: header
// IDs, telemetry and member IDs, error codes) and the agent's findings,
// never record data, SASL bytes or telemetry metric payloads. Records are
// keyed by the client instance ID a connection goes by (its first header
// ID; the client's IP address for a client that sends none), so that one
// instance's records meet on one partition, where a fleet member reads
// them in order.
//
// When a run stops, its agent publishes its report (agentreport.go): its
// totals and its tables of connections, client instances and brokers. The
// fleet's report shows their union in every section, as analyze over
// every agent's capture would (tables.go), and says of how many runs they
// are; with none read it leaves them out.
//
// The fleet's findings are its own engine's for the rules across
// connections, and for the §1 precedence on the requests it replayed, and
// each agent's for every other rule: those need every message of a
// connection, which only the agent saw. A finding is told apart by its
// agent, run, file, frame, rule and values, and is emitted once; the same
// make its ID (report.FindingID, of the Merger's Origins), which a member
// that reads the records again after another gives the finding again, so
// that a consumer of the stream drops the repeat.
//
// The Merger's state is bounded: the engine's caps, the records waiting
// to be put in order, and generational sets of what was replayed and
// emitted.
package fleet
