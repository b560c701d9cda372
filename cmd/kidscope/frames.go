package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/result"
)

func newFramesCmd() *cobra.Command {
	var in inputFlags
	var ff framesFlags
	var sf scopeFlags
	cmd := &cobra.Command{
		Use:   "frames FILE...",
		Short: "List every Kafka request and response in captures, like tshark -T fields",
		Long: `frames lists one line per Kafka request and response: file, frame (1-based per file,
as Wireshark counts), time, connection, direction, API key, name and version, correlation ID,
client ID, the header's client instance ID (KIP-1313 tag 0), the error codes of
every response (its top-level ErrorCode, or the distinct codes of its topics,
partitions, groups or resources where the API version has no top-level one), the
frame of a request's response and of a response's request, and the latency; with
-e, what the telemetry and group bodies hold (the body's client instance ID,
subscription ID, terminating flag, compression, metrics length, member ID), the
fields the Wireshark plugin (kidscope wireshark-plugin) shows too. A
summary line closes the list. Several files are merged in time order; "-" reads
standard input.

As with tshark -T fields, -e picks fields by name (repeatable, or comma lists) and
-E shapes them: header=y|n, separator=/t|/s|CHAR, quote=d|s|n, aggregator=CHAR.
With -e and no -o the output is tab-separated fields without a header. The fields:
` + wrapList(report.FrameFieldNames(), 88) + ".",
		Example: `  kidscope frames capture.pcap
  kidscope frames -e frame -e api_name -e latency --api Produce capture.pcap
  kidscope frames -o tsv --connection 3 capture.pcap
  kidscope frames -e frame,client_id -E header=y,separator=,,quote=d capture.pcap`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			opt, form, _, err := in.options(cmd, files)
			if err != nil {
				return usageError(err)
			}
			fopt, filter, err := ff.options(cmd, in.output)
			if err != nil {
				return usageError(err)
			}
			if filter.scope.scope, err = sf.scope(nil); err != nil {
				return usageError(err)
			}
			if opt.Time, err = sf.timeRange(); err != nil {
				return usageError(err)
			}
			w, err := report.NewFramesWriter(cmd.OutOrStdout(), fopt)
			if err != nil {
				return usageError(err)
			}
			limit, _ := in.effectiveLimit(cmd) // options read it without error
			stopGovernor, err := in.applyMemoryLimit(cmd)
			if err != nil {
				return usageError(err)
			}
			defer stopGovernor()
			opt.Stdin = cmd.InOrStdin()
			opt.Decode.AllAnswers = true
			bar := newProgressBar(files, in.noProgress)
			if bar != nil {
				opt.OnTick = bar.tick
			}
			sink := newFramesSink(w, form, displayNames(files), filter)
			if report.FieldsNeedResponse(fopt.Fields) {
				sink.hold = newFrameHold(frameHoldFor(limit), sink.write)
			}
			run, err := pipeline.Run(cmd.Context(), opt, sink)
			bar.clear()
			if err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			if err := sink.finish(); err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
			}
			fs := report.NewFramesSummary(&run.Summary)
			fs.Listed = sink.listed
			if filter.any() {
				fs.Filter = &report.FramesFilter{APIKeys: filter.apiList, Connections: filter.connList, Scope: filter.scope.scope.String(form)}
			}
			if sink.hold != nil {
				fs.UnlinkedRequests, fs.Hold = sink.hold.unlinked, sink.hold.max
			}
			if err := w.Finish(fs); err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
			}
			if report.TextFormat(fopt.Format) {
				// The output is data alone, for scripts and spreadsheets.
				fmt.Fprintln(os.Stderr, fs.String())
			}
			warnNoKafka(&run.Summary, opt.Reassembly.Ports, "")
			return finalStatus(&run.Summary, exitOK)
		},
	}
	in.register(cmd, "table, json, ndjson, csv, tsv, fields (-e without -o: fields)")
	in.registerWorkers(cmd)
	fl := cmd.Flags()
	fl.StringArrayVarP(&ff.fields, "field", "e", nil,
		"a field to write, by its JSON name (repeatable, or a comma list): "+strings.Join(report.FrameFieldNames(), ", "))
	fl.StringArrayVarP(&ff.fieldOpts, "field-option", "E", nil,
		"shape the fields of fields, tsv and csv output (repeatable, or a comma list): header=y|n, separator=/t|/s|CHAR, quote=d|s|n, aggregator=CHAR")
	fl.StringSliceVar(&ff.apis, "api", nil, "list only these APIs: key numbers or names (Produce, 0, GetTelemetrySubscriptions, 71), repeatable")
	fl.StringSliceVar(&ff.connections, "connection", nil, "list only these connections, by number as analyze and the CONN column number them, repeatable")
	sf.register(cmd, true)
	return cmd
}

// wrapList joins names with ", " in lines of at most width characters.
func wrapList(names []string, width int) string {
	var b strings.Builder
	n := 0
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
			n++
			if n+1+len(name) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(name)
		n += len(name)
	}
	return b.String()
}

