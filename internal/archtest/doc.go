// Package archtest holds no code: its tests check the layout of the
// project's packages against the stages docs/contributing.md's "How the
// code is laid out" describes (which package may import which, and that decode and rules
// stay pure), so that a seam cannot come back unnoticed.
package archtest
