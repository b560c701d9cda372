// Package report renders one result to every output format: tables for
// people (through tablewriter), JSON with a stable schema, NDJSON, CSV,
// Markdown, and SARIF 2.1.0 for CI viewers. It is the only package that
// writes user output, and it owns all of its wording: a finding's
// message, its expected and seen values and the broker's answer are said
// here, from the rule catalogue and the finding's typed evidence, with IDs
// in the chosen UUID text form. It also names each finding with a stable
// ID (findingid.go), the same in every format and from every run that
// reports it. It does not know where the result came from, but for the
// agents and runs behind a fleet's files (Analysis.Origins).
//
// Counts are true counts: the engine's caps keep the first findings and
// evidence frames and the most recent connections and instances, and count
// the rest; every format says how many a list left out next to it (JSON
// in count fields, CSV in rows that count the findings not listed, SARIF
// in the run's properties). Every text a table, Markdown document, CSV
// file, SARIF log or live line writes goes through shown (safe.go), so
// that no string from a capture reaches a terminal, a Markdown renderer,
// a spreadsheet or a web page raw.
package report
