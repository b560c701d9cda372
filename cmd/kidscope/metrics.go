package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/rules"
)

// liveMetrics serves what live sees as Prometheus metrics. Totals the
// pipeline keeps (packets, bytes, drops) are set from its progress ticks;
// counts by API and by rule are counted as the events come.
type liveMetrics struct {
	srv       *http.Server
	packets   prometheus.Gauge
	bytes     prometheus.Gauge
	drops     prometheus.Gauge
	open      prometheus.Gauge
	conns     prometheus.Gauge
	requests  *prometheus.CounterVec
	findings  *prometheus.CounterVec
	instances prometheus.Gauge
	seen      map[decode.UUID]bool
}

func startMetrics(addr string, debug bool) (*liveMetrics, error) {
	reg := prometheus.NewRegistry()
	m := &liveMetrics{
		packets: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kidscope_packets_total",
			Help: "Frames captured (that passed the capture filter)."}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kidscope_bytes_total",
			Help: "Bytes of the frames captured."}),
		drops: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kidscope_kernel_drops_total",
			Help: "Frames the kernel dropped because the capture ring was full."}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kidscope_connections_open",
			Help: "TCP connections to brokers open now."}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kidscope_connections_total",
			Help: "TCP connections to brokers seen."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kidscope_kafka_requests_total",
			Help: "Kafka requests decoded, by API."}, []string{"api"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kidscope_findings_total",
			Help: "Findings made, by rule and severity."}, []string{"rule", "severity"}),
		instances: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kidscope_client_instances",
			Help: "Distinct client instance IDs seen in request headers (at most 100000 are counted)."}),
		seen: map[decode.UUID]bool{},
	}
	reg.MustRegister(m.packets, m.bytes, m.drops, m.open, m.conns, m.requests, m.findings, m.instances)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if debug {
		// Go's profiler, for finding where time or memory goes in a
		// long-running capture (hidden flag --debug-pprof).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "kidscope: metrics:", err) // stdout may be the ndjson stream
		}
	}()
	return m, nil
}

// event counts a decoded request (called on the capture goroutine).
func (m *liveMetrics) event(_ *pipeline.Conn, e *decode.Event) {
	if e.Kind != decode.EventRequest {
		return
	}
	m.requests.WithLabelValues(decode.APIName(e.Msg.Request.APIKey)).Inc()
	// The set of IDs is capped, so that days of traffic cannot grow it: past
	// the cap the gauge stays at it.
	if h := &e.Msg.Request; h.HasInstanceID && !h.InstanceID.IsZero() && !m.seen[h.InstanceID] && len(m.seen) < maxSeenInstances {
		m.seen[h.InstanceID] = true
		m.instances.Set(float64(len(m.seen)))
	}
}

// maxSeenInstances caps the instance IDs the metrics remember.
const maxSeenInstances = 100000

func (m *liveMetrics) finding(f *rules.Finding) {
	m.findings.WithLabelValues(f.Rule, f.Severity.String()).Inc()
}

func (m *liveMetrics) progress(p pipeline.Progress) {
	m.packets.Set(float64(p.Packets))
	m.bytes.Set(float64(p.Bytes))
	m.drops.Set(float64(p.KernelDrops))
	m.open.Set(float64(p.Open))
	m.conns.Set(float64(p.Connections))
}

func (m *liveMetrics) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}
