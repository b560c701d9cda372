package main

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/rules"
)

// TestMetricsExposition checks the hand-written text format with
// Prometheus's own parser: every metric with its type, the values and
// the labels, a label value that needs escaping included.
func TestMetricsExposition(t *testing.T) {
	m := &liveMetrics{requests: map[string]float64{}, findings: map[[2]string]float64{}, seen: map[kafka.UUID]bool{}}
	m.progress(pipeline.Progress{Packets: 12, Bytes: 3400, KernelDrops: 1, Open: 2, Connections: 5})
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
	m.finding(&rules.Finding{Rule: "header-id-changed", Severity: rules.Error})
	m.finding(&rules.Finding{Rule: `odd "rule"\` + "\n", Severity: rules.Warning})

	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(m.exposition()))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, m.exposition())
	}
	if len(families) != len(metricHelp) {
		t.Errorf("%d metric families, want %d", len(families), len(metricHelp))
	}
	for _, h := range metricHelp {
		fam := families[h.name]
		if fam == nil || fam.GetHelp() != h.help || fam.GetType().String() != map[string]string{"gauge": "GAUGE", "counter": "COUNTER"}[h.kind] {
			t.Errorf("%s: %v", h.name, fam)
		}
	}
	value := func(name string, labels ...string) float64 {
		for _, s := range families[name].GetMetric() {
			match := true
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range s.GetLabel() {
					found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				match = match && found
			}
			if match {
				if s.Counter != nil {
					return s.GetCounter().GetValue()
				}
				return s.GetGauge().GetValue()
			}
		}
		return -1
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kidscope_packets_total", nil, 12},
		{"kidscope_bytes_total", nil, 3400},
		{"kidscope_kernel_drops_total", nil, 1},
		{"kidscope_connections_open", nil, 2},
		{"kidscope_connections_total", nil, 5},
		{"kidscope_kafka_requests_total", []string{"api", decode.APIName(0)}, 2},
		{"kidscope_kafka_requests_total", []string{"api", decode.APIName(3)}, 1},
		{"kidscope_findings_total", []string{"rule", "header-id-changed", "severity", rules.Error.String()}, 1},
		{"kidscope_findings_total", []string{"rule", `odd "rule"\` + "\n", "severity", rules.Warning.String()}, 1},
		{"kidscope_client_instances", nil, 2},
	} {
		if got := value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
