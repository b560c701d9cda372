package main

import (
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kidscope/kidscope/internal/doctest"
)

// TestScript runs the testscripts of testdata/script: the command lines
// whose exit code and output say all (usage errors, exit codes, the
// formats, the rule texts), with the built binary on PATH and the
// repository's samples/ and testdata/ in the working directory. exits N
// checks an exit code (doctest.Cmds); -update rewrites the expected
// outputs that a cmp compares within a script.
func TestScript(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           filepath.Join("testdata", "script"),
		Setup:         doctest.Setup(root, filepath.Dir(binary)),
		Cmds:          doctest.Cmds(nil),
		UpdateScripts: *update,
	})
}
