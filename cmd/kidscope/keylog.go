package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/kidscope/kidscope/capture"
)

// keyLogFollower reads what is appended to key log files while live runs
// (a client writes a line as each of its connections starts). The files
// are opened once, before live gives up root, and read from where the
// last whole line ended.
type keyLogFollower struct {
	files []*os.File
	off   []int64
	buf   []byte
}

func newKeyLogFollower(names []string) (*keyLogFollower, error) {
	k := &keyLogFollower{buf: make([]byte, 64<<10)}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			k.close()
			return nil, fmt.Errorf("--tls-keylog: %w", err)
		}
		k.files = append(k.files, f)
		k.off = append(k.off, 0)
	}
	k.more() // what is there already was read with the options
	return k, nil
}

// more returns the whole lines written since the last call: a line still
// being written is read at the next one.
func (k *keyLogFollower) more() []byte {
	var out []byte
	for i, f := range k.files {
		for {
			n, err := f.ReadAt(k.buf, k.off[i])
			end := bytes.LastIndexByte(k.buf[:n], '\n') + 1
			out = append(out, k.buf[:end]...)
			k.off[i] += int64(end)
			if err != nil || end == 0 {
				break // the end of what is written (io.EOF), or a line longer than buf
			}
		}
	}
	return out
}

func (k *keyLogFollower) close() {
	for _, f := range k.files {
		f.Close()
	}
}

// recordSecrets starts a --write-secrets file with the key log text read
// so far. With none yet, a comment line stands for it: a reader that
// meets a secrets block before any connection (kidscope, a second pass of
// Wireshark) holds what it cannot decrypt yet, for the keys that follow.
func recordSecrets(rec *capture.Recorder, known []byte) error {
	text := known
	if len(text) == 0 {
		text = []byte("# kidscope live --write-secrets: the key log lines follow as clients write them\n")
	}
	return rec.WriteSecrets(capture.SecretsTLSKeyLog, text)
}
