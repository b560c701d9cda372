package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// pcapngMagic is how every file a Recorder writes begins (a Section Header
// Block).
const pcapngMagic = "\x0a\x0d\x0d\x0a"

// recordFrame is one Ethernet frame to record.
func recordFrame(t *testing.T, payload string) (gopacket.CaptureInfo, []byte) {
	data := ether(t, seg{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 9092, seq: 1, payload: payload}.ip4(t))
	return gopacket.CaptureInfo{Timestamp: t0, CaptureLength: len(data), Length: len(data)}, data
}

// modeOf is a file's permission bits, not following a symbolic link.
func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRecorderCreate: the first --write file is created new, 0600, and
// never through a symbolic link or into a file that was there before,
// unless Force, which replaces a regular file with a new inode and leaves
// the old one as it was.
func TestRecorderCreate(t *testing.T) {
	const before = "someone else's bytes"
	tests := []struct {
		name  string
		force bool
		// setup prepares dir/x.pcapng; victim is a file that must keep
		// its bytes (before), "" when none.
		setup   func(t *testing.T, dir, path string) (victim string)
		wantErr string // "" when the file must be written
		root    bool   // needs root (chown to another user)
	}{
		{name: "new", setup: func(*testing.T, string, string) string { return "" }},
		{name: "symlink to a file", wantErr: "is a symbolic link: refusing to write there", setup: symlinkTo},
		{name: "symlink to a file, force", force: true, wantErr: "is a symbolic link", setup: symlinkTo},
		{name: "dangling symlink", wantErr: "is a symbolic link", setup: func(t *testing.T, dir, path string) string {
			if err := os.Symlink(filepath.Join(dir, "target"), path); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := os.Lstat(filepath.Join(dir, "target")); err == nil {
					t.Error("the dangling link's target was created")
				}
			})
			return ""
		}},
		{name: "existing file", wantErr: "x.pcapng exists: refusing to overwrite it", setup: existing},
		{name: "existing file, force", force: true, setup: existing},
		{name: "hard link to another file, force", force: true, setup: func(t *testing.T, dir, path string) string {
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(victim, path); err != nil {
				t.Fatal(err)
			}
			return victim
		}},
		{name: "another user's file, force", force: true, root: true, setup: func(t *testing.T, dir, path string) string {
			victim := existing(t, dir, path)
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return victim
		}},
		{name: "directory", force: true, wantErr: "is not a regular file", setup: func(t *testing.T, _, path string) string {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
		{name: "fifo", wantErr: "is not a regular file", setup: func(t *testing.T, _, path string) string {
			if err := syscall.Mkfifo(path, 0o666); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
		{name: "another user's fifo, force", force: true, root: true, wantErr: "is a FIFO or device of another user's (uid 65534)", setup: func(t *testing.T, _, path string) string {
			if err := syscall.Mkfifo(path, 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "x.pcapng")
			victim := tt.setup(t, dir, path)
			var linkBefore string
			if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				linkBefore, _ = os.Readlink(path)
			}
			r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{Force: tt.force})
			if tt.wantErr != "" {
				if err == nil {
					r.Close()
					t.Fatalf("no error, want %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q, want one line with %q", err, tt.wantErr)
				}
				if !errors.Is(err, fs.ErrExist) {
					t.Errorf("error %q is not fs.ErrExist", err)
				}
				if linkBefore != "" {
					if now, _ := os.Readlink(path); now != linkBefore {
						t.Errorf("the link now points to %q, was %q", now, linkBefore)
					}
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				ci, data := recordFrame(t, "hello")
				if _, _, err := r.Write(ci, data); err != nil {
					t.Fatal(err)
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				if m := modeOf(t, path); m != 0o600 {
					t.Errorf("mode %v, want -rw-------", m)
				}
				if got := readString(t, path); !strings.HasPrefix(got, pcapngMagic) || !strings.Contains(got, "hello") {
					t.Errorf("x.pcapng does not hold the recorded frame")
				}
				var st syscall.Stat_t
				if err := syscall.Lstat(path, &st); err != nil {
					t.Fatal(err)
				}
				if int(st.Uid) != os.Geteuid() {
					t.Errorf("x.pcapng belongs to uid %d, want %d", st.Uid, os.Geteuid())
				}
			}
			if victim != "" {
				if got := readString(t, victim); got != before {
					t.Errorf("%s now holds %q, want it untouched", filepath.Base(victim), got)
				}
			}
			// A replacement leaves no temporary file behind.
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") {
					t.Errorf("left behind: %s", e.Name())
				}
			}
		})
	}
}

