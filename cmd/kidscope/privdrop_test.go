package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPlanDrop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the plans differ for root, which CI runs as")
	}
	tests := []struct {
		name    string
		given   bool
		wantUID int // -1: no plan (stays root)
		wantErr string
	}{
		{name: "", wantUID: 65534},
		{name: "nobody", given: true, wantUID: 65534},
		{name: "65534", given: true, wantUID: 65534},
		{name: "root", given: true, wantUID: -1},
		{name: "0", given: true, wantUID: -1},
		{name: "no-such-user-here", given: true, wantErr: "-Z no-such-user-here: "},
	}
	for _, tt := range tests {
		p, err := planDrop(tt.name, tt.given)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("-Z %q: error %v, want %q", tt.name, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("-Z %q: %v", tt.name, err)
		case tt.wantUID < 0 && p != nil:
			t.Errorf("-Z %q: drops to uid %d, want no drop", tt.name, p.uid)
		case tt.wantUID >= 0 && (p == nil || p.uid != tt.wantUID):
			t.Errorf("-Z %q: plan %+v, want uid %d", tt.name, p, tt.wantUID)
		}
	}
}

func TestMayCreateIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give directories to other users")
	}
	p := &dropPlan{name: "nobody", uid: 65534, gid: 65534, groups: []int{4242}}
	tests := []struct {
		uid, gid int
		mode     os.FileMode
		want     bool
	}{
		{0, 0, 0o700, false},
		{0, 0, 0o755, false},
		{0, 0, 0o777, true},
		{0, 0, 0o1777, true},
		{0, 0, 0o776, false}, // others may write but not search
		{65534, 0, 0o700, true},
		{65534, 0, 0o077, false}, // the owner's bits are the ones that count
		{0, 65534, 0o770, true},
		{0, 4242, 0o770, true}, // a supplementary group
		{0, 4242, 0o707, false},
	}
	for _, tt := range tests {
		parent := searchableTempDir(t)
		dir := filepath.Join(parent, "d")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, tt.uid, tt.gid); err != nil {
			t.Fatal(err)
		}
		mode := tt.mode.Perm()
		if tt.mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if got := p.mayCreateIn(dir); got != tt.want {
			t.Errorf("dir %d:%d %04o: mayCreateIn %v, want %v", tt.uid, tt.gid, tt.mode, got, tt.want)
		}
		// A directory on the way that nobody may not search hides it.
		if err := os.Chmod(parent, 0o700); err != nil {
			t.Fatal(err)
		}
		if p.mayCreateIn(dir) {
			t.Errorf("dir %d:%d %04o under a 0700 directory of root's: nobody may create files there, it says", tt.uid, tt.gid, tt.mode)
		}
	}
}

// searchableTempDir is a temporary directory other users may search (those
// of t.TempDir sit in one only its owner may).
func searchableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kidscope-drop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// procIDs reads the Uid, Gid and Groups lines of a /proc status file: the
// real, effective, saved and filesystem IDs, and the groups.
func procIDs(t *testing.T, status string) (uids, gids, groups string) {
	t.Helper()
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		v = strings.Join(strings.Fields(v), " ")
		switch k {
		case "Uid":
			uids = v
		case "Gid":
			gids = v
		case "Groups":
			groups = v
		}
	}
	return uids, gids, groups
}

// sink listens on a loopback port and reads whatever comes.
func sink(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// metricValue scrapes one unlabelled metric (0 when it is not there).
func metricValue(t *testing.T, url, name string, stderr *lockedBuffer) float64 {
	t.Helper()
	return metricValues(t, url, stderr)[name]
}

// metricValues scrapes every unlabelled metric at once: values of one
// moment (near enough: live reads them one after another).
func metricValues(t *testing.T, url string, stderr *lockedBuffer) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("%v; live's stderr %s", err, stderr.String())
	}
	defer resp.Body.Close()
	values := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s %q: %v", name, v, err)
		}
		values[name] = f
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return values
}

// sendUntil sends to port over new connections until live's metric name
// reaches want. Only a live that stopped capturing makes it wait long:
// the deadline is there to fail the test rather than hang it.
func sendUntil(t *testing.T, port int, url, name string, want float64, stderr *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for metricValue(t, url, name, stderr) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached %v; stderr %s", name, want, stderr.String())
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(strings.Repeat("x", 1000)))
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
}

// stopLive interrupts live and waits for it; it must exit 0.
func stopLive(t *testing.T, cmd *exec.Cmd, stdout io.ReadCloser, stderr *lockedBuffer) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("live: %v; stderr %s", err, stderr.String())
	}
}

