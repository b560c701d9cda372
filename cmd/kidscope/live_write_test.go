package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// runUmask runs the binary under a umask (sh sets it; the test process's
// own is shared by the tests that run in parallel).
func runUmask(t *testing.T, umask string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `umask "$0"; exec "$@"`, umask, binary}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stderr.String(), code
}

// TestLiveWriteRefuses: --write never writes through a symbolic link and
// never overwrites a file without --force; it says so in one line and
// exits 2, before capturing (so this needs no privilege).
func TestLiveWriteRefuses(t *testing.T) {
	const before = "not yours"
	tests := []struct {
		name    string
		force   bool
		plant   func(t *testing.T, path, victim string)
		wantErr string
	}{
		{name: "symlink", plant: func(t *testing.T, path, victim string) {
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "x.pcapng is a symbolic link: refusing to write there"},
		{name: "symlink, force", force: true, plant: func(t *testing.T, path, victim string) {
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "x.pcapng is a symbolic link: refusing to write there"},
		{name: "existing file", plant: func(t *testing.T, path, victim string) {
			if err := os.Link(victim, path); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "x.pcapng exists: refusing to overwrite it (use --force)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, victim := filepath.Join(dir, "x.pcapng"), filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, path, victim)
			args := []string{"live", "-i", "lo", "--write", path, "--duration", "1s", "-o", "json"}
			if tt.force {
				args = append(args, "--force")
			}
			stderr, code := runUmask(t, "022", args...)
			msg := strings.TrimSpace(stderr)
			if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, msg, tt.wantErr)
			}
			if b, _ := os.ReadFile(victim); string(b) != before {
				t.Errorf("the planted target now holds %q", b)
			}
		})
	}
}

// TestLiveWriteMode: the --write file is 0600 under a umask of 0, and
// --force replaces a file another user made (world-writable, theirs) with
// a new one of the capture's own, leaving theirs as it was.
func TestLiveWriteMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.pcapng")
	if stderr, code := runUmask(t, "0", "live", "-i", "lo", "--write", fresh, "--duration", "1s", "-o", "json"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	planted := filepath.Join(dir, "planted.pcapng")
	if err := os.WriteFile(planted, []byte("theirs"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old-inode")
	if err := os.Link(planted, old); err != nil {
		t.Fatal(err)
	}
	if stderr, code := runUmask(t, "0", "live", "-i", "lo", "--write", planted, "--force", "--duration", "1s", "-o", "json"); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	for _, f := range []string{fresh, planted} {
		fi, err := os.Lstat(f)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != 0o600 || st.Uid != 0 {
			t.Errorf("%s: mode %v owner %d, want -rw------- and root", filepath.Base(f), fi.Mode(), st.Uid)
		}
	}
	if b, _ := os.ReadFile(old); string(b) != "theirs" {
		t.Errorf("the replaced file's old inode now holds %q", b)
	}
	if out, errOut, code := runKidscope(t, "analyze", "-o", "json", planted); code != 0 {
		t.Errorf("analyze of the replaced file: exit %d: %s %s", code, errOut, out)
	}
	// A null device is not a regular file: refused, and written into with
	// --force. It is a node of the test's own (1, 3, as /dev/null): a bug
	// that replaced it must fail this test, not break the machine's
	// /dev/null for every later process.
	null := filepath.Join(t.TempDir(), "null")
	if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatalf("mknod %s: %v", null, err)
	}
	if err := os.Chmod(null, 0o666); err != nil {
		t.Fatal(err)
	}
	if stderr, code := runUmask(t, "022", "live", "-i", "lo", "--write", null, "--duration", "1s", "-o", "json"); code != 2 || !strings.Contains(stderr, null+" is not a regular file") {
		t.Errorf("--write %s: exit %d: %s", null, code, stderr)
	}
	if stderr, code := runUmask(t, "022", "live", "-i", "lo", "--write", null, "--force", "--duration", "1s", "-o", "json"); code != 0 {
		t.Errorf("--write %s --force: exit %d: %s", null, code, stderr)
	}
	if fi, err := os.Stat(null); err != nil || fi.Mode()&os.ModeCharDevice == 0 || fi.Mode().Perm() != 0o666 {
		t.Errorf("%s is now %v (%v)", null, fi.Mode(), err)
	}
}
