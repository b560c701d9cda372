package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestManPagesCurrent: docs/man holds the page of every command, as the
// command tree makes it now, and nothing else; -update rewrites them.
func TestManPagesCurrent(t *testing.T) {
	root, _ := newRoot()
	pages, err := manPages(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range root.Commands() {
		name := "kidscope-" + c.Name() + ".1"
		if _, ok := pages[name]; ok == (c.Hidden || c.Name() == "help") {
			t.Errorf("%s: a page is written: %v; the command is hidden: %v", name, ok, c.Hidden)
		}
	}
	for name, page := range pages {
		if !bytes.Contains(page, []byte(`" "1" "" "kidscope" "kidscope manual"`)) {
			t.Errorf("%s: the title line is not dateless: %s", name, bytes.SplitN(page, []byte("\n"), 3)[1])
		}
	}
	dir := filepath.Join("..", "..", "docs", "man")
	committed, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for _, f := range committed {
			if _, ok := pages[filepath.Base(f)]; !ok {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, page := range pages {
			if err := os.WriteFile(filepath.Join(dir, name), page, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, f := range committed {
		if _, ok := pages[filepath.Base(f)]; !ok {
			t.Errorf("%s is the page of no command (go test ./cmd/kidscope -run TestManPages -update removes it)", f)
		}
	}
	for name, page := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, page) {
			t.Errorf("docs/man/%s is not the page the commands make now (go test ./cmd/kidscope -run TestManPages -update rewrites it): %v", name, err)
		}
	}
}

// TestManCommand: the hidden `kidscope man DIR` writes those pages, and
// help does not list it.
func TestManCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	if _, stderr, code := runKidscope(t, "man", dir); code != 0 {
		t.Fatalf("kidscope man: exit %d: %s", code, stderr)
	}
	root, _ := newRoot()
	pages, err := manPages(root)
	if err != nil {
		t.Fatal(err)
	}
	written, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range written {
		names = append(names, filepath.Base(f))
		if got, _ := os.ReadFile(f); !bytes.Equal(got, pages[filepath.Base(f)]) {
			t.Errorf("kidscope man wrote %s unlike manPages", filepath.Base(f))
		}
	}
	if len(names) != len(pages) || !slices.Contains(names, "kidscope-analyze.1") {
		t.Errorf("kidscope man wrote %v; want the %d pages", names, len(pages))
	}
	help, _, _ := runKidscope(t, "--help")
	if strings.Contains(help, "\n  man ") {
		t.Errorf("help lists the hidden man command:\n%s", help)
	}
}
