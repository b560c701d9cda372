// Package archtest holds no code: its tests check the layout of the
// project's packages against the stages docs/contributing.md's "How the
// code is laid out" describes (which package may import which, and that
// decode and rules stay pure), so that a seam cannot come back unnoticed;
// and that every citation of the design contract points into docs/design/,
// at a file and a section that exist, never at a document outside the
// repository.
package archtest
