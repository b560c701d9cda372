package main

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"
)

// TestCaptureEndToEnd runs the whole program: cluster on ports the kernel
// picks, live capture of lo, every scenario; then the checks of
// TestRealCaptures on the fresh files, against the committed expectations.
// It needs root for AF_PACKET.
func TestCaptureEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to capture on lo with AF_PACKET")
	}
	if testing.Short() {
		t.Skip("runs a cluster and a live capture; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	dir := t.TempDir()
	var log bytes.Buffer
	if err := run(ctx, "lo", dir, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Log("\n" + log.String())
	checkDir(t, dir, false)
}
