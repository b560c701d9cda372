package doctest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall: make install puts the binary, a man page per command
// (docs/man) and the bash, zsh and fish completions where the README says
// a Unix tool's go, under PREFIX and DESTDIR; make uninstall takes them
// away. It installs the binary built for the examples (install-built, the
// second half of install), so that the test does not build it again.
func TestMakeInstall(t *testing.T) {
	root := root(t)
	stage := t.TempDir()
	runMake := func(args ...string) {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-C", root, "--no-print-directory", "DESTDIR=" + stage, "PREFIX=/usr", "KIDSCOPE=" + filepath.Join(bin, "kidscope")}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
	}
	runMake("install-built")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "man", "*.1"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/man: %d pages, %v", len(pages), err)
	}
	want := map[string]string{
		"usr/bin/kidscope": "",
		"usr/share/bash-completion/completions/kidscope":    "# bash completion V2 for kidscope",
		"usr/share/zsh/site-functions/_kidscope":            "#compdef kidscope",
		"usr/share/fish/vendor_completions.d/kidscope.fish": "# fish completion for kidscope",
	}
	for _, p := range pages {
		want["usr/share/man/man1/"+filepath.Base(p)] = ""
	}
	var got []string
	err = filepath.Walk(stage, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(stage, path)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("installed %v, want %d files", got, len(want))
	}
	for file, start := range want {
		data, err := os.ReadFile(filepath.Join(stage, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if !strings.HasPrefix(string(data), start) {
			t.Errorf("%s starts %q, want %q", file, data[:min(len(data), 40)], start)
		}
		if strings.HasPrefix(file, "usr/share/man/") {
			committed, _ := os.ReadFile(filepath.Join(root, "docs", "man", filepath.Base(file)))
			if !bytes.Equal(data, committed) {
				t.Errorf("%s is not docs/man's page", file)
			}
		}
	}
	if fi, err := os.Stat(filepath.Join(stage, "usr/bin/kidscope")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("usr/bin/kidscope: %v, %v", fi, err)
	}
	runMake("uninstall")
	err = filepath.Walk(stage, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			t.Errorf("make uninstall left %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
