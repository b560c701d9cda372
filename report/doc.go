// Package report renders one result to every output format: tables for
// people (through tablewriter), JSON with a stable schema, NDJSON, CSV and
// Markdown. It is the only package that writes user output, and it owns
// all of its wording: a finding's message, its expected and seen values
// and the broker's answer are said here, from the rule catalogue and the
// finding's typed evidence, with IDs in the chosen UUID text form. It does
// not know where the result came from.
package report
