package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

// annotateFlags are analyze's flags that write annotated copies of the
// inputs (--annotate) and what goes into them.
type annotateFlags struct {
	out          string
	writeSecrets bool
	force        bool
}

func (f *annotateFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.out, "annotate", "", "also write a pcapng copy of the input with a packet comment on every frame a finding names (several inputs: OUT-1.pcapng, OUT-2.pcapng, … in the order given)")
	fl.BoolVar(&f.writeSecrets, "write-secrets", false, "keep the inputs' decryption secrets blocks in the --annotate and --extract files, ahead of the packets (without it they are left out: key material is a secret)")
	fl.BoolVar(&f.force, "force", false, "replace --annotate and --extract files that exist (never through a symbolic link)")
}

// check refuses, before the inputs are read, what --annotate cannot do.
// --write-secrets and --force serve --extract too (extracting).
func (f *annotateFlags) check(files []string, extracting bool) error {
	if f.out == "" {
		if f.writeSecrets && !extracting {
			return errors.New("--write-secrets keeps the secrets in the --annotate or --extract files: give one of them too")
		}
		return nil
	}
	outs := annotateNames(f.out, len(files))
	for i, in := range files {
		if in == "-" {
			return errors.New("--annotate reads the inputs a second time: standard input cannot be")
		}
		// With --force the copy would replace the file it is read from.
		for _, out := range outs {
			a, errA := os.Stat(in)
			b, errB := os.Stat(out)
			if errA == nil && errB == nil && os.SameFile(a, b) {
				return fmt.Errorf("--annotate %s is input %d", out, i+1)
			}
		}
	}
	return nil
}

// annotateNames are the annotated copies' paths: out itself for one
// input, else out numbered from 1 before its extension, one per input in
// the order given, so that each copy keeps its input's frame numbers,
// which are the numbers the report names (a merged copy would renumber
// them).
func annotateNames(out string, n int) []string {
	if n == 1 {
		return []string{out}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = capture.NumberedName(out, i+1)
	}
	return names
}

// write writes the annotated copies of files for the findings of res and
// says on stderr what it wrote.
func (f *annotateFlags) write(cmd *cobra.Command, files []string, res *rules.Result) error {
	if f.out == "" {
		return nil
	}
	shown := displayNames(files)
	comments := make([]map[int64][]string, len(files))
	for i := range comments {
		comments[i] = map[int64][]string{}
	}
	add := func(file int, frame int64, c string) {
		if file >= 0 && file < len(files) && frame > 0 {
			comments[file][frame] = append(comments[file][frame], c)
		}
	}
	for i := range res.Findings {
		fd := &res.Findings[i]
		at, related := report.FindingComments(shown, fd)
		add(fd.At.File, fd.At.Frame, at)
		for j, r := range fd.Related {
			add(r.Frame.File, r.Frame.Frame, related[j])
		}
	}
	section := report.SafeText(fmt.Sprintf("kidscope %s: analyze %s; packet comments starting with \"kidscope \" are its findings (%d in the report)",
		kidscopeVersion(), shownArgs(), len(res.Findings)))
	var errs []error
	for i, out := range annotateNames(f.out, len(files)) {
		st, err := capture.Annotate(files[i], out, capture.AnnotateOptions{
			Section: section, Frames: comments[i], Secrets: f.writeSecrets, Force: f.force})
		if err != nil {
			errs = append(errs, writeError(err))
			continue
		}
		f.say(cmd.ErrOrStderr(), files[i], out, st)
	}
	return errors.Join(errs...)
}

// say is the one line about an annotated copy.
func (f *annotateFlags) say(w io.Writer, in, out string, st capture.AnnotateStats) {
	var extra []string
	if st.Uncommented > 0 {
		extra = append(extra, fmt.Sprintf("%d frames could hold no comment", st.Uncommented))
	}
	if st.SecretsDrop > 0 {
		extra = append(extra, fmt.Sprintf("%d decryption secrets blocks left out (--write-secrets keeps them)", st.SecretsDrop))
	}
	if st.Secrets > 0 {
		extra = append(extra, fmt.Sprintf("%d decryption secrets blocks kept ahead of the packets", st.Secrets))
	}
	if st.Truncated {
		extra = append(extra, "the input ends inside a frame: copied up to it")
	}
	more := ""
	if len(extra) > 0 {
		more = "; " + strings.Join(extra, "; ")
	}
	fmt.Fprintf(w, "kidscope: annotated %s: %s (%d frames, %d commented%s)\n",
		report.SafeText(filepath.Base(in)), report.SafeText(out), st.Frames, st.Commented, more)
}

// shownArgs is analyze's command line after "kidscope analyze", for the
// section comment of the files it writes.
func shownArgs() string { return strings.Join(os.Args[min(2, len(os.Args)):], " ") }
