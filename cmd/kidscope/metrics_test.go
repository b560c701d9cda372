package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/rules"
)

// TestMetricsScrape starts the metrics server on a port the kernel picks,
// feeds it what live would, and scrapes it as Prometheus does: every
// kidscope metric with its type, value and labels (a label value that
// needs escaping included), the Go and process collectors present, and
// promlint with nothing to say.
func TestMetricsScrape(t *testing.T) {
	m, err := startMetrics("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	m.progress(pipeline.Progress{Packets: 12, Bytes: 3400, KernelDrops: 1, Open: 2, Connections: 5, Requests: 3})
	var e decode.Event
	e.Kind = decode.EventRequest
	e.Msg.Request.APIKey = 0
	e.Msg.Request.HasInstanceID = true
	e.Msg.Request.InstanceID = kafka.UUID{1}
	m.event(nil, &e)
	m.event(nil, &e)
	e.Msg.Request.APIKey = 3
	e.Msg.Request.InstanceID = kafka.UUID{2}
	m.event(nil, &e)
	e.Msg.Request.APIKey = 32000 // no such API
	e.Msg.Request.HasInstanceID = false
	m.event(nil, &e)
	e.Kind = decode.EventResponse // not counted
	m.event(nil, &e)
	m.finding(&rules.Finding{Rule: "header-id-changed", Severity: rules.Error})
	m.finding(&rules.Finding{Rule: `odd "rule"\` + "\n", Severity: rules.Warning})

	resp, err := http.Get("http://" + m.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %v %s\n%s", err, resp.Status, body)
	}

	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, body)
	}
	counter, gauge := dto.MetricType_COUNTER, dto.MetricType_GAUGE
	for _, c := range []struct {
		name   string
		typ    dto.MetricType
		labels []string
		want   float64
	}{
		{"kidscope_packets_total", counter, nil, 12},
		{"kidscope_bytes_total", counter, nil, 3400},
		{"kidscope_kernel_drops_total", counter, nil, 1},
		{"kidscope_connections_total", counter, nil, 5},
		{"kidscope_connections_open", gauge, nil, 2},
		{"kidscope_kafka_requests_total", counter, []string{"api", decode.APIName(0)}, 2},
		{"kidscope_kafka_requests_total", counter, []string{"api", decode.APIName(3)}, 1},
		{"kidscope_kafka_requests_total", counter, []string{"api", "unknown"}, 1},
		{"kidscope_findings_total", counter, []string{"rule", "header-id-changed", "severity", rules.Error.String()}, 1},
		{"kidscope_findings_total", counter, []string{"rule", `odd "rule"\` + "\n", "severity", rules.Warning.String()}, 1},
		{"kidscope_client_instances", gauge, nil, 2},
	} {
		fam := families[c.name]
		if fam == nil {
			t.Errorf("%s missing", c.name)
			continue
		}
		if fam.GetType() != c.typ || fam.GetHelp() == "" {
			t.Errorf("%s: type %v, help %q; want %v", c.name, fam.GetType(), fam.GetHelp(), c.typ)
		}
		if got := sampleValue(fam, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(families["kidscope_kafka_requests_total"].GetMetric()); n != 3 {
		t.Errorf("%d kidscope_kafka_requests_total series, want 3", n)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if families[name] == nil {
			t.Errorf("%s missing: the Go and process collectors should be registered", name)
		}
	}

	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// sampleValue is the value of fam's series with the given label pairs,
// -1 if there is none.
func sampleValue(fam *dto.MetricFamily, labels ...string) float64 {
next:
	for _, s := range fam.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range s.GetLabel() {
				found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}
			if !found {
				continue next
			}
		}
		if s.Counter != nil {
			return s.GetCounter().GetValue()
		}
		return s.GetGauge().GetValue()
	}
	return -1
}

// TestMetricsBadAddr: an address that cannot be bound is an error naming
// the flag, not a panic or a silent no-metrics run.
func TestMetricsBadAddr(t *testing.T) {
	_, err := startMetrics("256.0.0.1:0", false)
	if err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("err = %v", err)
	}
}
