package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kidscope/kidscope/internal/size"

	"github.com/kidscope/kidscope/pipeline"
)

// progressBar draws, on a terminal's stderr, how far the reading of the
// input files has come: bytes, packets, rate and time left.
type progressBar struct {
	w     io.Writer
	total int64 // bytes of the input files (0 when unknown: stdin)
	start time.Time
	shown bool
}

// newProgressBar returns nil unless stderr is a terminal that can redraw a
// line and progress is wanted.
func newProgressBar(files []string, off bool) *progressBar {
	if off || !canRedraw(os.Stderr) {
		return nil
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if f == "-" || err != nil {
			return &progressBar{w: os.Stderr, start: time.Now()}
		}
		total += st.Size()
	}
	return &progressBar{w: os.Stderr, total: total, start: time.Now()}
}

func (b *progressBar) tick(p pipeline.Progress) {
	if b == nil {
		return
	}
	el := time.Since(b.start).Seconds()
	rate := int64(float64(p.FileBytes) / max(el, 1e-3))
	line := fmt.Sprintf("%s read, %d packets, %s/s", size.Human(p.FileBytes), p.Packets, size.Human(rate))
	if b.total > 0 {
		frac := min(float64(p.FileBytes)/float64(b.total), 1)
		const width = 24
		done := int(frac * width)
		bar := make([]byte, width)
		for i := range bar {
			bar[i] = '.'
			if i < done {
				bar[i] = '#'
			}
		}
		eta := "?"
		if frac > 0 {
			eta = (time.Duration(el/frac*(1-frac)) * time.Second).Round(time.Second).String()
		}
		line = fmt.Sprintf("[%s] %3.0f%%  %s  ETA %s", bar, frac*100, line, eta)
	}
	fmt.Fprintf(b.w, "\r\x1b[K%s", line)
	b.shown = true
}

func (b *progressBar) clear() {
	if b != nil && b.shown {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}
