package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kidscope/kidscope/internal/stoppable"
)

// publishCounts are live's publishing metrics at one scrape.
type publishCounts struct{ published, delivered, dropped int64 }

func (c publishCounts) String() string {
	return fmt.Sprintf("%d published, %d delivered, %d dropped", c.published, c.delivered, c.dropped)
}

// scrapePublish reads the three counters from one scrape, so that they
// are of one moment.
func scrapePublish(t *testing.T, url string, stderr *lockedBuffer) publishCounts {
	t.Helper()
	m := metricValues(t, url, stderr)
	for _, name := range []string{"kidscope_publish_records_total", "kidscope_publish_delivered_total", "kidscope_publish_dropped_total"} {
		if _, ok := m[name]; !ok {
			t.Fatalf("%s: no %s", url, name)
		}
	}
	return publishCounts{int64(m["kidscope_publish_records_total"]), int64(m["kidscope_publish_delivered_total"]),
		int64(m["kidscope_publish_dropped_total"])}
}

// waitCounts polls live's metrics until ok holds, failing after a
// generous while: the deadline guards against a hang, it measures nothing.
func waitCounts(t *testing.T, what, url string, stderr *lockedBuffer, ok func(publishCounts) bool) publishCounts {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c := scrapePublish(t, url, stderr)
		if ok(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never; the metrics say %v; live's stderr %s", what, c, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ndjsonFindings reads live's ndjson stream, keeping the finding lines'
// rule and client by client address.
type ndjsonFindings struct {
	mu     sync.Mutex
	byConn map[string][]string
	bad    []string
}

func (n *ndjsonFindings) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var f streamFinding
		err := json.Unmarshal(sc.Bytes(), &f)
		n.mu.Lock()
		switch {
		case err != nil:
			n.bad = append(n.bad, sc.Text())
		case f.Kind == "finding":
			n.byConn[f.Connection.Client] = append(n.byConn[f.Connection.Client], f.Rule)
		}
		n.mu.Unlock()
	}
}

func (n *ndjsonFindings) has(client, rule string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range n.byConn[client] {
		if r == rule {
			return true
		}
	}
	return false
}

