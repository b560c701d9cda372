// Package doctest runs the shell examples of kidscope's documents as
// testscripts, so that an example that no longer says what the binary
// prints fails the tests.
//
// An example is a fenced block without a language tag whose first line
// starts with "$ ". Each "$ " line is a command, as a reader types it into
// a shell (a line ending in a backslash goes on to the next); the lines
// after it, up to the next "$ " line or the end of the block, are what it
// prints, standard output and standard error together in the order they
// were written. A line that is only "..." stands for any number of lines,
// so a long output can show its start and its end. Trailing spaces and
// trailing empty lines do not count. A command that exits non-zero ends
// with a comment that says so, which a reader understands too:
//
//	$ kidscope analyze samples/captures/hdr-seed-changed.pcapng   # exit 1
//
// Each document becomes one script, its commands run in order in one
// working directory (so a later command reads what an earlier one wrote),
// through sh -c, with the kidscope under test first on PATH and the
// repository's samples/ and testdata/ at the same relative paths.
// "go run ./cmd/kidscope" at the start of a command is run as that
// kidscope, which is what it builds.
//
// A command that cannot run in a test (a live capture, Docker, systemd, a
// placeholder file name) goes in a block with a language tag (```sh): the
// tag is the visible mark that it is not run. A block without a tag that
// holds a kidscope command but is no example is an error, so that no
// command is left untested by accident.
//
// go test ./internal/doctest runs every document; with -update it
// rewrites the outputs (and exit comments) of the examples that differ,
// keeping the lines an elision leaves out elided.
package doctest
