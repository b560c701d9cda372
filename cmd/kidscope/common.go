package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/capture/filter"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
	"github.com/kidscope/kidscope/tlsdec"
)

// inputFlags are the flags every command that reads traffic shares.
type inputFlags struct {
	ports          []string
	headerV3       []string
	uuid           string
	output         string
	maxConnections int
	maxBufferPages int
	maxConnPages   int
	filter         string
	bpfRaw         string
	noProgress     bool
	maxFrame       *sizeValue
	workers        int
	memoryLimit    *sizeValue
	resyncBuffer   *sizeValue
	bodyBuffer     *sizeValue
	tlsKeylogs     []string
}

func (f *inputFlags) register(cmd *cobra.Command, outputs string) {
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.ports, "port", "p", []string{"9092"}, "broker ports: numbers, ranges (9092-9094), repeatable; auto detects Kafka on any port")
	fl.StringArrayVar(&f.headerV3, "header-v3", nil, "KEY:MINVERSION: more API versions that use request header v3 (adds to the built-in list)")
	fl.StringVar(&f.uuid, "uuid", "kafka", "UUID text form: kafka (base64url) or rfc4122")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: "+outputs)
	dflt := budgetFor(0)
	fl.IntVar(&f.maxConnections, "max-connections", dflt.connections,
		"most connections tracked at once; more are not analysed, and counted; scales with --memory-limit")
	fl.IntVar(&f.maxBufferPages, "max-buffer", dflt.pages,
		"most 1900-byte pages of out-of-order data held in total; over it, waiting data is given up as a gap; scales with --memory-limit")
	fl.IntVar(&f.maxConnPages, "max-buffer-per-connection", dflt.pagesPerConn,
		"most 1900-byte pages of out-of-order data held for one connection; over it, its waiting data is given up as a gap; scales with --memory-limit")
	fl.StringVarP(&f.filter, "filter", "f", "", "capture filter in tcpdump syntax (host, net, port, portrange, tcp, udp, ip, ip6, icmp, vlan, less, greater, tcp[13] & 2 != 0 and other byte comparisons, and/or/not, parentheses)")
	fl.BoolVar(&f.noProgress, "no-progress", false, "no progress bar (it shows only when stderr is a terminal)")
	f.maxFrame, f.resyncBuffer, f.bodyBuffer, f.memoryLimit = newSize("104857600", 1), newSize("", 1), newSize("", 1), newSize(defaultMemoryLimit, 1)
	fl.Var(f.maxFrame, "max-frame", "largest Kafka frame size believed, 1 B to 1GiB (larger ones are a desynchronisation)")
	fl.Var(f.resyncBuffer, "max-resync-buffer",
		"bytes kept in all by connection sides that lost their framing, while they look for the next frame start (1 MiB each at most; default a 16th of --memory-limit)")
	fl.Var(f.bodyBuffer, "max-body-buffer",
		"bytes kept in all by messages being collected whole to be decoded (the bodies the rules read); a body that does not fit is not decoded, and is counted (default a 16th of --memory-limit)")
	fl.Var(f.memoryLimit, "memory-limit",
		"soft limit of the heap (200MiB, 1GB; 0: none): near it the garbage collector works harder rather than the process growing; GOMEMLIMIT, when set, is the default")
	fl.StringArrayVar(&f.tlsKeylogs, "tls-keylog", nil,
		"NSS key log (SSLKEYLOGFILE format) to decrypt Kafka over TLS, repeatable; pcapng decryption secrets blocks are used too")
	fl.StringVar(&f.bpfRaw, "bpf-raw", "", "a classic BPF program as `tcpdump -ddd` prints it (a file name, or the text), instead of --filter")
}

// defaultMemoryLimit keeps a run with 100,000 connections tracked (the
// default cap) under 300 MB of resident memory; a run with a few hundred
// never comes near it.
const defaultMemoryLimit = "200MiB"