// waitFinding waits until live's stream has the header-id-changed finding
// of client.
func waitFinding(t *testing.T, found *ndjsonFindings, client string, stderr *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !found.has(client, "header-id-changed") {
		if time.Now().After(deadline) {
			found.mu.Lock()
			defer found.mu.Unlock()
			t.Fatalf("live never reported header-id-changed of %s; its findings %v, stderr %s", client, found.byConn, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLivePublishBrokerRestart: the Kafka a live agent publishes to stops
// mid-run and comes back. While it is away live captures and reports as
// ever, its producer's buffer fills and it drops and counts what does not
// fit; when Kafka returns the agent delivers again, so that kidscope fleet
// reads the findings made before the stop and after the restart, and the
// agent's drop count.
func TestLivePublishBrokerRestart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	var rl *stoppable.Listener
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "kidscope"),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			if rl != nil {
				return nil, errors.New("a second broker: the test has one listener")
			}
			var err error
			rl, err = stoppable.Listen(network, address)
			return rl, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	fport := fakeBroker(t)
	cmd, stdout, stderr, metrics := startLive(t, "-i", "lo", "-p", strconv.Itoa(fport), "-o", "ndjson", "--duration", "120s",
		"--publish", brokers, "--publish-buffer", "20", "--agent", "host-r")
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	found := &ndjsonFindings{byConn: map[string][]string{}}
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		found.read(stdout)
	}()

	// Phase 1: Kafka up; all that live publishes is delivered.
	var before []string
	for range 2 {
		client := violatingClient(t, fport)
		before = append(before, client)
		waitFinding(t, found, client, stderr)
	}
	up := waitCounts(t, "phase 1: everything published delivered", metrics, stderr, func(c publishCounts) bool {
		return c.published > 0 && c.delivered == c.published
	})
	if up.dropped != 0 {
		t.Fatalf("phase 1, Kafka up: %v", up)
	}

	// Phase 2: the broker stops. The capture goes on, reporting each
	// finding as it comes; the records past the buffer are dropped.
	rl.Stop()
	const away = 10
	for range away {
		client := violatingClient(t, fport)
		waitFinding(t, found, client, stderr)
	}
	down := scrapePublish(t, metrics, stderr)
	if n := down.published - up.published; n <= 20 {
		t.Fatalf("phase 2 published %d records, not past the buffer of 20: make more clients; %v", n, down)
	}
	down = waitCounts(t, "phase 2: records dropped while Kafka is away", metrics, stderr, func(c publishCounts) bool {
		return c.dropped > 0
	})
	t.Logf("Kafka away: %v (up: %v)", down, up)

	// Phase 3: the broker is back. The producer reconnects and takes
	// what it buffered (delivered or, past its timeout, dropped)
	// before the next clients come, so that their records fit.
	if err := rl.Start(); err != nil {
		t.Fatalf("restart the broker: %v", err)
	}
	back := waitCounts(t, "phase 3: the publisher recovers after the broker restarts", metrics, stderr, func(c publishCounts) bool {
		return c.delivered > down.delivered && c.delivered+c.dropped == c.published
	})
	var after []string
	for range 2 {
		client := violatingClient(t, fport)
		after = append(after, client)
		waitFinding(t, found, client, stderr)
	}
	sent := scrapePublish(t, metrics, stderr)
	end := waitCounts(t, "phase 3: the records after the restart delivered", metrics, stderr, func(c publishCounts) bool {
		return c.delivered+c.dropped == c.published && c.delivered >= back.delivered+(sent.published-back.published)
	})
	if end.dropped != back.dropped {
		t.Errorf("records dropped after the broker was back and the buffer empty: %v, then %v", back, end)
	}
	t.Logf("Kafka back: %v, then %v", back, end)

	_ = cmd.Process.Signal(syscall.SIGINT)
	<-streamDone
	werr := cmd.Wait()
	stopped = true
	// Exit 1: live found what the rules call warnings, as it should.
	var ee *exec.ExitError
	if werr != nil && (!errors.As(werr, &ee) || ee.ExitCode() != exitFindings) {
		t.Errorf("live: %v; stderr %s", werr, stderr.String())
	}
	found.mu.Lock()
	if len(found.bad) > 0 {
		t.Errorf("live's ndjson stream has lines that are not JSON: %q", found.bad)
	}
	found.mu.Unlock()
	var final string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "kidscope: published ") {
			final = l
		}
	}
	if !strings.Contains(final, " delivered") || !strings.Contains(final, " dropped") || strings.Contains(final, ", 0 dropped") {
		t.Errorf("live's last word on publishing: %q; stderr %s", final, stderr.String())
	}

	out, ferr, code := runKidscope(t, "fleet", "--brokers", brokers, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never")
	if code != 0 {
		t.Fatalf("fleet: exit %d: %s", code, ferr)
	}
	var doc struct {
		Findings []struct {
			Rule string `json:"rule"`
			Conn struct {
				Client string `json:"client"`
			} `json:"connection"`
		} `json:"findings"`
		Agents []struct {
			Name      string `json:"name"`
			Published int64  `json:"published"`
			Dropped   int64  `json:"dropped"`
			Stopped   bool   `json:"stopped"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("fleet's JSON report: %v\n%.3000s", err, out)
	}
	inFleet := map[string]bool{}
	for _, f := range doc.Findings {
		if f.Rule == "header-id-changed" {
			inFleet[f.Conn.Client] = true
		}
	}
	for _, client := range append(before, after...) {
		if !inFleet[client] {
			t.Errorf("the fleet has no header-id-changed of %s (phase 1: %v, phase 3: %v); it has %v", client, before, after, inFleet)
		}
	}
	agents := 0
	for _, a := range doc.Agents {
		if a.Name != "host-r" {
			continue
		}
		agents++
		if a.Dropped <= 0 || !a.Stopped {
			t.Errorf("the fleet's agent host-r: %+v, want dropped > 0 and stopped", a)
		}
	}
	if agents != 1 {
		t.Errorf("the fleet names host-r %d times: %.3000s", agents, out)
	}
}
