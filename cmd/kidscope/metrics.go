package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/rules"
)

// liveMetrics serves what live sees as Prometheus metrics, in Prometheus's
// text format. Totals the pipeline keeps (packets, bytes, drops) are set
// from its progress ticks; counts by API and by rule are counted as the
// events come.
//
// The format is written here rather than with Prometheus's client library:
// a handful of gauges and two labelled counters do not need it, and its
// packages (with protobuf's) cost every run of every command about a
// millisecond of start-up in their init functions.
type liveMetrics struct {
	srv *http.Server

	mu       sync.Mutex // the HTTP handler reads what the capture goroutine writes
	totals   pipeline.Progress
	requests map[string]float64    // by API name
	findings map[[2]string]float64 // by rule and severity
	seen     map[kafka.UUID]bool   // instance IDs, at most maxSeenInstances
}

// metricHelp is the HELP line of each metric, in the order they are
// written.
var metricHelp = []struct{ name, kind, help string }{
	{"kidscope_packets_total", "gauge", "Frames captured (that passed the capture filter)."},
	{"kidscope_bytes_total", "gauge", "Bytes of the frames captured."},
	{"kidscope_kernel_drops_total", "gauge", "Frames the kernel dropped because the capture ring was full."},
	{"kidscope_connections_open", "gauge", "TCP connections to brokers open now."},
	{"kidscope_connections_total", "gauge", "TCP connections to brokers seen."},
	{"kidscope_kafka_requests_total", "counter", "Kafka requests decoded, by API."},
	{"kidscope_findings_total", "counter", "Findings made, by rule and severity."},
	{"kidscope_client_instances", "gauge", "Distinct client instance IDs seen in request headers (at most 100000 are counted)."},
}

func startMetrics(addr string, debug bool) (*liveMetrics, error) {
	m := &liveMetrics{requests: map[string]float64{}, findings: map[[2]string]float64{}, seen: map[kafka.UUID]bool{}}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", m.serve)
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

// serve writes the metrics in Prometheus's text exposition format.
func (m *liveMetrics) serve(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(m.exposition())
}

// exposition returns the metrics as Prometheus's text format: each metric
// with its HELP and TYPE lines, labelled series sorted by label values.
func (m *liveMetrics) exposition() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b bytes.Buffer
	for _, h := range metricHelp {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", h.name, h.help, h.name, h.kind)
		switch h.name {
		case "kidscope_packets_total":
			sample(&b, h.name, nil, float64(m.totals.Packets))
		case "kidscope_bytes_total":
			sample(&b, h.name, nil, float64(m.totals.Bytes))
		case "kidscope_kernel_drops_total":
			sample(&b, h.name, nil, float64(m.totals.KernelDrops))
		case "kidscope_connections_open":
			sample(&b, h.name, nil, float64(m.totals.Open))
		case "kidscope_connections_total":
			sample(&b, h.name, nil, float64(m.totals.Connections))
		case "kidscope_kafka_requests_total":
			for _, api := range slices.Sorted(maps.Keys(m.requests)) {
				sample(&b, h.name, []string{"api", api}, m.requests[api])
			}
		case "kidscope_findings_total":
			keys := slices.SortedFunc(maps.Keys(m.findings), func(x, y [2]string) int {
				return strings.Compare(x[0]+"\x00"+x[1], y[0]+"\x00"+y[1])
			})
			for _, k := range keys {
				sample(&b, h.name, []string{"rule", k[0], "severity", k[1]}, m.findings[k])
			}
		case "kidscope_client_instances":
			sample(&b, h.name, nil, float64(len(m.seen)))
		}
	}
	return b.Bytes()
}

// sample writes one series: name{label="value",...} value.
func sample(b *bytes.Buffer, name string, labels []string, v float64) {
	b.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(labels[i+1]))
		b.WriteByte('"')
	}
	if len(labels) > 0 {
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	b.WriteByte('\n')
}

// labelEscaper escapes a label value as the text format wants.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// event counts a decoded request (called on the capture goroutine).
func (m *liveMetrics) event(_ *pipeline.Conn, e *decode.Event) {
	if e.Kind != decode.EventRequest {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[decode.APIName(e.Msg.Request.APIKey)]++
	// The set of IDs is capped, so that days of traffic cannot grow it: past
	// the cap the gauge stays at it.
	if h := &e.Msg.Request; h.HasInstanceID && !h.InstanceID.IsZero() && !m.seen[h.InstanceID] && len(m.seen) < maxSeenInstances {
		m.seen[h.InstanceID] = true
	}
}

// maxSeenInstances caps the instance IDs the metrics remember.
const maxSeenInstances = 100000

func (m *liveMetrics) finding(f *rules.Finding) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.findings[[2]string{f.Rule, f.Severity.String()}]++
}

func (m *liveMetrics) progress(p pipeline.Progress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.totals = p
}

func (m *liveMetrics) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}
