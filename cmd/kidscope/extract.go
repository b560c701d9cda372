package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/rules"
)

// extractFlags are analyze's flags that write, per finding, a small
// capture of the connection it is about (--extract), for a bug ticket.
type extractFlags struct {
	dir     string
	finding int
}

func (f *extractFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "extract", "", "also write, into this directory, a small pcapng per finding: its connection's frames (and those of its related frames) from the connection's start to the last frame the finding names, commented as --annotate comments them")
	fl.IntVar(&f.finding, "finding", 0, "--extract only the Nth finding of the report (1 is the first, in the order of -o json)")
}

func (f *extractFlags) check(files []string) error {
	if f.dir == "" {
		if f.finding != 0 {
			return errors.New("--finding chooses what --extract writes: give --extract too")
		}
		return nil
	}
	if f.finding < 0 {
		return fmt.Errorf("--finding %d: findings are counted from 1", f.finding)
	}
	if slices.Contains(files, "-") {
		return errors.New("--extract reads the inputs a second time: standard input cannot be")
	}
	return nil
}

// connKey is a TCP connection's two endpoints, the lower first, so that
// both directions have the same key.
type connKey struct{ a, b netip.AddrPort }

func newConnKey(x, y netip.AddrPort) connKey {
	if x.Compare(y) > 0 {
		x, y = y, x
	}
	return connKey{x, y}
}

// extract is what one finding's capture holds, of the finding's file.
type extract struct {
	index  int   // of the finding in the report, from 0
	last   int64 // the last frame the finding names
	first  int64 // the first frame it names
	keys   map[connKey]bool
	byKey  map[connKey][]int64 // frames chosen, by connection
	frames []int64             // chosen, in order
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// write writes the extracts of the findings of res, as said on stderr.
// Each reads its finding's input: twice for the connections (the frames
// of the finding's connections, from each one's last SYN before the
// finding's first frame), once more per extract for the copy.
func (f *extractFlags) write(cmd *cobra.Command, files []string, res *rules.Result, secrets, force bool) error {
	if f.dir == "" {
		return nil
	}
	if f.finding > len(res.Findings) {
		return fmt.Errorf("--finding %d: the report has %d findings", f.finding, len(res.Findings))
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("--extract: %w", err)
	}
	shown := displayNames(files)
	byFile := map[int][]*extract{}
	for i := range res.Findings {
		if f.finding != 0 && i != f.finding-1 {
			continue
		}
		fd := &res.Findings[i]
		x := &extract{index: i, first: fd.At.Frame, last: fd.At.Frame, keys: map[connKey]bool{}}
		if fd.Conn.Client.IsValid() {
			x.keys[newConnKey(fd.Conn.Client, fd.Conn.Broker)] = true
		}
		for _, r := range fd.Related {
			if r.Frame.File == fd.At.File {
				x.first, x.last = min(x.first, r.Frame.Frame), max(x.last, r.Frame.Frame)
			}
		}
		byFile[fd.At.File] = append(byFile[fd.At.File], x)
	}
	var errs []error
	for file, xs := range byFile {
		if file < 0 || file >= len(files) {
			continue
		}
		if err := chooseFrames(files[file], xs, res); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, x := range xs {
			fd := &res.Findings[x.index]
			comments := map[int64][]string{}
			at, related := report.FindingComments(shown, fd)
			comments[fd.At.Frame] = append(comments[fd.At.Frame], at)
			for j, r := range fd.Related {
				if r.Frame.File == fd.At.File {
					comments[r.Frame.Frame] = append(comments[r.Frame.Frame], related[j])
				}
			}
			out := filepath.Join(f.dir, fmt.Sprintf("finding-%d-%s.pcapng", x.index+1, unsafeName.ReplaceAllString(fd.Rule, "_")))
			frames := x.frames
			st, err := capture.Annotate(files[file], out, capture.AnnotateOptions{
				Section: report.SafeText(fmt.Sprintf("kidscope %s: finding %d of analyze %s: frames of %s (frame numbers in the comments are the input's)",
					kidscopeVersion(), x.index+1, shownArgs(), shown[file])),
				Frames: comments, Secrets: secrets, Force: force,
				Keep: func(n int64) bool { _, ok := slices.BinarySearch(frames, n); return ok },
			})
			if err != nil {
				errs = append(errs, writeError(err))
				continue
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kidscope: finding %d (%s): %s (%d frames of %s)\n",
				x.index+1, fd.Rule, report.SafeText(out), st.Written, report.SafeText(filepath.Base(shown[file])))
		}
	}
	return errors.Join(errs...)
}

// chooseFrames reads file twice: for the connections of the frames the
// findings name, then for the frames of those connections, from the last
// SYN of each before the finding's first frame up to its last frame.
func chooseFrames(file string, xs []*extract, res *rules.Result) error {
	want := map[int64]bool{}
	for _, x := range xs {
		fd := &res.Findings[x.index]
		want[fd.At.Frame] = true
		for _, r := range fd.Related {
			if r.Frame.File == fd.At.File {
				want[r.Frame.Frame] = true
			}
		}
	}
	keyOf := map[int64]connKey{}
	if err := eachTCP(file, func(frame int64, k connKey, syn bool) {
		if want[frame] {
			keyOf[frame] = k
		}
	}); err != nil {
		return err
	}
	for _, x := range xs {
		fd := &res.Findings[x.index]
		if k, ok := keyOf[fd.At.Frame]; ok {
			x.keys[k] = true
		}
		for _, r := range fd.Related {
			if k, ok := keyOf[r.Frame.Frame]; ok && r.Frame.File == fd.At.File {
				x.keys[k] = true
			}
		}
	}
	err := eachTCP(file, func(frame int64, k connKey, syn bool) {
		for _, x := range xs {
			if frame > x.last || !x.keys[k] {
				continue
			}
			if x.byKey == nil {
				x.byKey = map[connKey][]int64{}
			}
			if syn && frame <= x.first {
				// A new connection on the same endpoints: the one the
				// finding is about starts here.
				x.byKey[k] = x.byKey[k][:0]
			}
			x.byKey[k] = append(x.byKey[k], frame)
		}
	})
	for _, x := range xs {
		for _, fs := range x.byKey {
			x.frames = append(x.frames, fs...)
		}
		slices.Sort(x.frames)
		x.byKey = nil
	}
	return err
}

// eachTCP calls fn for each TCP frame of file.
func eachTCP(file string, fn func(frame int64, k connKey, syn bool)) error {
	r, err := capture.Open([]string{file}, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	var p capture.Packet
	for {
		err := r.Next(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			break // the report names the input's problem; what was read is used
		}
		src, dst := p.Network.Endpoints()
		sa, ok1 := netip.AddrFromSlice(src.Raw())
		da, ok2 := netip.AddrFromSlice(dst.Raw())
		if !ok1 || !ok2 || p.TCP == nil {
			continue
		}
		k := newConnKey(netip.AddrPortFrom(sa.Unmap(), uint16(p.TCP.SrcPort)), netip.AddrPortFrom(da.Unmap(), uint16(p.TCP.DstPort)))
		fn(p.Frame, k, p.TCP.SYN && !p.TCP.ACK)
	}
	return nil
}
