package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fleetFinding is a finding of a JSON report as analyze and fleet can both
// name it: fleet names files agent:file, the frames are the same.
type fleetFinding struct {
	Rule  string `json:"rule"`
	Frame int64  `json:"frame"`
	Time  string `json:"time"`
	Conn  struct {
		Client string `json:"client"`
		Broker string `json:"broker"`
	} `json:"connection"`
}

func (f fleetFinding) String() string {
	return fmt.Sprintf("%s frame %d %s %s→%s", f.Rule, f.Frame, f.Time, f.Conn.Client, f.Conn.Broker)
}

func reportFindings(t *testing.T, out string) []string {
	t.Helper()
	var doc struct {
		Findings []fleetFinding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("JSON report: %v\n%.2000s", err, out)
	}
	var keys []string
	for _, f := range doc.Findings {
		keys = append(keys, f.String())
	}
	slices.Sort(keys)
	return keys
}

// TestFleetAcrossAgents: each connection of a capture is published by an
// agent of its own (analyze --publish --filter on its client port), to a
// three-broker kfake cluster; kidscope fleet --from-beginning --until-end
// over the topic finds what analyze finds of the whole capture, the rules
// across connections included, though no agent saw two connections.
// Records that are not kidscope's, or of a later schema, are skipped,
// counted and said once.
func TestFleetAcrossAgents(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")

	// Garbage and a record of a later schema, before the agents' records.
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic("kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, v := range []string{"\x00\xffgarbage", `{"schema":99,"type":"observation","agent":"a","run":"r"}`} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	captures := []string{"tel-push-after-terminating", "inst-shared", "inst-split", "tel-assigned-not-reused",
		"tel-broker-reissues-id", "grp-join-rejoin-wrong", "tel-push-unknown-id"}
	var want []string
	agents := 0
	for _, name := range captures {
		file := filepath.Join("..", "..", "samples", "captures", name+".pcapng")
		out, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--no-progress", file)
		if code != 0 {
			t.Fatalf("analyze %s: exit %d: %s", name, code, stderr)
		}
		want = append(want, reportFindings(t, out)...)
		var doc struct {
			Connections []struct {
				Client string `json:"client"`
			} `json:"connections"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		agents += len(doc.Connections)
		for i, c := range doc.Connections {
			port := c.Client[strings.LastIndex(c.Client, ":")+1:]
			_, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--no-progress", "--filter", "tcp port "+port,
				"--publish", brokers, "--agent", fmt.Sprintf("%s-%d", name, i), file)
			if code != 0 || !strings.Contains(stderr, "delivered") || strings.Contains(stderr, "dropped") {
				t.Fatalf("agent %d of %s: exit %d: %s", i, name, code, stderr)
			}
		}
	}
	slices.Sort(want)
	if agents < 2*len(captures) {
		t.Fatalf("%d agents for %d captures: too few connections cross agents", agents, len(captures))
	}

	out, stderr, code := runKidscope(t, "fleet", "--brokers", brokers, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never")
	if code != 0 {
		t.Fatalf("fleet: exit %d: %s", code, stderr)
	}
	got := reportFindings(t, out)
	if !slices.Equal(got, want) {
		t.Errorf("fleet found\n  %s\nanalyze found\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	cross := 0
	for _, f := range got {
		for _, r := range []string{"telemetry-push-after-terminating", "instance-id-shared", "instance-id-split", "telemetry-id-not-reused", "broker-id-reissued", "join-member-id-not-used"} {
			if strings.HasPrefix(f, r+" ") {
				cross++
			}
		}
	}
	if cross < 6 {
		t.Errorf("%d findings of rules across connections, want one of each at least", cross)
	}
	if n := strings.Count(stderr, "skipped a record"); n != 2 {
		t.Errorf("%d lines about skipped records, want one for garbage and one for the later schema: %s", n, stderr)
	}
}
