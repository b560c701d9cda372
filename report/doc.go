// Package report renders one result to every output format: tables for
// people (through tablewriter), JSON with a stable schema, NDJSON, CSV and
// Markdown. It is the only package that writes user output; it does not
// know where the result came from.
package report
