package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// wholeFile is an output written under a temporary name beside its own
// and given its name only when whole (analyze --annotate, --extract): a
// run that fails (a full disk) or is killed never leaves a part of it
// under the name, only, if killed, a hidden .NAME.*.tmp.
type wholeFile struct {
	*os.File
	name   string
	force  bool
	stream bool // a FIFO or device written as it is (--force): no rename
}

// createWhole checks name as createFile would (a file there is refused
// without force, a symbolic link even with it, a FIFO or device of root's
// or the process's own is written as it is with it), and creates the
// temporary file the output is written to.
func createWhole(name string, force bool) (*wholeFile, error) {
	fi, err := os.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("write %s: %w", name, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &ExistsError{Path: name, Kind: "a symbolic link"}
	case fi.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice) != 0 && force:
		f, err := openStream(name, fi)
		if err != nil {
			return nil, err
		}
		return &wholeFile{File: f, name: name, stream: true}, nil
	case !fi.Mode().IsRegular():
		return nil, &ExistsError{Path: name, Kind: "not a regular file"}
	case !force:
		return nil, &ExistsError{Path: name}
	}
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp") // O_EXCL, 0600
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if err := exactMode(f, name); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &wholeFile{File: f, name: name, force: force}, nil
}

// commit makes the whole output durable and gives it its name: over a
// regular file with force (a rename replaces the entry and follows
// nothing), else only where nothing is (a hard link fails on any name
// that exists, a symbolic link planted meanwhile included).
func (w *wholeFile) commit() error {
	if w.stream {
		return w.Close()
	}
	tmp := w.Name()
	err := w.Sync()
	if e := w.Close(); err == nil {
		err = e
	}
	if err == nil {
		if w.force {
			err = os.Rename(tmp, w.name)
		} else if err = os.Link(tmp, w.name); errors.Is(err, fs.ErrExist) {
			err = &ExistsError{Path: w.name}
		} else if err == nil {
			err = os.Remove(tmp)
		}
	}
	if err != nil {
		os.Remove(tmp)
		var ee *ExistsError
		if errors.As(err, &ee) {
			return err
		}
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	return nil
}

// abort removes the temporary file: nothing is left under the name.
func (w *wholeFile) abort() {
	w.Close()
	if !w.stream {
		os.Remove(w.Name())
	}
}
