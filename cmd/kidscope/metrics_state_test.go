package main

import (
	"bytes"
	"io"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// TestMetricsState: the brokers' verdicts and the fleet's agents as a
// scrape shows them, a verdict that changes replacing its series, and
// every rule's findings counter there from the start at 0.
func TestMetricsState(t *testing.T) {
	m, err := startMetrics("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	b9, b8 := netip.MustParseAddrPort("10.0.0.9:9092"), netip.MustParseAddrPort("10.0.0.8:9092")
	seen := time.Date(2026, 1, 2, 3, 4, 5, 500e6, time.UTC)
	m.progress(pipeline.Progress{Verdicts: []rules.BrokerVerdict{{Endpoint: b8, Verdict: rules.VerdictIgnores}, {Endpoint: b9, Verdict: rules.VerdictEnforces}}})
	m.state.setAgents([]result.Agent{{Name: "host-a", LastSeen: seen}, {Name: "host-b", LastSeen: seen, Stopped: true}})

	scrape := func() map[string]float64 {
		t.Helper()
		resp, err := http.Get("http://" + m.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		problems, err := promlint.New(bytes.NewReader(body)).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for name, fam := range fams {
			for _, s := range fam.GetMetric() {
				key := name
				for _, l := range s.GetLabel() {
					key += " " + l.GetName() + "=" + l.GetValue()
				}
				if s.Counter != nil {
					out[key] = s.GetCounter().GetValue()
				} else {
					out[key] = s.GetGauge().GetValue()
				}
			}
		}
		return out
	}
	got := scrape()
	for key, want := range map[string]float64{
		"kidscope_broker_kip1313_verdict broker=10.0.0.8:9092 verdict=ignores":  1,
		"kidscope_broker_kip1313_verdict broker=10.0.0.9:9092 verdict=enforces": 1,
		"kidscope_fleet_agent_last_seen_timestamp_seconds agent=host-a":         float64(seen.UnixNano()) / 1e9,
		"kidscope_fleet_agent_stopped agent=host-a":                             0,
		"kidscope_fleet_agent_stopped agent=host-b":                             1,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	for _, r := range rules.Catalog() {
		key := "kidscope_findings_total rule=" + r.ID + " severity=" + r.Severity.String()
		if v, ok := got[key]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0 before any finding", key, v, ok)
		}
	}

	m.progress(pipeline.Progress{Verdicts: []rules.BrokerVerdict{{Endpoint: b8, Verdict: rules.VerdictIgnores}, {Endpoint: b9, Verdict: rules.VerdictMixed}}})
	got = scrape()
	if _, ok := got["kidscope_broker_kip1313_verdict broker=10.0.0.9:9092 verdict=enforces"]; ok {
		t.Error("the old verdict's series is still there")
	}
	if got["kidscope_broker_kip1313_verdict broker=10.0.0.9:9092 verdict=mixed"] != 1 {
		t.Errorf("no series for the new verdict: %v", got)
	}
}
