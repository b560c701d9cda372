package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/spf13/cobra"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

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
	writeMaxSize *sizeValue
	rotateEvery  secondsValue
	writeFiles   int
	writeSecrets bool
	force        bool
	user         string
	ringSize     *sizeValue
	snaplen      *sizeValue
	metricsAddr  string
	idle         time.Duration
	noStatus     bool
	quiet        bool
	libpcap      bool
	debugPprof   bool
}

func newLiveCmd() *cobra.Command {
	in := inputFlags{workers: 1} // live has no --workers: it runs on one goroutine
	var rf ruleFlags
	var lf liveFlags
	var pf publishFlags
	cmd := &cobra.Command{
		Use:   "live -i IFACE",
		Short: "Capture live on an interface: findings as they happen, the report when it stops",
		Long: `live captures on a network interface (AF_PACKET, pure Go; root or CAP_NET_RAW), decodes
Kafka and prints each finding as it is made, and the full report of analyze when it stops
(Ctrl-C or SIGTERM, --duration, --count). --write saves what it captured as pcapng for a
later analyze.

Standard output holds one format only. With -o ndjson (the default when standard output is
not a terminal) the findings stream there as "finding" objects and the rest of the report
follows as objects of the same stream. With a document format (table, the default on a
terminal, json, csv, markdown) standard output holds the document alone, written when live
stops, and each finding is a line of text on stderr as it is made (none with -q). A status
line (packets, connections, findings, kernel drops) is kept on stderr on a terminal.

The --write files hold what crossed the wire, passwords of SASL/PLAIN included: each is
created new with mode 0600, never through a symbolic link, and an existing file is refused
unless --force, which replaces it with a new file (a symbolic link is refused even then;
a FIFO or character device of root's or yours, /dev/null, is written as it is).

--publish BROKERS sends what the rules across connections read, and the findings, to a Kafka
topic, where kidscope fleet checks those rules over every host (see kidscope fleet --help). It
never makes the capture wait: records past --publish-buffer, or not delivered in 30s, are
dropped and counted (status line, metrics, the last line on stderr).

Once the capture socket, the first --write file and --metrics-addr are open, live stops
being root: it runs as the -Z user, nobody by default (-Z root keeps uid 0). The open socket
and file keep working; the files --write-max-size rotates to are created by that user, so
their directory must be one it may write (live checks before it starts). It then keeps no
capability and shuts itself in where the kernel allows (no_new_privs, Landlock, seccomp): it
may write only in the --write directory, run no program, and make no TCP connection but to
--publish (docs/confinement.md). A full disk stops the --write file at its last whole frame,
says so, and the capture goes on.

-G/--write-rotate-every rotates by time (1h; a plain number is seconds, as tcpdump -G),
at the first frame or status tick after the period. -W/--write-files N keeps a ring of N
files, as tcpdump -W: the next file after x-N.pcapng is x.pcapng again, the oldest, which
live removes (only a file it made in this run; anything else there is refused as the first
file would be) and creates anew. Each file names the interface and the capture filter in
its interface block and ends with the kernel's counts (isb_ifrecv, isb_ifdrop), since the
capture began.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLive(cmd, &in, &rf, &lf, &pf)
		},
	}
	in.register(cmd, "table, json, ndjson, csv, markdown (the default: table on a terminal, else ndjson)")
	// The default depends on where standard output goes, as the text says:
	// no "(default table)" after it.
	cmd.Flags().Lookup("output").DefValue = ""
	rf.register(cmd)
	pf.register(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&lf.iface, "interface", "i", "", "interface to capture on (any: all of them)")
	fl.DurationVar(&lf.duration, "duration", 0, "stop after this long (e.g. 10m)")
	fl.Int64Var(&lf.count, "count", 0, "stop after this many packets")
	fl.StringVarP(&lf.write, "write", "w", "", "also save the captured frames to this pcapng file")
	lf.writeMaxSize, lf.ringSize, lf.snaplen = newSize("0", 1), newSize("64", 1<<20), newSize("262144", 1)
	fl.Var(lf.writeMaxSize, "write-max-size", "rotate the --write file at this size (1GB, 500MiB; x.pcapng, x-2.pcapng, …; 0: never)")
	fl.VarP(&lf.rotateEvery, "write-rotate-every", "G", "rotate the --write file this often (1h, 30m; a plain number is seconds, as tcpdump -G; 0: never)")
	fl.IntVarP(&lf.writeFiles, "write-files", "W", 0, "with --write-max-size or --write-rotate-every, keep at most this many files: the next replaces the oldest, as tcpdump -W (0: all)")
	fl.BoolVar(&lf.writeSecrets, "write-secrets", false, "also write the --tls-keylog lines into the --write files as decryption secrets blocks, so they decrypt on their own (in kidscope and Wireshark)")
	fl.BoolVar(&lf.force, "force", false, "replace --write files that exist (never through a symbolic link; a FIFO or device of yours is written into)")
	fl.StringVarP(&lf.user, "relinquish-privileges", "Z", "", "once the capture is open, run as this user (default when root: "+defaultDropUser+"; root keeps root)")
	fl.Var(lf.ringSize, "ring-size", "kernel ring buffer (a plain number is MiB: 64, 64MiB, 1GiB)")
	fl.Var(lf.snaplen, "snaplen", "bytes kept of each frame (262144, 256KiB)")
	fl.StringVar(&lf.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9464)")
	fl.DurationVar(&lf.idle, "idle-timeout", 10*time.Minute, "forget connections silent this long")
	fl.BoolVar(&lf.noStatus, "no-status", false, "no status line on stderr")
	fl.BoolVarP(&lf.quiet, "quiet", "q", false, "no finding lines on stderr while live runs (with a document format; the report at the end lists them)")
	fl.BoolVar(&lf.libpcap, "libpcap", false, "capture through libpcap (only in binaries built with -tags libpcap)")
	fl.BoolVar(&lf.debugPprof, "debug-pprof", false, "also serve Go's profiler under /debug/pprof/ on --metrics-addr")
	_ = fl.MarkHidden("debug-pprof")
	_ = cmd.MarkFlagRequired("interface")
	return cmd
}

func runLive(cmd *cobra.Command, in *inputFlags, rf *ruleFlags, lf *liveFlags, pf *publishFlags) error {
	stdout := cmd.OutOrStdout()
	onTerminal := isTerminal(stdout)
	if !cmd.Flags().Changed("output") && !onTerminal {
		in.output = "ndjson"
	}
	opt, form, caps, err := in.options(cmd, nil)
	if err != nil {
		return usageError(err)
	}
	if lf.writeSecrets && (lf.write == "" || len(in.tlsKeylogs) == 0) {
		return usageError(fmt.Errorf("--write-secrets writes the --tls-keylog lines into the --write files: give both"))
	}
	var follow *keyLogFollower
	if len(in.tlsKeylogs) > 0 {
		// Opened now, while live may still read them (before it gives up
		// root), and followed as clients append their keys.
		if follow, err = newKeyLogFollower(in.tlsKeylogs); err != nil {
			return inputError(err)
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
	snaplen, ringMB, err := lf.sizes()
	if err != nil {
		return usageError(err)
	}
	kfilter, kernelText, err := kernelFilter(opt.Filter, in, opt.Reassembly.Ports, snaplen)
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
	if lf.writeFiles < 0 || lf.writeFiles > 0 && lf.writeMaxSize.n <= 0 && lf.rotateEvery.d <= 0 {
		return usageError(fmt.Errorf("--write-files %d: keeps a ring of rotated files; give a positive number and --write-max-size or --write-rotate-every", lf.writeFiles))
	}
	rotates := lf.writeMaxSize.n > 0 || lf.rotateEvery.d > 0
	rotateIn := ""
	if lf.write != "" && rotates && plan != nil {
		if err := plan.rotationCheck(lf.write); err != nil {
			return inputError(err)
		}
		rotateIn = filepath.Dir(lf.write)
	}
	var rec *capture.Recorder
	var status *statusLine // made below; the Recorder's warnings clear it
	if lf.write != "" {
		if warn := capture.UnsafeDirectory(lf.write); warn != "" {
			fmt.Fprintln(os.Stderr, "kidscope: warning:", warn)
		}
		if rec, err = capture.NewRecorder(lf.write, link, snaplen, capture.RecordOptions{MaxSize: lf.writeMaxSize.n, Force: lf.force,
			RotateEvery: lf.rotateEvery.d, MaxFiles: lf.writeFiles, Interface: lf.iface, Filter: recordedFilter(kernelText), OS: osName(),
			Warn: func(err error) {
				// A full disk: the capture and the findings go on.
				status.clear()
				fmt.Fprintln(os.Stderr, "kidscope: warning:", report.SafeText(err.Error()))
			}}); err != nil {
			return &exitError{code: exitBadInput, err: writeError(err)}
		}
		if lf.writeSecrets {
			if err := recordSecrets(rec, opt.TLSKeyLog); err != nil {
				rec.Close()
				return &exitError{code: exitBadInput, err: err}
			}
			opt.TLSMore = func() []byte {
				text := follow.more()
				if len(text) > 0 {
					// Before the frames the capture writes next; a
					// failure shows at the next frame written.
					_ = rec.WriteSecrets(capture.SecretsTLSKeyLog, text)
				}
				return text
			}
		}
	}
	src, err := capture.OpenLive(capture.LiveOptions{Interface: lf.iface, Snaplen: snaplen, RingMB: ringMB,
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
	status = newStatusLine(os.Stderr, onTerminal && canRedraw(os.Stderr) && !lf.noStatus)
	// ndjson is a stream: its finding objects and the report's objects
	// after them are one stream on stdout. Every other format is one
	// document, which nothing else may precede on stdout (a json.load of
	// it would fail): the findings go to stderr as text as they are made.
	streamOut := in.output == "ndjson"
	lines := &findingLines{stdout: stdout, ndjson: streamOut, quiet: lf.quiet, verbose: rf.verbose, color: colorWanted(cmd, os.Stderr), form: form}
	var metrics *liveMetrics
	if lf.metricsAddr != "" {
		if metrics, err = startMetrics(lf.metricsAddr, lf.debugPprof); err != nil {
			src.Close()
			return inputError(err)
		}
		defer metrics.close()
		sink.onEvent = metrics.event
	}
	// Certificates and the SASL password are read now, before live gives
	// up root; Kafka is dialled when the first record goes.
	pub, err := pf.start(lf.iface, func(i int) string {
		if rec != nil {
			if files := rec.Files(); i < len(files) {
				return files[i]
			}
		}
		return lf.iface
	}, false)
	if err != nil {
		src.Close()
		return usageError(err)
	}
	var lastHello time.Time
	if pub != nil && metrics != nil {
		metrics.watchPublisher(pub)
	}
	if pub != nil {
		defer func() {
			pub.Close(publishTimeout)
			sayPublished(pub, pf.topic)
		}()
	}
	if rec != nil && plan != nil && lf.writeFiles > 0 {
		// The ring removes the first file when it comes round, as the -Z
		// user: a sticky directory lets only the owner do that.
		if err := rec.Chown(plan.uid, plan.gid); err != nil {
			src.Close()
			return &exitError{code: exitBadInput, err: err}
		}
	}
	// From here on live is the -Z user with no capability, shut in to
	// what it still needs (confine.go).
	if err := confineLive(cmd, plan, rotateIn, lf.write, pub != nil); err != nil {
		src.Close()
		return &exitError{code: exitBadInput, err: err}
	}
	frameNote := rec == nil // said once, at the first finding line with a frame
	noteFrames := func(f *rules.Finding) {
		if frameNote && f.At.Frame > 0 {
			frameNote = false
			fmt.Fprintf(os.Stderr, "kidscope: frame numbers count the packets live captured on %s; without --write they cannot be looked up in any file\n", lf.iface)
		}
	}
	sink.onFinding = func(f *rules.Finding) {
		if metrics != nil {
			metrics.finding(f)
		}
		files := names
		if rec != nil {
			files = rec.Files()
		}
		lines.write(files, publishedOrigins(pub, files), f, func() {
			status.clear() // a terminal shows stdout and stderr on one screen
			findings++
			noteFrames(f)
		})
	}
	opt.OnTick = func(p pipeline.Progress) {
		if metrics != nil {
			metrics.progress(p)
		}
		if rec != nil {
			// A failure shows at the next frame written.
			_ = rec.Tick(time.Now())
			_ = rec.Flush()
		}
		var published string
		if pub != nil {
			if now := time.Now(); now.Sub(lastHello) >= helloEvery {
				pub.Hello(false)
				lastHello = now
			}
			n, _, dropped := pub.Counts()
			published = fmt.Sprintf(", %d published (%d dropped)", n, dropped)
		}
		status.show(func(width int) string { return statusWithPublished(width, p, findings, published) })
	}
	runInfo := &report.RunInfo{Version: kidscopeVersion(), Options: runOptions(in, rf, &opt),
		Inputs: []report.Input{{Kind: report.InputInterface, Name: lf.iface, Unhashed: "a live interface"}}}
	runInfo.Options.Snaplen, runInfo.Options.IdleTimeout = snaplen, lf.idle
	if in.output == "ndjson" {
		_ = report.WriteRunLine(stdout, runInfo)
	}
	run, err := pipeline.Run(ctx, opt, withPublisher(sink, pub))
	collectBeforeReport()
	sum := &run.Summary
	status.clear()
	if err != nil {
		return &exitError{code: exitBadInput, err: err}
	}
	if rec != nil {
		sum.Files = rec.Files()
		if n, stopped := rec.Unwritten(); stopped != nil {
			sum.Problems = append(sum.Problems, fmt.Errorf("--write: %d frames captured were not written: %w", n, stopped))
		}
	} else {
		sum.Files = names
	}
	// Ctrl-C, --duration and --count are how live is meant to stop: the
	// report covers everything captured.
	sum.Interrupted = false
	if pub != nil {
		pub.Report(sum, &run.Rules) // Close, deferred, waits for it
	}
	rep := &report.Analysis{Files: sum.Files, Origins: publishedOrigins(pub, sum.Files), Summary: *sum, Result: run.Rules, Run: runInfo}
	err = report.WriteAnalysis(stdout, rep, report.AnalysisOptions{Format: in.output, UUID: form, Verbose: rf.verbose,
		Color: colorWanted(cmd, stdout), OmitFindings: streamOut, OmitRun: streamOut})
	if err != nil {
		return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
	}
	if sum.Capture.KernelDrops > 0 {
		fmt.Fprintf(os.Stderr, "kidscope: the kernel dropped %d packets (a larger --ring-size or a tighter --filter helps)\n", sum.Capture.KernelDrops)
	}
	return finalStatus(sum, rf.exitCode(&choice, &run, opt.Reassembly.Ports, kernelText))
}

// sizes checks --snaplen and --ring-size (MiB for the capture) against
// what the kernel takes. 0 is the default of each, as tcpdump -s 0 is.
func (lf *liveFlags) sizes() (snaplen, ringMB int, err error) {
	if lf.snaplen.n == 0 {
		lf.snaplen.n = 262144
	}
	if lf.ringSize.n == 0 {
		lf.ringSize.n = 64 << 20
	}
	if n := lf.snaplen.n; n > 1<<30 {
		return 0, 0, fmt.Errorf("--snaplen %q: want 1 B to 1GiB", lf.snaplen.text)
	}
	if n := lf.ringSize.n; n > 1<<40 || n%(1<<20) != 0 {
		return 0, 0, fmt.Errorf("--ring-size %q: want a whole number of MiB, up to 1TiB", lf.ringSize.text)
	}
	return int(lf.snaplen.n), int(lf.ringSize.n >> 20), nil
}

// secondsValue is a duration flag that also takes a plain number of
// seconds, as tcpdump -G does.
type secondsValue struct {
	d    time.Duration
	text string
}

func (v *secondsValue) String() string { return v.text }
func (v *secondsValue) Type() string   { return "duration" }
func (v *secondsValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.ParseInt(s, 10, 64); nerr == nil && n >= 0 && n < 1<<33 {
		d, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration (1h, 30m) or seconds (3600)")
	}
	v.d, v.text = d, s
	return nil
}

// recordedFilter is the capture filter named in the --write files'
// if_filter: the tcpdump expression the kernel runs (--filter, or the
// broker ports' default), none for a --bpf-raw program.
func recordedFilter(kernelText string) string {
	if kernelText == "--bpf-raw" {
		return ""
	}
	return kernelText
}

// osName is the if_os of the --write files: the kernel's name and release.
func osName() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return runtime.GOOS
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
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
// --bpf-raw, else TCP on the broker ports, and its text. A match returns
// snaplen, the bytes the kernel keeps of the frame (a --bpf-raw program
// says its own).
func kernelFilter(flt *filter.Filter, in *inputFlags, ports reassembly.Ports, snaplen int) (func(layers.LinkType) ([]bpf.RawInstruction, error), string, error) {
	text := in.filter
	if in.bpfRaw != "" {
		text = "--bpf-raw"
	}
	if flt == nil {
		text = filter.Default(ports.List())
		var err error
		if flt, err = filter.New(text); err != nil {
			return nil, "", err
		}
	}
	return flt.WithSnaplen(snaplen).RawFor, text, nil
}

// statusLine keeps one line of status at the bottom of a terminal.
type statusLine struct {
	w     io.Writer
	on    bool
	shown bool
}

func newStatusLine(w io.Writer, on bool) *statusLine { return &statusLine{w: w, on: on} }

// show writes the line text(width) gives for the terminal's width now, so
// that it never wraps (a wrapped line would not be redrawn in place).
func (s *statusLine) show(text func(width int) string) {
	if !s.on {
		return
	}
	width := 80
	if f, ok := s.w.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			width = w
		}
	}
	fmt.Fprintf(s.w, "\r\x1b[K%s", text(width))
	s.shown = true
}

func (s *statusLine) clear() {
	if s != nil && s.on && s.shown {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.shown = false
	}
}

// statusText is the status line for a terminal width columns wide: the
// longest wording that fits in width-1 columns (the last column would
// wrap on some terminals), cut only when even the shortest does not.
func statusText(width int, p pipeline.Progress, findings int64) string {
	words := []string{
		fmt.Sprintf("%d packets, %d connections (%d open), %d requests, %d findings shown, %d dropped by the kernel",
			p.Packets, p.Connections, p.Open, p.Requests, findings, p.KernelDrops),
		fmt.Sprintf("%d packets, %d connections, %d requests, %d findings shown, %d kernel drops",
			p.Packets, p.Connections, p.Requests, findings, p.KernelDrops),
		fmt.Sprintf("%d pkts, %d conns, %d reqs, %d findings, %d drops",
			p.Packets, p.Connections, p.Requests, findings, p.KernelDrops),
		fmt.Sprintf("%d pkts %d conns %d findings %d drops", p.Packets, p.Connections, findings, p.KernelDrops),
	}
	room := max(width-1, 1)
	for _, w := range words {
		if len(w) <= room { // ASCII only: bytes are columns
			return w
		}
	}
	return words[len(words)-1][:room]
}

// statusWithPublished is the status line with the publisher's counts after
// it when they fit.
func statusWithPublished(width int, p pipeline.Progress, findings int64, published string) string {
	if published != "" && width-len(published) > 40 {
		return statusText(width-len(published), p, findings) + published
	}
	return statusText(width, p, findings)
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
