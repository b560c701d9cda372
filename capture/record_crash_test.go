package capture

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// wholeBlocks walks the blocks of the file on disk from at, and returns
// where the last whole one ends; ok is false when the file does not end
// there (a block cut short: what a process killed at that moment leaves).
func wholeBlocks(t *testing.T, f *os.File, at int64) (end int64, ok bool) {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	var head [8]byte
	for at < fi.Size() {
		if _, err := f.ReadAt(head[:], at); err != nil {
			if err == io.EOF {
				return at, false
			}
			t.Fatal(err)
		}
		n := int64(binary.LittleEndian.Uint32(head[4:]))
		if n < 12 || at+n > fi.Size() {
			return at, false
		}
		at += n
	}
	return at, true
}

// TestRecorderOnDiskWhole: after every frame, secrets block, tick and
// rotation the files on disk end where a block ends, so that a process
// killed between any two of them leaves files read whole; it loses only
// what it held in memory (at most a tick's frames, or a MiB).
func TestRecorderOnDiskWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pcapng")
	r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{MaxSize: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSecrets(SecretsTLSKeyLog, []byte("CLIENT_RANDOM 00 00\n")); err != nil {
		t.Fatal(err)
	}
	readers := map[string]*os.File{}
	ends := map[string]int64{}
	check := func(when string) {
		for _, name := range r.Files() {
			f := readers[name]
			if f == nil {
				if f, err = os.Open(name); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				readers[name] = f
			}
			end, ok := wholeBlocks(t, f, ends[name])
			if !ok {
				t.Fatalf("%s: %s ends inside a block (after %d whole bytes)", when, filepath.Base(name), end)
			}
			ends[name] = end
		}
	}
	check("created")
	for i := range 2500 {
		ci, data := recordFrame(t, strings.Repeat("w", 1+i*37%8000))
		if _, _, err := r.Write(ci, data); err != nil {
			t.Fatal(err)
		}
		check("a frame written")
		if i%97 == 0 {
			if err := r.WriteSecrets(SecretsTLSKeyLog, []byte("CLIENT_RANDOM 01 01\n")); err != nil {
				t.Fatal(err)
			}
			check("a secrets block written")
		}
		if i%500 == 0 {
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			check("a tick")
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	ends = map[string]int64{}
	check("closed")
	if len(r.Files()) < 3 {
		t.Errorf("files %v: the test wants rotations", r.Files())
	}
}

// TestRecorderSecretsAheadInPlace: a file's late secrets end up in the
// room kept ahead of its frames, as one decryption secrets block, and
// the late blocks become blocks readers skip; nothing else in the file
// moves (each step of the move was one write readers take whole).
func TestRecorderSecretsAheadInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pcapng")
	r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{})
	if err != nil {
		t.Fatal(err)
	}
	early, late := "CLIENT_RANDOM aa aa\n", "CLIENT_RANDOM bb bb\n"
	if err := r.WriteSecrets(SecretsTLSKeyLog, []byte(early)); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ci, data := recordFrame(t, strings.Repeat("f", 100+i))
		if _, _, err := r.Write(ci, data); err != nil {
			t.Fatal(err)
		}
		if i == 10 {
			if err := r.WriteSecrets(SecretsTLSKeyLog, []byte(late)); err != nil {
				t.Fatal(err)
			}
		}
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("the file was replaced: the move is to be made in place")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	var order []string
	for at := 0; at+8 <= len(b); {
		typ, n := le.Uint32(b[at:]), int(le.Uint32(b[at+4:]))
		switch typ {
		case ngDSB:
			text := strings.TrimRight(string(b[at+16:at+16+int(le.Uint32(b[at+12:]))]), "\n")
			order = append(order, "secrets "+text)
		case ngEPB:
			if len(order) == 0 || order[len(order)-1] != "frames" {
				order = append(order, "frames")
			}
		case ngRoom:
			order = append(order, "skipped")
		}
		at += n
	}
	want := []string{"secrets " + strings.TrimSpace(early), "secrets " + strings.TrimSpace(late), "frames", "skipped", "frames"}
	if strings.Join(order, " | ") != strings.Join(want, " | ") {
		t.Errorf("blocks:\n%s\nwant:\n%s", strings.Join(order, " | "), strings.Join(want, " | "))
	}
}
