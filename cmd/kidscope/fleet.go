package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/fleet"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

type fleetFlags struct {
	brokers       string
	topic         string
	group         string
	fromBeginning bool
	untilEnd      bool
	window        time.Duration
	flushAfter    time.Duration
	output        string
	uuid          string
	quiet         bool
	metricsAddr   string
	kafka         kafkaFlags
}

func newFleetCmd() *cobra.Command {
	var ff fleetFlags
	var rf ruleFlags
	cmd := &cobra.Command{
		Use:   "fleet --brokers BROKERS --topic T",
		Short: "Check the cross-connection rules over what live --publish agents published",
		Long: `fleet reads what kidscope agents (live --publish, analyze --publish) on many broker hosts
published to a Kafka topic, puts every agent's records in time order and checks the rules
that look across connections over the whole fleet: a telemetry ID pushed to one broker after
it was terminated on another, one client instance from two addresses on two brokers, the
instance inventory. The agents' own findings of every other rule are taken as they made them.

It is a consumer-group member (--group): run one, or several, and Kafka shares the topic's
partitions among them (one client instance's records are on one partition). A member checks
only the partitions it holds, so what links two instance IDs (instance-id-split: one client
with two IDs; broker-id-reissued: one telemetry ID given to two clients) is found only when
both are on one member: for those, run one member. Findings are
printed as they are made (a line of text on stderr with a document format, NDJSON finding
objects with -o ndjson, the default when standard output is not a terminal), and the fleet
report, with an AGENTS section, when it stops (Ctrl-C, SIGTERM). Kafka delivers at least once:
a member that takes over another's partitions can report again what that one reported since
its last commit, with the same "id" (a finding's stable ID), by which a consumer drops the
repeat. --from-beginning
--until-end reads what the topic holds from its oldest record to its newest and stops: a
one-shot report, without a group.

Records are held --window (5s) by their capture time before they are checked, so that the
records of several agents (and partitions) are checked in time order; once no record has come
for --flush-after (5s), everything held is checked. A record that is not kidscope's, or of a
later schema, is skipped and counted, and said once.

To try it on one machine: kidscope try-kafka runs an in-memory Kafka and prints the commands
that use it (docs/fleet-try.md in the repository walks through them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFleet(cmd, &ff, &rf) },
	}
	fl := cmd.Flags()
	fl.StringVar(&ff.brokers, "brokers", "", "Kafka brokers to read from (host:port,…)")
	fl.StringVar(&ff.topic, "topic", "kidscope", "the topic the agents publish to")
	fl.StringVar(&ff.group, "group", "kidscope-fleet", "the consumer group the fleet's members share")
	fl.BoolVar(&ff.fromBeginning, "from-beginning", false, "a group with no committed offsets starts at the oldest record (else at the newest)")
	fl.BoolVar(&ff.untilEnd, "until-end", false, "stop at the newest record the topic held at the start, and report (with --from-beginning: what the topic holds)")
	fl.DurationVar(&ff.window, "window", 5*time.Second, "how long records wait, by capture time, for other agents' older ones")
	fl.DurationVar(&ff.flushAfter, "flush-after", 5*time.Second, "check every record held once none has come for this long (the agents are quiet)")
	fl.StringVarP(&ff.output, "output", "o", "", "table, json, ndjson, csv, markdown (the default: table on a terminal, else ndjson)")
	fl.StringVar(&ff.uuid, "uuid", "kafka", "how to show IDs: kafka (base64), rfc4122, both")
	fl.StringVar(&ff.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9465)")
	fl.BoolVarP(&ff.quiet, "quiet", "q", false, "no finding lines on stderr while it runs (with a document format)")
	rf.register(cmd)
	// The fleet decodes no capture: what it checks is what its agents
	// decoded and published.
	fl.Lookup("require-kafka").Usage = "exit 2 when no record on the topic holds a Kafka message (an empty topic, a wrong --topic, agents that decoded none): nothing was checked"
	ff.kafka.register(cmd, "")
	_ = cmd.MarkFlagRequired("brokers")
	return cmd
}

func runFleet(cmd *cobra.Command, ff *fleetFlags, rf *ruleFlags) error {
	stdout := cmd.OutOrStdout()
	if ff.output == "" {
		ff.output = "table"
		if !isTerminal(stdout) {
			ff.output = "ndjson"
		}
	}
	switch ff.output {
	case "table", "json", "ndjson", "csv", "markdown":
	default:
		return usageError(fmt.Errorf("-o %q: fleet writes table, json, ndjson, csv or markdown", ff.output))
	}
	form, err := report.ParseUUIDForm(ff.uuid)
	if err != nil {
		return usageError(err)
	}
	choice, err := rf.parse()
	if err != nil {
		return usageError(err)
	}
	brokers, err := brokerList("brokers", ff.brokers)
	if err != nil {
		return usageError(err)
	}
	if ff.window < 0 || ff.flushAfter < 0 {
		return usageError(fmt.Errorf("--window %v, --flush-after %v: want durations of 0 or more", ff.window, ff.flushAfter))
	}
	kopts, err := ff.kafka.options()
	if err != nil {
		return usageError(err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := fleet.NewMerger(fleet.Options{Rules: rules.Options{Profile: choice.profile}})
	// The merger runs on this goroutine; scrapes read these copies.
	var records, skipped, pending atomic.Int64
	var metrics *liveMetrics
	if ff.metricsAddr != "" {
		if metrics, err = startMetrics(ff.metricsAddr, false); err != nil {
			return inputError(err)
		}
		defer metrics.close()
		metrics.counterFuncs(map[string]counterFunc{
			"kidscope_fleet_records_total":         {"Records read from the topic.", records.Load},
			"kidscope_fleet_records_skipped_total": {"Records skipped: not kidscope's, or of a later schema.", skipped.Load},
		})
		metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kidscope_fleet_records_pending",
			Help: "Records waiting, by capture time, for other agents' older ones."}, func() float64 { return float64(pending.Load()) }))
	}
	streamOut := ff.output == "ndjson"
	lines := &findingLines{stdout: stdout, ndjson: streamOut, quiet: ff.quiet, verbose: rf.verbose, color: colorWanted(cmd, os.Stderr), form: form}
	emit := func(fs []rules.Finding) {
		if len(fs) == 0 {
			return
		}
		files, origins := m.Files(), m.Origins()
		for i := range fs {
			f := &fs[i]
			if !choice.filter.Wants(f) {
				continue
			}
			if metrics != nil {
				metrics.finding(f)
			}
			lines.write(files, origins, f, nil)
		}
	}
	said := map[bool]bool{}
	saidCommit := false
	lastRecord := time.Now()
	handle := func(b fleet.Batch) error {
		for i, v := range b.Values {
			r, err := fleet.Decode(v)
			if err != nil {
				future := errors.Is(err, fleet.ErrFutureSchema)
				m.Unreadable(future)
				if !said[future] {
					said[future] = true
					fmt.Fprintf(os.Stderr, "kidscope: skipped a record of topic %s: %s (such records are counted in the report)\n", report.SafeText(ff.topic), report.SafeText(err.Error()))
				}
				continue
			}
			emit(m.Add(r, b.Replayed[i]))
		}
		now := time.Now()
		if len(b.Values) > 0 {
			lastRecord = now
		}
		if !ff.untilEnd {
			emit(m.Release(m.Newest().Add(-ff.window)))
			if now.Sub(lastRecord) >= ff.flushAfter {
				emit(m.Flush()) // every agent is quiet: nothing older is coming
			}
		}
		c := m.Counts()
		n, _ := m.Pending()
		records.Store(c.Records)
		skipped.Store(c.Unreadable + c.Future)
		pending.Store(int64(n))
		if metrics != nil {
			metrics.state.setAgents(m.Agents())
		}
		if b.Commit != nil && n == 0 {
			// Committed once every record read was checked and what it
			// caused written: a record still waiting for older ones is read
			// again by whoever has its partition next.
			// A commit that fails (a rebalance) is tried again with the
			// next batch; the records are at worst read again.
			if err := b.Commit(ctx); err != nil && ctx.Err() == nil && !saidCommit {
				saidCommit = true
				fmt.Fprintf(os.Stderr, "kidscope: commit the offsets of group %s: %s (tried again)\n", report.SafeText(ff.group), report.SafeText(err.Error()))
			}
		}
		return nil
	}
	err = fleet.Consume(ctx, fleet.ConsumerOptions{Brokers: brokers, Topic: ff.topic, Group: ff.group,
		FromBeginning: ff.fromBeginning, UntilEnd: ff.untilEnd, Client: kopts}, handle)
	emit(m.Flush())
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "kidscope: %s\n", report.SafeText(err.Error()))
	}
	res := m.Result()
	choice.filter.Apply(&res)
	// The options of the agents' capture are the agents'; these are the
	// fleet's own.
	rep := &report.Analysis{Files: m.Files(), Result: res, Run: &report.RunInfo{Version: kidscopeVersion(),
		Options: report.RunOptions{Profile: rf.profile, Rules: rf.rules, SkipRules: rf.skipRules, MinSeverity: rf.minSeverity,
			UUID: ff.uuid, Workers: 1},
		Inputs: []report.Input{{Kind: report.InputTopic, Name: ff.topic, Unhashed: "a Kafka topic"}}}}
	fleetReport(rep, m)
	if werr := report.WriteAnalysis(stdout, rep, report.AnalysisOptions{Format: ff.output, UUID: form, Verbose: rf.verbose,
		Color: colorWanted(cmd, stdout), OmitFindings: streamOut, OmitRun: true}); werr != nil {
		return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", werr)}
	}
	checked := m.Messages() > 0 || rep.Summary.Requests+rep.Summary.Responses > 0
	if !checked {
		fmt.Fprintf(os.Stderr, "kidscope: no record on topic %s holds a Kafka message (records read: %d): nothing was checked\n",
			report.SafeText(ff.topic), m.Counts().Records)
	}
	switch {
	case choice.failing(&res):
		return &exitError{code: exitFindings}
	case err != nil && ctx.Err() == nil:
		return &exitError{code: exitBadInput}
	case !checked && rf.requireKafka:
		return &exitError{code: exitBadInput}
	}
	return nil
}

// fleetReport adds the totals of the agents' reports, the agents and what
// the fleet skipped to the report.
func fleetReport(rep *report.Analysis, m *fleet.Merger) {
	counts := m.Counts()
	rep.Agents, rep.Fleet = m.Agents(), &counts
	if rep.Agents == nil {
		rep.Agents = []result.Agent{}
	}
	rep.Summary = m.Summary()
	rep.Summary.Files = m.Files()
	rep.Files, rep.Origins = rep.Summary.Files, m.Origins()
}
