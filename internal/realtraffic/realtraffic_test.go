package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// committedDir is where the committed captures live, from this package's
// directory.
var committedDir = filepath.Join("..", "..", "testdata", "real")

// checkCaptures checks that every scenario's file in dir reads cleanly, holds
// only TCP to or from the broker ports, and has requests of the API keys the
// scenario is there to show.
func checkCaptures(t *testing.T, dir string) {
	t.Helper()
	for _, sc := range scenarios {
		path := filepath.Join(dir, sc.name+".pcap")
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", sc.name, err)
			continue
		}
		if fi.Size() >= 1<<20 {
			t.Errorf("%s: %d bytes, want under 1 MiB", path, fi.Size())
		}
		st, err := readRequests(path, brokerPortSet())
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if st.Frames == 0 || st.BrokerTCP != st.Frames {
			t.Errorf("%s: %d frames, %d of them TCP to or from ports %v; want all of them, and some", path, st.Frames, st.BrokerTCP, brokerPorts)
		}
		for _, k := range sc.want {
			if st.Requests[k] == 0 {
				t.Errorf("%s: no %d %s requests; have %v", path, k, kmsg.NameForKey(k), st.Requests)
			}
		}
		t.Logf("%s: %d frames, %d connections, requests by key %v", path, st.Frames, st.Connections, st.Requests)
	}
}

func TestCommittedCaptures(t *testing.T) {
	checkCaptures(t, committedDir)
	if t.Failed() {
		t.Log("remake them with: go run ./internal/realtraffic -o testdata/real (as root)")
	}
}

// TestCaptureEndToEnd runs the whole program: cluster, live capture of lo,
// every scenario. It needs root for AF_PACKET and the ports 39092-39094 free.
func TestCaptureEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to capture on lo with AF_PACKET")
	}
	if testing.Short() {
		t.Skip("runs a cluster and a live capture; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dir := t.TempDir()
	var log bytes.Buffer
	if err := run(ctx, "lo", dir, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Log("\n" + log.String())
	checkCaptures(t, dir)
}
