package main

import (
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestLivePublish: live --publish sends its findings and observations to
// Kafka (kfake) while it captures, and kidscope fleet reads them back:
// the fleet's report has the agent's findings. With Kafka away, live
// captures and finds as before, and counts what it could not publish.
func TestLivePublish(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	// An address nothing listens on: Kafka away.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	away := ln.Addr().String()
	ln.Close()

	for _, target := range []string{cluster.ListenAddrs()[0], away} {
		fport := fakeBroker(t)
		cmd, stdout, stderr, _ := startLive(t, "-i", "lo", "-p", strconv.Itoa(fport), "-o", "json", "--duration", "60s",
			"--publish", target, "--agent", "host-1")
		violatingClient(t, fport)
		violatingClient(t, fport)
		waitFor(t, stderr, "header-id-changed", 2) // the capture goes on whatever Kafka does
		_ = cmd.Process.Signal(syscall.SIGINT)
		var liveOut strings.Builder
		_, _ = io.Copy(&liveOut, stdout)
		_ = cmd.Wait()
		line := stderr.String()
		if target == away {
			if !strings.Contains(line, "published") || !strings.Contains(line, "dropped") || strings.Contains(line, ": 0 dropped") {
				t.Errorf("Kafka away: live says %s", line)
			}
			continue
		}
		if !strings.Contains(line, "delivered") || strings.Contains(line, "dropped") {
			t.Fatalf("live says %s", line)
		}
		out, ferr, code := runKidscope(t, "fleet", "--brokers", target, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never")
		if code != 0 {
			t.Fatalf("fleet: exit %d: %s", code, ferr)
		}
		if n := strings.Count(strings.Join(reportFindings(t, out), "\n"), "header-id-changed "); n != 2 {
			t.Errorf("the fleet has %d header-id-changed findings, want 2: %s", n, out)
		}
		// live's findings have the IDs the fleet gives them: of the agent
		// and its run.
		fromLive, fromFleet := findingIDs(t, liveOut.String(), false), findingIDs(t, out, false)
		slices.Sort(fromLive)
		slices.Sort(fromFleet)
		if !slices.Equal(fromLive, fromFleet) {
			t.Errorf("live's findings\n  %s\nthe fleet's\n  %s", strings.Join(fromLive, "\n  "), strings.Join(fromFleet, "\n  "))
		}
		if !strings.Contains(out, `"host-1"`) {
			t.Errorf("the fleet's report does not name the agent: %.3000s", out)
		}
		// The NDJSON form, every line valid.
		nd, ferr, code := runKidscope(t, "fleet", "--brokers", target, "--from-beginning", "--until-end", "-o", "ndjson", "--fail-on", "never")
		if code != 0 || !strings.Contains(nd, `{"kind":"agent","name":"host-1"`) || !strings.Contains(nd, `{"kind":"fleet"`) {
			t.Errorf("fleet -o ndjson: exit %d, no agent or fleet line: %s %.3000s", code, ferr, nd)
		}
		doc, lineSchema := analysisSchemas(t)
		validOutput(t, doc, lineSchema, "fleet -o ndjson", nd, true)
	}
}