// symlinkTo plants x.pcapng as a link to a file that must not change.
func symlinkTo(t *testing.T, dir, path string) string {
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("someone else's bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	return victim
}

// existing makes x.pcapng a file with bytes of its own, and keeps its
// inode under another name: a replacement must not have written it.
func existing(t *testing.T, dir, path string) string {
	if err := os.WriteFile(path, []byte("someone else's bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(dir, "old-inode")
	if err := os.Link(path, keep); err != nil {
		t.Fatal(err)
	}
	return keep
}

// TestRecorderModeWhateverUmask: files are 0600 under any umask, a
// permissive one (0) or one that would leave them unwritable (0277).
func TestRecorderModeWhateverUmask(t *testing.T) {
	for _, mask := range []int{0, 0o022, 0o077, 0o277} {
		old := syscall.Umask(mask)
		dir := t.TempDir()
		path := filepath.Join(dir, "x.pcapng")
		r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{MaxSize: 200})
		if err == nil {
			for i := 0; i < 4 && err == nil; i++ {
				ci, data := recordFrame(t, strings.Repeat("k", 150))
				_, _, err = r.Write(ci, data)
			}
			if cerr := r.Close(); err == nil {
				err = cerr
			}
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatalf("umask %04o: %v", mask, err)
		}
		files := r.Files()
		if len(files) < 2 {
			t.Fatalf("umask %04o: %d files, want rotation", mask, len(files))
		}
		for _, f := range files {
			if m := modeOf(t, f); m != 0o600 {
				t.Errorf("umask %04o: %s has mode %v, want -rw-------", mask, filepath.Base(f), m)
			}
		}
	}
}

// TestRecorderRotation: the files a rotation creates are held to the
// same rules as the first: one there already stops the recording unless
// Force, a symbolic link even with it (the capture goes on: Unwritten).
func TestRecorderRotation(t *testing.T) {
	tests := []struct {
		name    string
		force   bool
		plant   string // what is at x-2.pcapng before: "", "file", "symlink"
		wantErr string
	}{
		{name: "nothing there"},
		{name: "file there", plant: "file", wantErr: "x-2.pcapng exists: refusing to overwrite it"},
		{name: "file there, force", plant: "file", force: true},
		{name: "symlink there, force", plant: "symlink", force: true, wantErr: "x-2.pcapng is a symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.pcapng")
			second := filepath.Join(dir, "x-2.pcapng")
			victim := filepath.Join(dir, "victim")
			const before = "planted"
			if err := os.WriteFile(victim, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			switch tt.plant {
			case "file":
				if err := os.Link(victim, second); err != nil {
					t.Fatal(err)
				}
			case "symlink":
				if err := os.Symlink(victim, second); err != nil {
					t.Fatal(err)
				}
			}
			r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{MaxSize: 300, Force: tt.force})
			if err != nil {
				t.Fatal(err)
			}
			var werr error
			for i := 0; i < 6 && werr == nil; i++ {
				ci, data := recordFrame(t, strings.Repeat("r", 200))
				_, _, werr = r.Write(ci, data)
			}
			if err := r.Close(); err != nil && werr == nil {
				werr = err
			}
			// The recording stops; the capture goes on (Write returns nil).
			if _, se := r.Unwritten(); se != nil && werr == nil {
				werr = se
			}
			if tt.wantErr != "" {
				if werr == nil || !strings.Contains(werr.Error(), tt.wantErr) {
					t.Errorf("error %v, want %q", werr, tt.wantErr)
				}
			} else {
				if werr != nil {
					t.Fatal(werr)
				}
				if len(r.Files()) < 3 {
					t.Fatalf("files %v, want at least 3", r.Files())
				}
				for _, f := range r.Files() {
					if m := modeOf(t, f); m != 0o600 {
						t.Errorf("%s has mode %v, want -rw-------", filepath.Base(f), m)
					}
					if got := readString(t, f); !strings.HasPrefix(got, pcapngMagic) {
						t.Errorf("%s is not a pcapng file", filepath.Base(f))
					}
				}
			}
			if got := readString(t, victim); got != before {
				t.Errorf("the planted file now holds %q", got)
			}
		})
	}
}