// applyMemoryLimit sets the garbage collector's soft memory limit from
// --memory-limit and starts its governor (memlimit.go), or leaves
// GOMEMLIMIT's when that is set and the flag is not given. The command
// calls stop when it is done.
func (f *inputFlags) applyMemoryLimit(cmd *cobra.Command) (stop func(), err error) {
	if _, env := os.LookupEnv("GOMEMLIMIT"); env && !cmd.Flags().Changed("memory-limit") {
		return func() {}, nil
	}
	n, err := f.effectiveLimit(cmd)
	if err != nil {
		return nil, err
	}
	return startMemoryGovernor(n), nil
}

// registerWorkers adds --workers, for the commands that read files.
func (f *inputFlags) registerWorkers(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0),
		"goroutines that reassemble and decode, connections shared among them by hash (1: everything on one); the output is the same whatever the number, --max-connections included, unless the body budget (--max-body-buffer, shared out among them) is spent")
	_ = cmd.Flags().SetAnnotation("workers", manDefault, []string{"the number of cores"})
}

// captureFilter builds the --filter or --bpf-raw filter; nil when neither
// is given.
func (f *inputFlags) captureFilter() (*filter.Filter, error) {
	switch {
	case f.filter != "" && f.bpfRaw != "":
		return nil, errors.New("--filter and --bpf-raw exclude each other")
	case f.filter != "":
		return filter.New(f.filter)
	case f.bpfRaw != "":
		text := f.bpfRaw
		if b, err := os.ReadFile(text); err == nil {
			text = string(b)
		}
		raw, err := filter.ParseRaw(text)
		if err != nil {
			return nil, fmt.Errorf("--bpf-raw: %w", err)
		}
		return filter.NewRaw(raw)
	}
	return nil, nil
}

// options turns the flags into pipeline options: the caps that are not
// given take their shares of the memory limit (budget.go).
func (f *inputFlags) options(cmd *cobra.Command, files []string) (pipeline.Options, report.UUIDForm, budget, error) {
	var opt pipeline.Options
	limit, err := f.effectiveLimit(cmd)
	if err != nil {
		return opt, 0, budget{}, err
	}
	b := budgetFor(limit)
	given := cmd.Flags().Changed
	if !given("max-connections") {
		f.maxConnections = b.connections
	}
	if !given("max-buffer") {
		f.maxBufferPages = b.pages
	}
	if !given("max-buffer-per-connection") {
		f.maxConnPages = min(b.pagesPerConn, f.maxBufferPages)
	}
	opt, form, err := f.pipelineOptions(files, b)
	if err != nil {
		return opt, form, b, err
	}
	opt.TLSKeyLog, err = f.keyLogs()
	opt.TLSSecrets = true
	return opt, form, b, err
}

// keyLogs reads the --tls-keylog files into one key log. A line that is
// not a key log line is said on stderr, by its number (never its text,
// which may hold a secret), and left out.
func (f *inputFlags) keyLogs() ([]byte, error) {
	var all []byte
	for _, name := range f.tlsKeylogs {
		text, err := os.ReadFile(name)
		if err != nil {
			return nil, inputError(fmt.Errorf("--tls-keylog: %w", err))
		}
		if _, errs := tlsdec.ParseKeyLog(text); len(errs) > 0 {
			fmt.Fprintf(os.Stderr, "kidscope: %s: %d lines are not key log lines and were left out (the first: %v)\n",
				report.SafeText(name), len(errs), errs[0])
		}
		all = append(append(all, text...), '\n')
	}
	return all, nil
}

