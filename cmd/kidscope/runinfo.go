package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

	"github.com/kidscope/kidscope/pipeline"
	"github.com/kidscope/kidscope/report"
)

// runOptions are the options that shape the results, for the report's
// run: as given, and the caps as in effect.
func runOptions(in *inputFlags, rf *ruleFlags, opt *pipeline.Options) report.RunOptions {
	return report.RunOptions{
		Ports: in.ports, Profile: rf.profile, HeaderV3: in.headerV3, Rules: rf.rules, SkipRules: rf.skipRules,
		MinSeverity: rf.minSeverity, Filter: in.filter, BPFRaw: in.bpfRaw, UUID: in.uuid, TLSKeyLogs: in.tlsKeylogs,
		Workers: max(in.workers, 1), MaxFrame: int(opt.Decode.MaxFrameSize),
		MaxConnections: opt.Reassembly.MaxConnections, MaxBuffer: opt.Reassembly.MaxPagesTotal,
		MaxBufferPerConnection: opt.Reassembly.MaxPagesPerConnection,
		MaxResyncBuffer:        opt.ResyncBytes, MaxBodyBuffer: opt.BodyBytes,
	}
}

// inputHashes computes the size and SHA-256 of analyze's inputs while the
// analysis reads them: standard input through a reader that hashes what
// the analysis takes from it, regular files by a second read of their own
// on one more goroutine (the analysis maps classic pcap files rather than
// reading them, and the second read is mostly served by the page cache
// the first one fills). Anything else (a FIFO, /dev/fd/N of a shell's
// <(…)) can be read only once: it is not hashed, and says why.
type inputHashes struct {
	inputs []report.Input
	stdin  *hashingReader
	done   chan struct{}
}

// hashInputs starts hashing files (as given; "-" is stdin) and returns
// the reader the analysis should read for stdin; with skip, it only names
// them. Call wait after the analysis for the inputs.
func hashInputs(ctx context.Context, files []string, stdin io.Reader, skip bool) (*inputHashes, io.Reader) {
	h := &inputHashes{inputs: make([]report.Input, len(files)), done: make(chan struct{})}
	var regular []int
	for i, name := range files {
		in := &h.inputs[i]
		in.Kind, in.Name = report.InputFile, name
		if name == "-" {
			in.Kind, in.Name = report.InputStdin, "stdin"
		}
		if skip {
			in.Unhashed = "--no-hash"
			continue
		}
		if name == "-" {
			if stdin != nil && h.stdin == nil {
				h.stdin = &hashingReader{r: stdin, h: sha256.New(), index: i}
				stdin = h.stdin
			}
			continue
		}
		st, err := os.Stat(name)
		switch {
		case err != nil:
			in.Unhashed = "not read: " + errText(err)
		case !st.Mode().IsRegular():
			in.Unhashed = "not a regular file: read once, by the analysis"
		default:
			regular = append(regular, i)
		}
	}
	go func() {
		defer close(h.done)
		for _, i := range regular {
			in := &h.inputs[i]
			n, sum, err := hashFile(ctx, in.Name)
			if err != nil {
				in.Unhashed = errText(err)
				continue
			}
			in.Size, in.SHA256 = &n, sum
		}
	}()
	return h, stdin
}

// wait waits for the hashes and returns the inputs.
func (h *inputHashes) wait() []report.Input {
	<-h.done
	if r := h.stdin; r != nil {
		in := &h.inputs[r.index]
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.eof {
			n := r.n
			in.Size, in.SHA256 = &n, hex.EncodeToString(r.h.Sum(nil))
		} else {
			in.Unhashed = fmt.Sprintf("standard input was not read to its end (%d bytes read)", r.n)
		}
	}
	return h.inputs
}

func errText(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted before the hash was complete"
	}
	return report.SafeText(err.Error())
}

// hashFile is the size and SHA-256 (hex) of the file's bytes.
func hashFile(ctx context.Context, name string) (int64, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return 0, "", err
		}
		k, err := f.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		if err == io.EOF {
			return n, hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return 0, "", err
		}
	}
}

// hashingReader hashes and counts what is read through it, and notes the
// end.
type hashingReader struct {
	r     io.Reader
	index int
	mu    sync.Mutex // the analysis may read on another goroutine
	h     hash.Hash
	n     int64
	eof   bool
}

func (r *hashingReader) Read(p []byte) (int, error) {
	k, err := r.r.Read(p)
	r.mu.Lock()
	r.h.Write(p[:k])
	r.n += int64(k)
	if err == io.EOF {
		r.eof = true
	}
	r.mu.Unlock()
	return k, err
}
