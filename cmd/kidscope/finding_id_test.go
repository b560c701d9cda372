package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// idFinding is a finding of a JSON report or NDJSON line with its id.
type idFinding struct {
	fleetFinding
	ID string `json:"id"`
}

var findingIDText = regexp.MustCompile(`^[0-9a-f]{32}$`)

// findingIDs are the findings of a JSON report (ndjson false) or of the
// finding lines of an NDJSON stream, in order, as "key id".
func findingIDs(t *testing.T, out string, ndjson bool) []string {
	t.Helper()
	var fs []idFinding
	if ndjson {
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, `{"kind":"finding"`) {
				continue
			}
			var f idFinding
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatalf("finding line %q: %v", line, err)
			}
			fs = append(fs, f)
		}
	} else {
		var doc struct {
			Findings []idFinding `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("JSON report: %v\n%.2000s", err, out)
		}
		fs = doc.Findings
	}
	var keys []string
	for _, f := range fs {
		if !findingIDText.MatchString(f.ID) {
			t.Errorf("%s: id %q", f, f.ID)
		}
		keys = append(keys, f.String()+" "+f.ID)
	}
	return keys
}

// idOf splits "key id".
func idOf(s string) (key, id string) {
	i := strings.LastIndexByte(s, ' ')
	return s[:i], s[i+1:]
}

// oneIDEach fails when two different findings share an ID.
func oneIDEach(t *testing.T, what string, keyed ...[]string) {
	t.Helper()
	byID := map[string]string{}
	for _, ks := range keyed {
		for _, s := range ks {
			k, id := idOf(s)
			if prev, ok := byID[id]; ok && prev != k {
				t.Errorf("%s: %s and %s have one id %s", what, prev, k, id)
			}
			byID[id] = k
		}
	}
}

// TestFindingIDsStable: analyze gives each finding one id whatever the
// format, --workers and --uuid: json with one worker, ndjson, csv and
// sarif with two and RFC 4122 UUIDs.
func TestFindingIDsStable(t *testing.T) {
	var files []string
	for _, name := range []string{"inst-shared", "tel-push-after-terminating", "grp-join-rejoin-wrong", "hdr-seed-changed",
		"hdr-acc-changed", "hdr-acc-reserved-zero", "grp-cgh-member-changed", "gts-row5-body-differs", "hdr-seed-dropped", "broker-mixed"} {
		files = append(files, filepath.Join("..", "..", "samples", "captures", name+".pcapng"))
	}
	run := func(args ...string) string {
		t.Helper()
		out, stderr, code := runKidscope(t, append(append([]string{"analyze", "--fail-on", "never", "--no-progress", "--no-hash"}, args...), files...)...)
		if code != 0 {
			t.Fatalf("analyze %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		return out
	}
	want := findingIDs(t, run("-o", "json", "--workers", "1"), false)
	if len(want) < 8 {
		t.Fatalf("%d findings", len(want))
	}
	oneIDEach(t, "json", want)
	ids := func(keyed []string) []string {
		var out []string
		for _, s := range keyed {
			_, id := idOf(s)
			out = append(out, id)
		}
		return out
	}
	if got := findingIDs(t, run("-o", "ndjson", "--workers", "2", "--uuid", "rfc4122"), true); !slices.Equal(got, want) {
		t.Errorf("ndjson --workers 2 --uuid rfc4122:\n  %s\njson --workers 1:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	recs, err := csv.NewReader(strings.NewReader(run("-o", "csv", "--workers", "2", "--uuid", "rfc4122"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if recs[0][len(recs[0])-1] != "id" {
		t.Fatalf("csv header %v: want id last", recs[0])
	}
	var got []string
	for _, r := range recs[1:] {
		got = append(got, r[len(r)-1])
	}
	if !slices.Equal(got, ids(want)) {
		t.Errorf("csv ids %v, want %v", got, ids(want))
	}

	var log struct {
		Runs []struct {
			Results []struct {
				Properties struct {
					ID string `json:"id"`
				} `json:"properties"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(run("-o", "sarif", "--workers", "2", "--uuid", "rfc4122")), &log); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, r := range log.Runs[0].Results {
		got = append(got, r.Properties.ID)
	}
	if !slices.Equal(got, ids(want)) {
		t.Errorf("sarif ids %v, want %v", got, ids(want))
	}
}

