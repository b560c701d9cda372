package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
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
	want, agents := publishAgents(t, brokers, captures...)
	if agents < 2*len(captures) {
		t.Fatalf("%d agents for %d captures: too few connections cross agents", agents, len(captures))
	}

	out, stderr, code := runKidscope(t, "fleet", "--brokers", brokers, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never")
	if code != 0 {
		t.Fatalf("fleet: exit %d: %s", code, stderr)
	}
	doc, line := analysisSchemas(t)
	validOutput(t, doc, line, "fleet -o json", out, false)
	if !strings.Contains(out, `"agents"`) || !strings.Contains(out, `"unreadable": 1`) || !strings.Contains(out, `"future": 1`) {
		t.Errorf("the fleet's report has no agents, or does not count the skipped records: %.3000s", out)
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

// publishAgents publishes every connection of the captures from an agent
// of its own (analyze --filter on its client port --publish). It returns
// what analyze finds of the whole captures, and the number of agents.
func publishAgents(t *testing.T, brokers string, captures ...string) (want []string, agents int) {
	t.Helper()
	for _, name := range captures {
		file := filepath.Join("..", "..", "samples", "captures", name+".pcapng")
		out, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--no-progress", file)
		if code != 0 {
			t.Fatalf("analyze %s: exit %d: %s", name, code, stderr)
		}
		var doc struct {
			Connections []struct {
				Client string `json:"client"`
			} `json:"connections"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		want = append(want, reportFindings(t, out)...)
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
	return want, agents
}

// streamedFindings are the finding lines of a fleet's NDJSON stream.
func streamedFindings(t *testing.T, out string) []string {
	t.Helper()
	var keys []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, `{"kind":"finding"`) {
			continue
		}
		var f fleetFinding
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("finding line %q: %v", line, err)
		}
		keys = append(keys, f.String())
	}
	slices.Sort(keys)
	return keys
}

// committed waits until the group has committed every partition's end
// offset: the member has written what every record caused.
func committed(t *testing.T, brokers []string, group string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ends, err1 := adm.ListEndOffsets(ctx, "kidscope")
		offs, err2 := adm.FetchOffsets(ctx, group)
		cancel()
		done := err1 == nil && err2 == nil
		if done {
			ends.Each(func(o kadm.ListedOffset) {
				c, ok := offs.Lookup("kidscope", o.Partition)
				if o.Offset > 0 && (!ok || c.At < o.Offset) {
					done = false
				}
			})
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s did not commit the topic's end (%v, %v)", group, err1, err2)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFleetMemberReplaced: a fleet member streams findings and is killed
// (SIGKILL) once it has committed; agents publish more; a new member of
// the group rebuilds the state from the partitions' start and streams the
// findings of the new records only. Together the two streamed each
// finding of the one-shot report once: none lost, none twice. (Their
// window is longer than the captures, so that what they check is in
// capture time order across partitions whatever order the polls bring.)
func TestFleetMemberReplaced(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	addrs := cluster.ListenAddrs()
	brokers := strings.Join(addrs, ",")
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

	_, _ = publishAgents(t, brokers, "tel-push-after-terminating", "inst-shared", "tel-assigned-not-reused")
	first, out1 := member()
	committed(t, addrs, "g")
	_ = first.Process.Kill()
	_ = first.Wait()

	_, _ = publishAgents(t, brokers, "inst-split", "tel-broker-reissues-id", "grp-join-rejoin-wrong")
	second, out2 := member()
	committed(t, addrs, "g")
	_ = second.Process.Signal(syscall.SIGINT)
	_ = second.Wait()

	whole, stderr, code := runKidscope(t, "fleet", "--brokers", brokers, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never")
	if code != 0 {
		t.Fatalf("fleet --until-end: exit %d: %s", code, stderr)
	}
	want := reportFindings(t, whole)
	a, b := streamedFindings(t, out1.String()), streamedFindings(t, out2.String())
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("the first member streamed %d findings, the second %d", len(a), len(b))
	}
	got := slices.Sorted(slices.Values(append(slices.Clone(a), b...)))
	if !slices.Equal(got, want) {
		t.Errorf("the two members streamed\n  %s\nthe one-shot report has\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestAnalyzePublishWaits: analyze --publish reads a file, which can wait
// for Kafka: with a buffer of one record it delivers every record, where a
// capture (live) would drop what does not fit.
func TestAnalyzePublishWaits(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	file := filepath.Join("..", "..", "samples", "captures", "tel-push-after-terminating.pcapng")
	_, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--no-progress",
		"--publish", cluster.ListenAddrs()[0], "--publish-buffer", "1", file)
	var published, delivered int
	_, said, _ := strings.Cut(stderr, "kidscope: published ")
	if _, err := fmt.Sscanf(said, "%d records to topic kidscope: %d delivered", &published, &delivered); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, stderr)
	}
	if published < 10 || delivered != published || strings.Contains(stderr, "dropped") {
		t.Errorf("published %d, delivered %d: %s", published, delivered, stderr)
	}
}

// TestPublishSaysWhyDropped: analyze --publish that could deliver nothing
// says why in its last line, from what the producer saw: with Kafka away,
// the dial error; with the topic missing, the broker's error code.
func TestPublishSaysWhyDropped(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	away := ln.Addr().String()
	ln.Close()
	file := filepath.Join("..", "..", "samples", "captures", "inst-shared.pcapng")
	for _, tc := range []struct {
		what string
		args []string
		want string
	}{
		{"Kafka away", []string{"--publish", away}, "dial tcp " + away},
		{"no such topic", []string{"--publish", cluster.ListenAddrs()[0], "--publish-topic", "no-such-topic"}, "UNKNOWN_TOPIC_OR_PARTITION"},
	} {
		_, stderr, code := runKidscope(t, append([]string{"analyze", "-o", "json", "--fail-on", "never", "--no-progress", file}, tc.args...)...)
		_, said, _ := strings.Cut(stderr, "kidscope: published ")
		if code != 0 || !strings.Contains(said, " dropped (the last error: ") || !strings.Contains(said, tc.want) || strings.Count(said, "\n") != 1 {
			t.Errorf("%s: exit %d, want one line with the cause %q: %s", tc.what, code, tc.want, stderr)
		}
	}
}

// TestFleetHelpNamesItsFlags: every flag fleet --help mentions is one of
// fleet's, but where it names another command's (live --publish); and
// --require-kafka, which fleet shares with analyze, is explained as fleet
// uses it. live and analyze, whose --publish flags are the fleet's
// agents', are held to the same.
func TestFleetHelpNamesItsFlags(t *testing.T) {
	mention := regexp.MustCompile(`(?:\b(live|analyze|fleet|frames) )?(--[a-z0-9][a-z0-9-]*)`)
	listed := regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z0-9-]+)`)
	for _, command := range []string{"fleet", "live", "analyze"} {
		help, stderr, code := runKidscope(t, command, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d: %s", command, code, stderr)
		}
		own := map[string]bool{}
		for _, m := range listed.FindAllStringSubmatch(help, -1) {
			own[m[1]] = true
		}
		if len(own) < 10 {
			t.Fatalf("%s --help lists %d flags", command, len(own))
		}
		for _, m := range mention.FindAllStringSubmatch(help, -1) {
			if (m[1] == "" || m[1] == command) && !own[m[2]] {
				t.Errorf("%s --help mentions %s, which %s does not have", command, m[2], command)
			}
		}
		if command == "fleet" && !regexp.MustCompile(`--require-kafka\s+exit 2 when no record on the topic holds a Kafka message`).MatchString(help) {
			t.Errorf("fleet --help does not say what --require-kafka does in fleet:\n%s", help)
		}
	}
}

// TestFleetRequireKafka: fleet over a topic that holds no Kafka message
// says so, and with --require-kafka exits 2 (nothing was checked), as
// analyze does for a capture without Kafka.
func TestFleetRequireKafka(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]
	for _, tc := range []struct {
		args []string
		code int
	}{{nil, 0}, {[]string{"--require-kafka"}, 2}} {
		_, stderr, code := runKidscope(t, append([]string{"fleet", "--brokers", brokers, "--from-beginning", "--until-end", "-o", "json"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, "no record on topic kidscope holds a Kafka message") {
			t.Errorf("fleet %v over an empty topic: exit %d, want %d: %s", tc.args, code, tc.code, stderr)
		}
	}
	// An agent that published Kafka: checked.
	file := filepath.Join("..", "..", "samples", "captures", "inst-shared.pcapng")
	if _, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--no-progress", "--publish", brokers, file); code != 0 {
		t.Fatalf("agent: exit %d: %s", code, stderr)
	}
	_, stderr, code := runKidscope(t, "fleet", "--brokers", brokers, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never", "--require-kafka")
	if code != 0 || strings.Contains(stderr, "nothing was checked") {
		t.Errorf("fleet --require-kafka over an agent's records: exit %d: %s", code, stderr)
	}
}
