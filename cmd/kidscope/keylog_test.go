package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyLogFollower: what was in the file at the start is not read
// again, a line still being written waits for its end, and more than a
// read buffer's worth of lines comes whole in one call.
func TestKeyLogFollower(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.log")
	if err := os.WriteFile(path, []byte("CLIENT_RANDOM a b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := newKeyLogFollower([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write("CLIENT_RANDOM c")
	if got := string(k.more()); got != "" {
		t.Errorf("a line being written: got %q", got)
	}
	many := strings.Repeat("CLIENT_RANDOM e f\n", 10000) // over 64 KiB
	write(" d\n" + many)
	if got, want := string(k.more()), "CLIENT_RANDOM c d\n"+many; got != want {
		t.Errorf("got %d bytes, want %d", len(got), len(want))
	}
	if got := string(k.more()); got != "" {
		t.Errorf("nothing new: got %q", got)
	}
	if _, err := newKeyLogFollower([]string{path + ".missing"}); err == nil {
		t.Error("a missing key log is not refused")
	}
}
