package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/rules"
)

// liveMetrics serves what live sees as Prometheus metrics, through
// Prometheus's client library and a registry of its own (not the global
// default one, so that nothing a dependency registers leaks into the
// scrape, and tests can start several). Counts by API and by rule are
// counted as the events come; the totals the pipeline keeps are exported
// by totalsCollector from its latest progress tick.
type liveMetrics struct {
	srv  *http.Server
	addr string // where it listens: with port 0, the port the kernel gave
	reg  *prometheus.Registry

	totals   *totalsCollector
	state    *stateCollector
	requests *prometheus.CounterVec // by API name
	findings *prometheus.CounterVec // by rule and severity

	mu        sync.Mutex          // event runs on the capture goroutine, the gauge's reads on the HTTP handler's
	seen      map[kafka.UUID]bool // instance IDs, at most maxSeenInstances
	instances prometheus.Gauge
}

// newLiveMetrics registers kidscope's metrics and the Go runtime's and
// the process's, which operators expect of any exporter.
func newLiveMetrics() *liveMetrics {
	m := &liveMetrics{
		reg:    prometheus.NewRegistry(),
		totals: newTotalsCollector(),
		state:  newStateCollector(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kidscope_kafka_requests_total",
			Help: "Kafka requests decoded, by API (api=\"unknown\" for keys kidscope does not know).",
		}, []string{"api"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kidscope_findings_total",
			Help: "Findings made, by rule and severity.",
		}, []string{"rule", "severity"}),
		seen: map[kafka.UUID]bool{},
		instances: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kidscope_client_instances",
			Help: fmt.Sprintf("Distinct client instance IDs seen in request headers (at most %d are counted).", maxSeenInstances),
		}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.totals, m.state, m.requests, m.findings, m.instances,
	)
	// Every rule's series exists from the start, at 0: an alert on
	// increase() sees a rule's first finding only if the series was
	// there before it.
	for _, r := range rules.Catalog() {
		m.findings.WithLabelValues(r.ID, r.Severity.String())
	}
	return m
}

func startMetrics(addr string, debug bool) (*liveMetrics, error) {
	m := newLiveMetrics()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	m.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		// A collector that fails (the process collector without /proc,
		// say) should not cost the scrape kidscope's own metrics.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      log.New(os.Stderr, "kidscope: metrics: ", 0), // stdout may be the ndjson stream
	}))
	if debug {
		// Go's profiler, for finding where time or memory goes in a
		// long-running capture (hidden flag --debug-pprof).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "kidscope: metrics:", err)
		}
	}()
	return m, nil
}

// event counts a decoded request (called on the capture goroutine).
func (m *liveMetrics) event(_ *pipeline.Conn, e *decode.Event) {
	if e.Kind != decode.EventRequest {
		return
	}
	// Keys outside the table share one label value: a capture full of
	// garbage must not make up to 65536 series.
	api := "unknown"
	if a, ok := decode.LookupAPI(e.Msg.Request.APIKey); ok {
		api = a.Name
	}
	m.requests.WithLabelValues(api).Inc()
	// The set of IDs is capped, so that days of traffic cannot grow it: past
	// the cap the gauge stays at it.
	if h := &e.Msg.Request; h.HasInstanceID && !h.InstanceID.IsZero() {
		m.mu.Lock()
		if !m.seen[h.InstanceID] && len(m.seen) < maxSeenInstances {
			m.seen[h.InstanceID] = true
			m.instances.Set(float64(len(m.seen)))
		}
		m.mu.Unlock()
	}
}

// maxSeenInstances caps the instance IDs the metrics remember.
const maxSeenInstances = 100000

func (m *liveMetrics) finding(f *rules.Finding) {
	m.findings.WithLabelValues(f.Rule, f.Severity.String()).Inc()
}

func (m *liveMetrics) progress(p pipeline.Progress) {
	m.totals.set(p)
	m.state.setVerdicts(p.Verdicts)
}

func (m *liveMetrics) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}

// totalsCollector exports the running totals the pipeline keeps. They
// arrive as absolute values with each progress tick, not as increments,
// so a prometheus.Counter (which only adds) does not fit; a collector
// that reports the latest values as constant metrics at each scrape is
// the client library's way for counters kept elsewhere.
type totalsCollector struct {
	mu     sync.Mutex // progress ticks write on the capture goroutine, scrapes read
	latest pipeline.Progress

	packets, bytes, drops, conns, open *prometheus.Desc
}

func newTotalsCollector() *totalsCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &totalsCollector{
		packets: d("kidscope_packets_total", "Frames captured (that passed the capture filter)."),
		bytes:   d("kidscope_bytes_total", "Bytes of the frames captured."),
		drops:   d("kidscope_kernel_drops_total", "Frames the kernel dropped because the capture ring was full."),
		conns:   d("kidscope_connections_total", "TCP connections to brokers that carried data."),
		open:    d("kidscope_connections_open", "TCP connections to brokers open now."),
	}
}

func (c *totalsCollector) set(p pipeline.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latest = p
}

func (c *totalsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.packets, c.bytes, c.drops, c.conns, c.open} {
		ch <- d
	}
}

func (c *totalsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	p := c.latest
	c.mu.Unlock()
	for _, v := range []struct {
		d *prometheus.Desc
		n int64
	}{
		{c.packets, p.Packets}, {c.bytes, p.Bytes}, {c.drops, p.KernelDrops},
		{c.conns, p.Connections},
	} {
		ch <- prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(v.n))
	}
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(p.Open))
}

// counterFuncs exports counts kept elsewhere (read atomically at each
// scrape) as counters.
func (m *liveMetrics) counterFuncs(counters map[string]counterFunc) {
	for name, c := range counters {
		get := c.get
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: c.help},
			func() float64 { return float64(get()) }))
	}
}

type counterFunc = struct {
	help string
	get  func() int64
}

// watchPublisher exports what live --publish sent and dropped.
func (m *liveMetrics) watchPublisher(pub interface{ Counts() (int64, int64, int64) }) {
	m.counterFuncs(map[string]counterFunc{
		"kidscope_publish_records_total": {"Records handed to the Kafka producer (observations, findings, the agent's descriptions).",
			func() int64 { n, _, _ := pub.Counts(); return n }},
		"kidscope_publish_delivered_total": {"Records Kafka acknowledged.",
			func() int64 { _, n, _ := pub.Counts(); return n }},
		"kidscope_publish_dropped_total": {"Records dropped, never waited for: the producer's buffer full, or Kafka unreachable past the delivery timeout.",
			func() int64 { _, _, n := pub.Counts(); return n }},
	})
}
