package main

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// stateCollector exports what is a state rather than a count: each
// broker's KIP-1313 verdict so far (live: the agent sees the brokers'
// answers; fleet's records do not carry them), and when fleet last heard
// from each agent. The states arrive as snapshots from the goroutine that
// runs the rules (live's progress ticks, fleet's batches); scrapes read
// the latest.
type stateCollector struct {
	mu       sync.Mutex
	verdicts []rules.BrokerVerdict
	agents   []result.Agent

	verdict, lastSeen, stopped *prometheus.Desc
}

func newStateCollector() *stateCollector {
	return &stateCollector{
		verdict: prometheus.NewDesc("kidscope_broker_kip1313_verdict",
			"1 for each broker endpoint, with its KIP-1313 verdict so far (enforces, ignores, mixed) as the verdict label; brokers whose answers told nothing yet have no series.",
			[]string{"broker", "verdict"}, nil),
		lastSeen: prometheus.NewDesc("kidscope_fleet_agent_last_seen_timestamp_seconds",
			"Time of the newest record of each agent (by its clock; live agents publish their counts every few seconds).",
			[]string{"agent"}, nil),
		stopped: prometheus.NewDesc("kidscope_fleet_agent_stopped",
			"1 when the agent's last record said it was stopping, else 0.",
			[]string{"agent"}, nil),
	}
}

func (c *stateCollector) setVerdicts(v []rules.BrokerVerdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.verdicts = v
}

func (c *stateCollector) setAgents(a []result.Agent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.agents = a
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.verdict
	ch <- c.lastSeen
	ch <- c.stopped
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	verdicts, agents := c.verdicts, c.agents
	c.mu.Unlock()
	for _, v := range verdicts {
		ch <- prometheus.MustNewConstMetric(c.verdict, prometheus.GaugeValue, 1, v.Endpoint.String(), v.Verdict.String())
	}
	for _, a := range agents {
		if !a.LastSeen.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.lastSeen, prometheus.GaugeValue, float64(a.LastSeen.UnixNano())/1e9, a.Name)
		}
		stopped := 0.0
		if a.Stopped {
			stopped = 1
		}
		ch <- prometheus.MustNewConstMetric(c.stopped, prometheus.GaugeValue, stopped, a.Name)
	}
}
