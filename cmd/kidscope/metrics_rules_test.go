package main

import (
	"bytes"
	be "encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/promrules"
)

// scrapeFamilies reads a metrics page; nil while it cannot be read.
func scrapeFamilies(url string) map[string]*dto.MetricFamily {
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	return fams
}

// scrapeUntil scrapes url until it has a series of every name in want.
func scrapeUntil(t *testing.T, url string, stderr fmt.Stringer, want ...string) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fams := scrapeFamilies(url)
		missing := ""
		for _, n := range want {
			if len(fams[n].GetMetric()) == 0 {
				missing = n
			}
		}
		if fams != nil && missing == "" {
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s after 30 s; stderr %s", url, missing, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMetricsRulesNameServedMetrics: every metric kidscope metrics-rules
// names is served, with a series, by a running live (on loopback, a crafted
// client breaking a rule against a broker that lets it through, publishing
// to kfake) or by the fleet reading what it published, so that a renamed
// metric fails here rather than silencing an alert. The brokers' verdicts
// come from live, which sees their answers.
func TestMetricsRulesNameServedMetrics(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	monitor, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close()
	publishTo := monitor.ListenAddrs()[0]
	fport := fakeBroker(t)
	live, stdout, liveErr, liveURL := startLive(t, "-i", "lo", "-p", strconv.Itoa(fport), "-o", "ndjson", "--duration", "60s",
		"--publish", publishTo, "--agent", "rules-test")
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	telemetryViolation(t, fport)
	liveFams := scrapeUntil(t, liveURL, liveErr, "kidscope_broker_kip1313_verdict", "kidscope_kafka_requests_total")

	mport := freePort(t)
	fleetErr := &lockedBuffer{}
	fleet := exec.Command(binary, "fleet", "--brokers", publishTo, "--from-beginning", "-o", "ndjson",
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", mport))
	fleet.Stdout, fleet.Stderr = io.Discard, fleetErr
	if err := fleet.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fleet.Process.Kill(); _ = fleet.Wait() }()
	fleetFams := scrapeUntil(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", mport), fleetErr,
		"kidscope_fleet_agent_last_seen_timestamp_seconds", "kidscope_fleet_agent_stopped")

	names := promrules.MetricNames()
	for _, n := range names {
		if len(liveFams[n].GetMetric()) == 0 && len(fleetFams[n].GetMetric()) == 0 {
			t.Errorf("the rules name %s, which neither live nor fleet serves", n)
		}
	}
	t.Logf("%d metrics the rules name, all served: %v", len(names), names)

	// docs/metrics.md lists the metrics: none it names may be gone.
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range regexp.MustCompile(`\bkidscope_[a-z0-9_]+\b`).FindAllString(string(doc), -1) {
		if liveFams[n] == nil && fleetFams[n] == nil {
			t.Errorf("docs/metrics.md names %s, which neither live nor fleet serves", n)
		}
	}
}

// telemetryViolation sends, over a real socket, a seed-profile client
// whose GetTelemetrySubscriptions changes its header instance ID
// (header-id-changed); fakeBroker answers it with NONE, so the broker's
// verdict is known (ignores) once the answer is read.
func telemetryViolation(t *testing.T, port int) {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := kafka.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	b := kafka.UUID{9, 9, 9, 9, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for i, r := range []struct {
		id   kafka.UUID
		body kmsg.Request
	}{
		{a, &kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "crafted", ClientSoftwareVersion: "1"}},
		{a, &kmsg.MetadataRequest{Version: 12}},
		{b, &kmsg.GetTelemetrySubscriptionsRequest{Version: 0, ClientInstanceID: b}},
	} {
		api, _ := decode.LookupAPI(r.body.Key())
		ver := r.body.GetVersion()
		h := decode.RequestHeader{APIKey: r.body.Key(), APIVersion: ver, CorrelationID: int32(i),
			HeaderVersion: api.RequestHeaderVersion(ver), ClientID: "crafted", InstanceID: r.id, HasInstanceID: true}
		if _, err := c.Write(decode.AppendRequest(nil, h, r.body.AppendTo(nil))); err != nil {
			t.Fatal(err)
		}
		var size int32
		if err := be.Read(c, be.BigEndian, &size); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, c, int64(size)); err != nil {
			t.Fatal(err)
		}
	}
}
