package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/spf13/cobra"
	"golang.org/x/net/bpf"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/capture/filter"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

type liveFlags struct {
	iface        string
	duration     time.Duration
	count        int64
	write        string
	writeMaxSize int64
	force        bool
	user         string
	ringMB       int
	snaplen      int
	metricsAddr  string
	idle         time.Duration
	noStatus     bool
	libpcap      bool
	debugPprof   bool
}

func newLiveCmd() *cobra.Command {
	in := inputFlags{workers: 1} // live has no --workers: it runs on one goroutine
	var rf ruleFlags
	var lf liveFlags
	cmd := &cobra.Command{
		Use:   "live -i IFACE",
		Short: "Capture live on an interface, print findings as they happen, and the report when it stops",
		Long: `live captures on a network interface (AF_PACKET, pure Go; root or CAP_NET_RAW), decodes
Kafka and prints each finding as it is made: a line of text on a terminal, an ndjson
"finding" object when -o ndjson or when standard output is not a terminal. A status line
(packets, connections, findings, kernel drops) is kept on stderr on a terminal. It stops on
Ctrl-C (SIGINT/SIGTERM), after --duration or --count, and then prints the full report of
analyze. --write saves what it captured as pcapng for a later analyze.

The --write files hold what crossed the wire, passwords of SASL/PLAIN included: each is
created new with mode 0600, never through a symbolic link, and an existing file is refused
unless --force, which replaces it with a new file (a symbolic link is refused even then;
a FIFO or character device of root's or yours, /dev/null, is written as it is).

Once the capture socket, the first --write file and --metrics-addr are open, live stops
being root: it runs as the -Z user, nobody by default (-Z root keeps root). The open socket
and file keep working; the files --write-max-size rotates to are created by that user, so
their directory must be one it may write (live checks before it starts).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLive(cmd, &in, &rf, &lf)
		},
	}
	in.register(cmd, "table, json, ndjson, csv, markdown (the default: table on a terminal, else ndjson)")
	rf.register(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&lf.iface, "interface", "i", "", "interface to capture on (any: all of them)")
	fl.DurationVar(&lf.duration, "duration", 0, "stop after this long (e.g. 10m)")
	fl.Int64Var(&lf.count, "count", 0, "stop after this many packets")
	fl.StringVarP(&lf.write, "write", "w", "", "also save the captured frames to this pcapng file")
	fl.Int64Var(&lf.writeMaxSize, "write-max-size", 0, "rotate the --write file at this many bytes (x.pcapng, x-2.pcapng, …)")
	fl.BoolVar(&lf.force, "force", false, "replace --write files that exist (never through a symbolic link; a FIFO or device of yours is written into)")
	fl.StringVarP(&lf.user, "relinquish-privileges", "Z", "", "once the capture is open, run as this user (default when root: "+defaultDropUser+"; root keeps root)")
	fl.IntVar(&lf.ringMB, "ring-size", 64, "kernel ring buffer in MiB")
	fl.IntVar(&lf.snaplen, "snaplen", 262144, "bytes kept of each frame")
	fl.StringVar(&lf.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9464)")
	fl.DurationVar(&lf.idle, "idle-timeout", 10*time.Minute, "forget connections silent this long")
	fl.BoolVar(&lf.noStatus, "no-status", false, "no status line on stderr")
	fl.BoolVar(&lf.libpcap, "libpcap", false, "capture through libpcap (only in binaries built with -tags libpcap)")
	fl.BoolVar(&lf.debugPprof, "debug-pprof", false, "also serve Go's profiler under /debug/pprof/ on --metrics-addr")
	_ = fl.MarkHidden("debug-pprof")
	_ = cmd.MarkFlagRequired("interface")
	return cmd
}

func runLive(cmd *cobra.Command, in *inputFlags, rf *ruleFlags, lf *liveFlags) error {
	stdout := cmd.OutOrStdout()
	onTerminal := isTerminal(stdout)
	if !cmd.Flags().Changed("output") && !onTerminal {
		in.output = "ndjson"
	}
	opt, form, caps, err := in.options(cmd, nil)
	if err != nil {
		return usageError(err)
	}
	if len(in.tlsKeylogs) > 0 {
		// Opened now, while live may still read them (before it gives up
		// root), and followed as clients append their keys.
		follow, err := newKeyLogFollower(in.tlsKeylogs)
		if err != nil {
			return usageError(err)
		}
		defer follow.close()
		opt.TLSMore = follow.more
	}
	stopGovernor, err := in.applyMemoryLimit(cmd)
	if err != nil {
		return usageError(err)
	}
	defer stopGovernor()
	choice, err := rf.parse()
	if err != nil {
		return usageError(err)
	}
	if !report.ValidAnalyzeFormat(in.output) {
		return usageError(fmt.Errorf("-o %q: live writes table, json, ndjson, csv or markdown", in.output))
	}
	kfilter, err := kernelFilter(opt.Filter, opt.Reassembly.Ports, lf.snaplen)
	if err != nil {
		return usageError(err)
	}
	opt.Filter = nil // the kernel runs it
	link, err := capture.LinkTypeOf(lf.iface)
	if err != nil {
		return usageError(err)
	}
	plan, err := planDrop(lf.user, cmd.Flags().Changed("relinquish-privileges"))
	if err != nil {
		return usageError(err)
	}
	rotateIn := ""
	if lf.write != "" && lf.writeMaxSize > 0 && plan != nil {
		if err := plan.rotationCheck(lf.write); err != nil {
			return usageError(err)
		}
		rotateIn = filepath.Dir(lf.write)
	}
	var rec *capture.Recorder
	if lf.write != "" {
		if warn := capture.UnsafeDirectory(lf.write); warn != "" {
			fmt.Fprintln(os.Stderr, "kidscope: warning:", warn)
		}
		if rec, err = capture.NewRecorder(lf.write, link, lf.snaplen, capture.RecordOptions{MaxSize: lf.writeMaxSize, Force: lf.force}); err != nil {
			return &exitError{code: exitBadInput, err: writeError(err)}
		}
	}
	src, err := capture.OpenLive(capture.LiveOptions{Interface: lf.iface, Snaplen: lf.snaplen, RingMB: lf.ringMB,
		Filter: kfilter, Record: rec, Libpcap: lf.libpcap})
	if err != nil {
		if rec != nil {
			rec.Close()
		}
		return &exitError{code: exitBadInput, err: err}
	}
	opt.Source = src
	opt.MaxPackets = lf.count
	opt.Reassembly.IdleAfter = lf.idle

	ctx := cmd.Context()
	if lf.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lf.duration)
		defer cancel()
	}

	names := []string{lf.iface}
	if rec != nil {
		names = nil // frames are numbered per written file
	}
	// A capture that runs for days streams its findings; the final report
	// keeps the recent connections and instances, so memory stays flat.
	opt.Rules = choice.check(caps.liveRulesOptions())
	sink := &liveSink{}
	// Findings, ticks and the status line all run on the capture's own
	// goroutine (inside pipeline.Run): they need no lock.
	var findings int64
	status := newStatusLine(os.Stderr, onTerminal && isTerminal(os.Stderr) && !lf.noStatus)
	var metrics *liveMetrics
	if lf.metricsAddr != "" {
		if metrics, err = startMetrics(lf.metricsAddr, lf.debugPprof); err != nil {
			src.Close()
			return usageError(err)
		}
		defer metrics.close()
		sink.onEvent = metrics.event
	}
	if err := plan.drop(rotateIn); err != nil {
		src.Close()
		return &exitError{code: exitBadInput, err: err}
	}
	sink.onFinding = func(f *rules.Finding) {
		findings++
		if metrics != nil {
			metrics.finding(f)
		}
		files := names
		if rec != nil {
			files = rec.Files()
		}
		status.clear()
		if in.output == "ndjson" {
			_ = report.WriteFindingLine(stdout, files, f, form)
		} else if f.Severity > rules.Info || rf.verbose {
			fmt.Fprintln(stdout, report.FormatFindingText(files, f, colorWanted(stdout)))
		}
	}
	opt.OnTick = func(p pipeline.Progress) {
		if metrics != nil {
			metrics.progress(p)
		}
		if rec != nil {
			_ = rec.Flush()
		}
		status.show(fmt.Sprintf("%d packets, %d connections (%d open), %d requests, %d findings, %d dropped by the kernel",
			p.Packets, p.Connections, p.Open, p.Requests, findings, p.KernelDrops))
	}
	runInfo := &report.RunInfo{Version: kidscopeVersion(), Options: runOptions(in, rf, &opt),
		Inputs: []report.Input{{Kind: report.InputInterface, Name: lf.iface, Unhashed: "a live interface"}}}
	runInfo.Options.Snaplen, runInfo.Options.IdleTimeout = lf.snaplen, lf.idle
	if in.output == "ndjson" {
		_ = report.WriteRunLine(stdout, runInfo)
	}
	run, err := pipeline.Run(ctx, opt, sink)
	collectBeforeReport()
	sum := &run.Summary
	status.clear()
	if err != nil {
		return &exitError{code: exitBadInput, err: err}
	}
	if rec != nil {
		sum.Files = rec.Files()
	} else {
		sum.Files = names
	}
	// Ctrl-C, --duration and --count are how live is meant to stop: the
	// report covers everything captured.
	sum.Interrupted = false
	rep := &report.Analysis{Files: sum.Files, Summary: *sum, Result: run.Rules, Run: runInfo}
	err = report.WriteAnalysis(stdout, rep, report.AnalysisOptions{Format: in.output, UUID: form, Verbose: rf.verbose,
		Color: colorWanted(stdout), OmitFindings: in.output == "ndjson", OmitRun: in.output == "ndjson"})
	if err != nil {
		return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
	}
	if sum.Capture.KernelDrops > 0 {
		fmt.Fprintf(os.Stderr, "kidscope: the kernel dropped %d packets (a larger --ring-size or a tighter --filter helps)\n", sum.Capture.KernelDrops)
	}
	code := exitOK
	if choice.failing(&run.Rules) {
		code = exitFindings
	}
	return finalStatus(sum, code)
}

// writeError says how to get past a --write file that exists.
func writeError(err error) error {
	var ee *capture.ExistsError
	if errors.As(err, &ee) && ee.Kind == "" {
		return fmt.Errorf("%w (use --force)", err)
	}
	return err
}

// liveSink streams the findings as they are made, and hands the decoder's
// events to the metrics.
type liveSink struct {
	onFinding func(*rules.Finding)
	onEvent   func(c *pipeline.Conn, e *decode.Event) // nil without metrics
}

func (s *liveSink) Finding(f *rules.Finding) { s.onFinding(f) }

func (s *liveSink) Event(c *pipeline.Conn, e *decode.Event) {
	if s.onEvent != nil {
		s.onEvent(c, e)
	}
}

func (s *liveSink) Closed(*pipeline.Conn) {}

// kernelFilter is the filter live runs in the kernel: --filter or
// --bpf-raw, else TCP on the broker ports. A match returns snaplen, the
// bytes the kernel keeps of the frame (a --bpf-raw program says its own).
func kernelFilter(flt *filter.Filter, ports reassembly.Ports, snaplen int) (func(layers.LinkType) ([]bpf.RawInstruction, error), error) {
	if flt == nil {
		var err error
		if flt, err = filter.New(filter.Default(ports.List())); err != nil {
			return nil, err
		}
	}
	return flt.WithSnaplen(snaplen).RawFor, nil
}

// statusLine keeps one line of status at the bottom of a terminal.
type statusLine struct {
	w     io.Writer
	on    bool
	shown bool
}

func newStatusLine(w io.Writer, on bool) *statusLine { return &statusLine{w: w, on: on} }

func (s *statusLine) show(text string) {
	if !s.on {
		return
	}
	fmt.Fprintf(s.w, "\r\x1b[K%s", text)
	s.shown = true
}

func (s *statusLine) clear() {
	if s.on && s.shown {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.shown = false
	}
}

// isTerminal reports whether w is a character device.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