// TestFleetRepeatHasItsID is the fleet's at-least-once window: a member
// streamed its findings and stopped, and the offsets its group holds are
// older than what it streamed (as when a member is killed between writing
// and committing). The member that takes over reads those records as new
// and streams their findings again: each with the id it had the first
// time, so that a consumer drops the repeat. The ids are those of the
// one-shot report and those the agents (analyze --publish) gave their own
// findings, the fleet's findings of the rules across connections
// included; no two findings share one.
func TestFleetRepeatHasItsID(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	addrs := cluster.ListenAddrs()
	brokers := strings.Join(addrs, ",")

	// One agent per capture: the fleet's findings are the agents' (they
	// share no client instance).
	var agents []string
	for i, name := range []string{"tel-push-after-terminating", "inst-shared", "tel-assigned-not-reused", "inst-split", "grp-join-rejoin-wrong"} {
		file := filepath.Join("..", "..", "samples", "captures", name+".pcapng")
		out, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--no-progress", "--no-hash",
			"--publish", brokers, "--agent", fmt.Sprintf("agent-%d", i), file)
		if code != 0 || strings.Contains(stderr, "dropped") {
			t.Fatalf("agent %s: exit %d: %s", name, code, stderr)
		}
		agents = append(agents, findingIDs(t, out, false)...)
	}
	slices.Sort(agents)

	member := func() (*exec.Cmd, *lockedBuffer) {
		cmd := exec.Command(binary, "fleet", "--brokers", brokers, "--group", "g", "--from-beginning", "--window", "10m", "--flush-after", "1s",
			"-o", "ndjson", "--fail-on", "never")
		out, errb := &lockedBuffer{}, &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, out
	}
	stop := func(cmd *exec.Cmd) {
		_ = cmd.Process.Signal(syscall.SIGINT) // it leaves the group
		_ = cmd.Wait()
	}
	first, out1 := member()
	committed(t, addrs, "g")
	stop(first)

	// The group's offsets go back to the middle of each partition.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "kidscope")
	if err != nil {
		t.Fatal(err)
	}
	back := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		back.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset / 2, LeaderEpoch: -1})
	})
	if err := adm.CommitAllOffsets(ctx, "g", back); err != nil {
		t.Fatalf("commit the group's offsets back: %v", err)
	}
	cl.Close()

	second, out2 := member()
	committed(t, addrs, "g")
	stop(second)

	whole, stderr, code := runKidscope(t, "fleet", "--brokers", brokers, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never")
	if code != 0 {
		t.Fatalf("fleet --until-end: exit %d: %s", code, stderr)
	}
	report := findingIDs(t, whole, false)
	slices.Sort(report)
	a, b := findingIDs(t, out1.String(), true), findingIDs(t, out2.String(), true)
	if len(b) == 0 {
		t.Fatalf("the second member streamed nothing again (the first streamed %d)", len(a))
	}
	firstID := map[string]string{}
	for _, s := range a {
		k, id := idOf(s)
		firstID[k] = id
	}
	for _, s := range b {
		k, id := idOf(s)
		want, ok := firstID[k]
		switch {
		case !ok:
			t.Errorf("the second member streamed %s, which the first did not", k)
		case id != want:
			t.Errorf("%s: streamed again with id %s, first with %s", k, id, want)
		}
	}
	oneIDEach(t, "the members' streams", a, b)
	slices.Sort(a)
	if !slices.Equal(a, report) {
		t.Errorf("the first member streamed\n  %s\nthe one-shot report has\n  %s", strings.Join(a, "\n  "), strings.Join(report, "\n  "))
	}
	if !slices.Equal(report, agents) {
		t.Errorf("the fleet's report has\n  %s\nthe agents reported\n  %s", strings.Join(report, "\n  "), strings.Join(agents, "\n  "))
	}
	t.Logf("%d findings, %d streamed again", len(a), len(b))
}