// TestRecorderStreams: with Force, a FIFO of the process's own is written
// as it is (a reader gets the pcapng), and so is /dev/null.
func TestRecorderStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pcapng")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(path) // until the writer closes
		got <- string(b)
	}()
	r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	ci, data := recordFrame(t, "through the pipe")
	if _, _, err := r.Write(ci, data); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if s := <-got; !strings.HasPrefix(s, pcapngMagic) || !strings.Contains(s, "through the pipe") {
		t.Errorf("the FIFO's reader got %d bytes, not the pcapng", len(s))
	}
	if m := modeOf(t, path); m.Type() != fs.ModeNamedPipe || m.Perm() != 0o600 {
		t.Errorf("the FIFO became %v", m)
	}
	null := nullDevice(t)
	r, err = NewRecorder(null, layers.LinkTypeEthernet, 65535, RecordOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Write(ci, data); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if m := modeOf(t, null); m.Type() != fs.ModeDevice|fs.ModeCharDevice || m.Perm() != 0o666 {
		t.Errorf("%s now has mode %v", null, m)
	}
}

// nullDevice is a character device that discards what is written to it:
// as root, a node of the test's own made like /dev/null (1, 3), so that a
// recorder that wrongly replaced it would break the test, not the
// machine; otherwise /dev/null itself, which such a user cannot replace.
func nullDevice(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return os.DevNull
	}
	path := filepath.Join(t.TempDir(), "null")
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatalf("mknod %s: %v", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

func TestUnsafeDirectory(t *testing.T) {
	tests := []struct {
		mode fs.FileMode
		warn bool
	}{
		{0o700, false},
		{0o755, false},
		{0o777, true},
		{0o777 | fs.ModeSticky, false},
		{0o773, true},
	}
	for _, tt := range tests {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tt.mode); err != nil {
			t.Fatal(err)
		}
		got := UnsafeDirectory(filepath.Join(dir, "x.pcapng"))
		if (got != "") != tt.warn {
			t.Errorf("mode %v: warning %q, want one: %v", tt.mode, got, tt.warn)
		}
	}
}

// TestRecorderSecrets: secrets blocks written after a file's first frame
// are moved ahead of its frames when it closes (Wireshark reads a secrets
// block only for what follows it), the frames intact and in order, and
// each rotated file starts with every secret written so far.
func TestRecorderSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pcapng")
	r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{MaxSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	first, second := []byte("CLIENT_RANDOM "+strings.Repeat("ab", 32)+" "+strings.Repeat("01", 48)+"\n"),
		[]byte("CLIENT_RANDOM "+strings.Repeat("cd", 32)+" "+strings.Repeat("02", 48)+"\n")
	if err := r.WriteSecrets(SecretsTLSKeyLog, first); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if i == 1 {
			if err := r.WriteSecrets(SecretsTLSKeyLog, second); err != nil {
				t.Fatal(err)
			}
		}
		ci, data := recordFrame(t, strings.Repeat("r", 196)+fmt.Sprintf("r%03d", i))
		if _, _, err := r.Write(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if len(r.Files()) < 3 {
		t.Fatalf("files %v, want at least 3", r.Files())
	}
	var all []string
	for _, name := range r.Files() {
		rd, err := Open([]string{name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got, payloads []string
		frames := 0
		rd.OnSecrets(func(_ int, typ uint32, data []byte) {
			if typ != SecretsTLSKeyLog {
				t.Errorf("%s: secrets type %#x", filepath.Base(name), typ)
			}
			got = append(got, fmt.Sprintf("%s after %d frames", data[:len("CLIENT_RANDOM ab")], frames))
		})
		for {
			var p Packet
			if err := rd.Next(&p); err != nil {
				break
			}
			frames++
			payloads = append(payloads, string(p.Segment[len(p.Segment)-4:]))
		}
		rd.Close()
		want := []string{"CLIENT_RANDOM ab after 0 frames", "CLIENT_RANDOM cd after 0 frames"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: secrets %v, want %v", filepath.Base(name), got, want)
		}
		all = append(all, payloads...)
	}
	if want := "[r000 r001 r002 r003 r004 r005]"; fmt.Sprint(all) != want {
		t.Errorf("frames %v, want %s", all, want)
	}
}