// options turns the frames flags into the writer's options and the
// filter; output is -o's value, which -e and -E turn to fields when -o is
// not given.
func (ff *framesFlags) options(cmd *cobra.Command, output string) (report.FramesOptions, framesFilter, error) {
	var opt report.FramesOptions
	var flt framesFilter
	var err error
	if opt.Fields, err = parseFields(ff.fields); err != nil {
		return opt, flt, err
	}
	if err := parseFieldOptions(ff.fieldOpts, &opt); err != nil {
		return opt, flt, err
	}
	opt.Format = output
	if !cmd.Flags().Changed("output") && (len(ff.fields) > 0 || len(ff.fieldOpts) > 0) {
		opt.Format = "fields" // as tshark -T fields
	}
	if flt.apiList, err = parseAPIs(ff.apis); err != nil {
		return opt, flt, err
	}
	if flt.connList, err = parseConnections(ff.connections); err != nil {
		return opt, flt, err
	}
	return opt, flt, nil
}

// finalStatus reports input problems that did not stop the run and picks
// the exit code: 130 when interrupted, 2 when an input could not be read
// to its end, else code. A quirk a file was read past (such as records
// captured longer than their frames) is reported but leaves the file
// readable: it does not change the code.
func finalStatus(sum *result.Summary, code int) error {
	for _, w := range sum.CutFrames {
		fmt.Fprintf(os.Stderr, "kidscope: %s: frame %d: packet cut by the snap length; its missing bytes are a gap\n", report.SafeText(sum.FileName(w.File)), w.Frame)
	}
	if n := sum.Capture.Cut - int64(len(sum.CutFrames)); n > 0 {
		fmt.Fprintf(os.Stderr, "kidscope: and %d more packets cut by the snap length\n", n)
	}
	for _, p := range sum.Problems {
		fmt.Fprintln(os.Stderr, "kidscope:", report.SafeText(p.Error()))
	}
	if n, maxKeys := sum.TLSKeysNotKept, sum.TLSKeysKept; n > 0 {
		fmt.Fprintf(os.Stderr, "kidscope: %d lines of the TLS key logs not kept: their client randoms are past the first %d the memory budget keeps (--memory-limit raises it), and their connections are TLS (no key)\n", n, maxKeys)
	}
	// A finding at or above --fail-on is a verdict on what was read, and
	// wins over an input that could not be read to its end: a CI job must
	// not see "bad input" where the client broke a rule. Interrupted wins
	// over both: the run did not finish.
	if c := exitCodeOf(sum, code); c != exitOK {
		return &exitError{code: c}
	}
	return nil
}

func displayNames(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		if f == "-" {
			f = "stdin"
		}
		out[i] = f
	}
	return out
}

// framesFilter is what --api and --connection let through.
type framesFilter struct {
	apiList  []int16
	connList []int
	scope    framesScope // --instance, --client, --broker (scope.go)
}

func (f *framesFilter) any() bool { return len(f.apiList) > 0 || len(f.connList) > 0 || f.scope.any() }

// keeps reports whether the message of rec passes. A response whose
// request the capture did not show has no API: --api leaves it out.
func (f *framesFilter) keeps(rec *report.FrameRecord) bool {
	if len(f.connList) > 0 && !slices.Contains(f.connList, rec.ConnectionID) {
		return false
	}
	if len(f.apiList) > 0 && (rec.APIKey == nil || !slices.Contains(f.apiList, *rec.APIKey)) {
		return false
	}
	return true
}

// framesSink turns the requests and responses of the run into records,
// keeps those the filter lets through and writes them, through the hold
// when a request's row needs its response (frames_hold.go).
type framesSink struct {
	w      report.FramesWriter
	form   report.UUIDForm
	names  []string
	filter framesFilter
	hold   *frameHold // nil: every row is written as it comes
	rec    report.FrameRecord
	listed int64
	err    error
}

func newFramesSink(w report.FramesWriter, form report.UUIDForm, names []string, filter framesFilter) *framesSink {
	return &framesSink{w: w, form: form, names: names, filter: filter}
}

func (s *framesSink) Event(c *pipeline.Conn, e *decode.Event) {
	if s.err != nil || e.Kind != decode.EventRequest && e.Kind != decode.EventResponse {
		return
	}
	if s.filter.scope.any() && !s.filter.scope.keeps(&c.Conn, e) {
		return
	}
	s.rec = report.NewFrameRecord(s.names, &c.Conn, e, s.form)
	if !s.filter.keeps(&s.rec) {
		return
	}
	s.listed++
	if s.hold == nil {
		s.err = s.write(&s.rec)
		return
	}
	s.hold.add(&s.rec, c.ID, e)
	s.err = s.hold.err
}

func (s *framesSink) write(r *report.FrameRecord) error { return s.w.Add(r) }

func (s *framesSink) Closed(c *pipeline.Conn) {
	if s.hold != nil && s.err == nil {
		s.hold.closed(c.ID)
		s.err = s.hold.err
	}
}

// finish writes what the hold still has, and says what went wrong.
func (s *framesSink) finish() error {
	if s.err == nil && s.hold != nil {
		s.err = s.hold.finish()
	}
	return s.err
}