// packetsIn is what analyze counts in a file.
func packetsIn(t *testing.T, file string, port int) int {
	t.Helper()
	out, errOut, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "-p", strconv.Itoa(port), file)
	if code != 0 {
		t.Fatalf("analyze %s: exit %d: %s", file, code, errOut)
	}
	var doc struct {
		Summary struct {
			Packets int `json:"packets"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Summary.Packets
}

// TestLiveDropsPrivileges: started as root, live runs as the -Z user
// (nobody without -Z) once it captures, and what it captures after the
// drop still reaches the --write file; -Z root keeps root.
func TestLiveDropsPrivileges(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	four := func(id string) string { return strings.Repeat(id+" ", 3) + id }
	nu, ng := four(nobody.Uid), four(nobody.Gid)
	tests := []struct {
		name  string
		args  []string
		wantU string // the Uid line: real, effective, saved, filesystem
		wantG string
	}{
		{name: "default", wantU: nu, wantG: ng},
		{name: "-Z nobody", args: []string{"-Z", "nobody"}, wantU: nu, wantG: ng},
		{name: "--relinquish-privileges=UID", args: []string{"--relinquish-privileges=" + nobody.Uid}, wantU: nu, wantG: ng},
		{name: "-Z root", args: []string{"-Z", "root"}, wantU: "0 0 0 0", wantG: "0 0 0 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port := sink(t)
			written := filepath.Join(t.TempDir(), "x.pcapng")
			args := append([]string{"-i", "lo", "-p", strconv.Itoa(port), "--write", written, "-o", "ndjson",
				"--fail-on", "never", "--duration", "10m"}, tt.args...)
			cmd, stdout, stderr, url := startLive(t, args...)
			defer cmd.Process.Kill()
			// Packets counted means the pipeline runs, which it does only
			// after the drop.
			sendUntil(t, port, url, "kidscope_packets_total", 1, stderr)
			// Every thread: credentials are per thread in Linux.
			tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", cmd.Process.Pid))
			if err != nil || len(tasks) < 2 {
				t.Fatalf("threads of live: %v %v", tasks, err)
			}
			for _, task := range tasks {
				uids, gids, groups := procIDs(t, task)
				if uids != tt.wantU || gids != tt.wantG {
					t.Errorf("%s: Uid %q Gid %q, want %q and %q", task, uids, gids, tt.wantU, tt.wantG)
				}
				if tt.wantU != "0 0 0 0" && strings.Contains(" "+groups+" ", " 0 ") {
					t.Errorf("%s kept root's group: Groups %q", task, groups)
				}
			}
			stopLive(t, cmd, stdout, stderr)
			if n := packetsIn(t, written, port); n < 1 {
				t.Errorf("%s holds %d packets", written, n)
			}
			if fi, err := os.Lstat(written); err != nil || fi.Mode() != 0o600 {
				t.Errorf("%s: %v %v, want -rw-------", written, fi.Mode(), err)
			}
		})
	}
}

// TestLiveRotatesAfterDrop: the files --write-max-size rotates to are
// created by the -Z user, 0600, in a directory it may write (here one
// like /var/tmp); live refuses up front a directory it may not write.
func TestLiveRotatesAfterDrop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	t.Run("sticky world-writable directory", func(t *testing.T) {
		dir := filepath.Join(searchableTempDir(t), "shared")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		port := sink(t)
		written := filepath.Join(dir, "x.pcapng")
		cmd, stdout, stderr, url := startLive(t, "-i", "lo", "-p", strconv.Itoa(port), "--write", written,
			"--write-max-size", "4000", "-o", "ndjson", "--fail-on", "never", "--duration", "10m")
		defer cmd.Process.Kill()
		sendUntil(t, port, url, "kidscope_bytes_total", 20000, stderr)
		stopLive(t, cmd, stdout, stderr)
		if strings.Contains(stderr.String(), "warning") {
			t.Errorf("a warning for a sticky directory: %s", stderr.String())
		}
		files, _ := filepath.Glob(filepath.Join(dir, "x*.pcapng"))
		if len(files) < 3 {
			t.Fatalf("files %v, want the rotation to have made at least 3", files)
		}
		for _, f := range files {
			fi, err := os.Lstat(f)
			if err != nil {
				t.Fatal(err)
			}
			owner, want := strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)), nobody.Uid
			if f == written {
				want = "0" // created before the drop
			}
			if fi.Mode() != 0o600 || owner != want {
				t.Errorf("%s: mode %v owner %s, want -rw------- and %s", filepath.Base(f), fi.Mode(), owner, want)
			}
			if packetsIn(t, f, port) < 1 {
				t.Errorf("%s holds no packets", filepath.Base(f))
			}
		}
	})
	t.Run("root's directory", func(t *testing.T) {
		dir := t.TempDir() // 0700, root's
		written := filepath.Join(dir, "x.pcapng")
		_, errOut, code := runKidscope(t, "live", "-i", "lo", "--write", written, "--write-max-size", "4000", "--duration", "1s")
		msg := strings.TrimSpace(errOut)
		if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, "nobody, who may not create files in "+dir) {
			t.Errorf("exit %d, stderr %q; want 2 and one line saying nobody may not create files in %s", code, msg, dir)
		}
		if _, err := os.Lstat(written); err == nil {
			t.Errorf("%s was created before the refusal", written)
		}
		// -Z root keeps root, who may.
		if _, errOut, code := runKidscope(t, "live", "-i", "lo", "--write", written, "--write-max-size", "4000", "--duration", "1s", "-Z", "root", "-o", "json"); code != 0 {
			t.Errorf("-Z root: exit %d: %s", code, errOut)
		}
	})
}

// TestLiveWithCapNetRaw: CAP_NET_RAW alone is what live needs (the
// setcap advice of docs/live.md), and without root -Z cannot change user.
func TestLiveWithCapNetRaw(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run the binary as another user with one capability")
	}
	dir, err := os.MkdirTemp("", "kidscope-netraw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kidscope")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(setpriv, append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups",
			"--inh-caps", "+net_raw", "--ambient-caps", "+net_raw", bin, "live", "-i", "lo", "--duration", "1s", "-o", "json"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return stderr.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stderr.String(), 0
	}
	if errOut, code := run(); code != 0 {
		if strings.Contains(errOut, "ambient") {
			t.Skipf("setpriv cannot set ambient capabilities here: %s", errOut)
		}
		t.Fatalf("as nobody with CAP_NET_RAW: exit %d: %s", code, errOut)
	}
	errOut, code := run("-Z", "root")
	if msg := strings.TrimSpace(errOut); code != 2 || !strings.Contains(msg, "-Z root: only root may change to another user") {
		t.Errorf("-Z root as nobody: exit %d, stderr %q", code, msg)
	}
}