func (f *inputFlags) pipelineOptions(files []string, b budget) (pipeline.Options, report.UUIDForm, error) {
	var opt pipeline.Options
	form, err := report.ParseUUIDForm(f.uuid)
	if err != nil {
		return opt, form, err
	}
	ports, err := reassembly.ParsePorts(f.ports)
	if err != nil {
		return opt, form, fmt.Errorf("--port: %w", err)
	}
	table := decode.DefaultAPITable()
	for _, s := range f.headerV3 {
		key, ver, err := decode.ParseHeaderV3(s)
		if err != nil {
			return opt, form, fmt.Errorf("--header-v3 %q: %w", s, err)
		}
		table = table.WithHeaderV3(key, ver)
	}
	if f.workers < 1 || f.workers > 256 {
		return opt, form, fmt.Errorf("--workers %d: want 1 to 256", f.workers)
	}
	// A cap of zero or less would mean "none" to the stages, which take
	// zero as "the default": refused here rather than silently replaced.
	for _, c := range []struct {
		flag     string
		val, max int
	}{
		{"--max-connections", f.maxConnections, math.MaxInt32},
		{"--max-buffer", f.maxBufferPages, math.MaxInt32},
		{"--max-buffer-per-connection", f.maxConnPages, math.MaxInt32},
	} {
		if c.val < 1 || c.val > c.max {
			return opt, form, fmt.Errorf("%s %d: want 1 to %d", c.flag, c.val, c.max)
		}
	}
	if n := f.maxFrame.n; n < 1 || n > 1<<30 {
		return opt, form, fmt.Errorf("--max-frame %q: want 1 B to 1GiB", f.maxFrame.text)
	}
	resync, err := sizeFlag("--max-resync-buffer", f.resyncBuffer, b.resyncBytes)
	if err != nil {
		return opt, form, err
	}
	bodies, err := sizeFlag("--max-body-buffer", f.bodyBuffer, b.bodyBytes)
	if err != nil {
		return opt, form, err
	}
	flt, err := f.captureFilter()
	if err != nil {
		return opt, form, err
	}
	opt = pipeline.Options{
		Files:       files,
		Filter:      flt,
		Workers:     f.workers,
		ResyncBytes: resync,
		BodyBytes:   bodies,
		// The ciphertext of TLS connections waiting for keys takes a
		// share of the budget with no flag of its own: only a growing
		// key log or a later secrets block makes waiting worth it.
		TLSHeldBytes: b.tlsHeld,
		// Each worker keeps its own copy of the key logs, all of the
		// share: dividing it would make the output depend on --workers.
		TLSMaxKeys: b.tlsKeys, TCPStreams: b.tcpStreams,
		Reassembly: reassembly.Options{Ports: ports, MaxConnections: f.maxConnections,
			MaxPagesTotal: f.maxBufferPages, MaxPagesPerConnection: f.maxConnPages},
		Decode: decode.Options{Table: table, MaxFrameSize: int32(f.maxFrame.n)},
	}
	return opt, form, nil
}

// usageError is a mistake in the command line: its line is followed by
// the command's usage (main.go). An error that is already an exitError
// keeps its own kind.
func usageError(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitBadInput, err: err, usage: true}
}

// inputError is an input that cannot be read or a resource that cannot
// be had (a file, an address): one line, no usage.
func inputError(err error) error { return &exitError{code: exitBadInput, err: err} }

// sizeFlag is a byte-count cap: its share of the budget when it is not
// given, and never zero.
func sizeFlag(flag string, v *sizeValue, share int64) (int64, error) {
	if !v.given() {
		return share, nil
	}
	if v.n == 0 {
		return 0, fmt.Errorf("%s %q: want more than 0 bytes", flag, v.text)
	}
	return v.n, nil
}

// findingLines writes each finding as it is made, as live and fleet do: a
// "finding" object of the NDJSON stream on stdout with -o ndjson, else a
// line of text on stderr (none with -q; info findings only with -v).
type findingLines struct {
	stdout               io.Writer
	ndjson, quiet, color bool
	verbose              bool
	form                 report.UUIDForm
}

// write writes f, when it is shown, after calling before (nil: nothing).
// files name its frames' files, origins say what they stand for in its ID
// (report.Analysis.Origins; nil: a run that publishes nothing).
func (w *findingLines) write(files []string, origins []report.Origin, f *rules.Finding, before func()) {
	if !w.ndjson && (w.quiet || f.Severity <= rules.Info && !w.verbose) {
		return
	}
	if before != nil {
		before()
	}
	if w.ndjson {
		_ = report.WriteFindingLine(w.stdout, files, origins, f, w.form)
		return
	}
	fmt.Fprintln(os.Stderr, report.FormatFindingText(files, f, w.color))
}
