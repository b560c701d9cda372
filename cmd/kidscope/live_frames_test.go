package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLiveFrameNote: without --write, the first finding line with a frame
// is preceded once by a note that its frame numbers name no file; with
// --write there is no such note.
func TestLiveFrameNote(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	const note = "without --write they cannot be looked up"
	for _, write := range []bool{false, true} {
		fport := fakeBroker(t)
		args := []string{"-i", "lo", "-p", strconv.Itoa(fport), "-o", "json", "--duration", "60s"}
		if write {
			args = append(args, "--write", filepath.Join(t.TempDir(), "x.pcapng"))
		}
		cmd, stdout, stderr, _ := startLive(t, args...)
		violatingClient(t, fport)
		violatingClient(t, fport)
		waitFor(t, stderr, "header-id-changed", 2)
		_ = cmd.Process.Signal(syscall.SIGINT)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		got := strings.Count(stderr.String(), note)
		if want := map[bool]int{false: 1, true: 0}[write]; got != want {
			t.Errorf("--write %v: the note %d times, want %d; stderr %s", write, got, want, stderr.String())
		}
	}
}

// waitFor waits until text appears n times in live's stderr (the finding
// lines come as live makes them), failing after a generous while.
func waitFor(t *testing.T, stderr *lockedBuffer, text string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(stderr.String(), text) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d× %q on stderr: %s", n, text, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
