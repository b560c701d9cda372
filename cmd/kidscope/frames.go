package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/result"
)

func newFramesCmd() *cobra.Command {
	var in inputFlags
	cmd := &cobra.Command{
		Use:   "frames FILE...",
		Short: "List every Kafka request and response in captures, like tshark -T fields",
		Long: `frames lists one line per Kafka request and response: file, frame (1-based per file,
as Wireshark counts), connection, direction, API key, name and version, correlation ID,
client ID, the header's client instance ID (KIP-1313 tag 0) and the error codes of
every response: its top-level ErrorCode, or the distinct codes of its topics,
partitions, groups or resources where the API version has no top-level one. A summary line closes the list.
Several files are merged in time order; "-" reads standard input.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			opt, form, _, err := in.options(cmd, files)
			if err != nil {
				return usageError(err)
			}
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
			w, err := report.NewFramesWriter(cmd.OutOrStdout(), in.output)
			if err != nil {
				return usageError(err)
			}
			sink := &framesSink{w: w, form: form, names: displayNames(files)}
			run, err := pipeline.Run(cmd.Context(), opt, sink)
			bar.clear()
			if err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			if sink.err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", sink.err)}
			}
			fs := report.NewFramesSummary(&run.Summary)
			if err := w.Finish(fs); err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("write output: %w", err)}
			}
			if in.output == "csv" {
				fmt.Fprintln(os.Stderr, fs.String())
			}
			warnNoKafka(&run.Summary, opt.Reassembly.Ports, "")
			return finalStatus(&run.Summary, exitOK)
		},
	}
	in.register(cmd, "table, json, ndjson, csv")
	in.registerWorkers(cmd)
	return cmd
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
	if n := sum.TLSKeysNotKept; n > 0 {
		fmt.Fprintf(os.Stderr, "kidscope: %d client randoms of the TLS key logs not kept, over what the memory budget keeps (--memory-limit raises it): their connections are TLS (no key)\n", n)
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

type framesSink struct {
	w     report.FramesWriter
	form  report.UUIDForm
	names []string
	rec   report.FrameRecord
	err   error
}

func (s *framesSink) Event(c *pipeline.Conn, e *decode.Event) {
	if s.err != nil || e.Kind != decode.EventRequest && e.Kind != decode.EventResponse {
		return
	}
	file := ""
	if e.At.File < len(s.names) {
		file = s.names[e.At.File]
	}
	s.rec = report.NewFrameRecord(file, c.Endpoints, e, s.form)
	s.err = s.w.Add(&s.rec)
}

func (s *framesSink) Closed(*pipeline.Conn) {}
