package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// asKidscopeEnv makes the test binary run as kidscope (TestMain), with
// the probe of confineProbeEnv: the release binary has no probe, and the
// test binary is the only build that has one.
const (
	asKidscopeEnv   = "KIDSCOPE_TEST_AS_KIDSCOPE"
	confineProbeEnv = "KIDSCOPE_TEST_CONFINE_PROBE"
)

// startConfineProbe, in a test binary run as kidscope, makes a thread now
// (before live confines itself) that waits for SIGUSR1 and then tries
// what confineProbeEnv lists ("read PATH", "create PATH", "exec PATH",
// "connect ADDR", "unshare"; separated by "|"), saying on stderr how each
// went: "probe: OP ARG: ok" or the error. Its thread existing before
// live confined itself shows that the confinement reached every thread,
// not only the one that applied it.
func startConfineProbe() {
	spec := os.Getenv(confineProbeEnv)
	if spec == "" {
		return
	}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: this thread does the probe
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGUSR1)
		close(ready)
		<-sig
		for _, step := range strings.Split(spec, "|") {
			op, arg, _ := strings.Cut(step, " ")
			var err error
			switch op {
			case "read":
				_, err = os.ReadFile(arg)
			case "create":
				if err = os.WriteFile(arg, []byte("probe"), 0o600); err == nil {
					err = os.Remove(arg)
				}
			case "exec":
				c := exec.Command(arg)
				// Files given as they are: os/exec opens /dev/null for
				// none, which Landlock refuses before the exec is tried.
				c.Stdin, c.Stdout, c.Stderr = os.Stderr, os.Stderr, os.Stderr
				err = c.Run()
			case "connect":
				var c net.Conn
				if c, err = net.DialTimeout("tcp", arg, 5*time.Second); err == nil {
					c.Close()
				}
			case "unshare":
				err = unix.Unshare(unix.CLONE_NEWUSER)
			default:
				err = fmt.Errorf("unknown probe %q", op)
			}
			res := "ok"
			if err != nil {
				res = err.Error()
			}
			fmt.Fprintf(os.Stderr, "probe: %s: %s\n", step, res)
		}
		fmt.Fprintln(os.Stderr, "probe: done")
	}()
	<-ready
}

// procStatus reads the lines of a /proc status file that say what a
// thread may do.
func procStatus(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		switch k {
		case "Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp":
			m[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return m, nil
}

// TestLiveConfined runs live as root with -Z nobody, --write, a key log
// and metrics, and checks from outside what every one of its threads may
// do (the /proc status lines), then has the probe thread try what an
// attacker who took over the parser would: read a file outside, create one
// in a directory anyone may write, start a program, connect somewhere,
// make a namespace. Live must still capture, find, rotate its files and
// serve its metrics.
func TestLiveConfined(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live captures as root, which CI runs as")
	}
	dir := searchableTempDir(t)
	writeDir := filepath.Join(dir, "captures")
	outside := filepath.Join(dir, "anyone")
	for _, d := range []string{writeDir, outside} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil { // past the umask: nobody may write both
			t.Fatal(err)
		}
	}
	secret := filepath.Join(dir, "readable-by-all")
	keylog := filepath.Join(dir, "keys.log")
	for _, f := range []string{secret, keylog} {
		if err := os.WriteFile(f, []byte("# x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	port := fakeBroker(t)
	listener := sink(t)
	probe := strings.Join([]string{
		"read " + secret,
		"read " + keylog,
		"create " + filepath.Join(outside, "planted"),
		"create " + filepath.Join(writeDir, "allowed"),
		"exec /bin/true",
		"connect " + fmt.Sprintf("127.0.0.1:%d", listener),
		"unshare",
	}, "|")
	var live *exec.Cmd
	var stderr *lockedBuffer
	var stdout io.ReadCloser
	var metricsURL string
	for attempt := 1; ; attempt++ {
		mport := freePort(t)
		metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
		live = exec.Command(os.Args[0], "live", "-i", "lo", "-p", strconv.Itoa(port), "-o", "ndjson", "--no-status",
			"-w", filepath.Join(writeDir, "x.pcapng"), "--write-max-size", "8KB", "--tls-keylog", keylog,
			"-Z", "nobody", "--duration", "2m", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", mport))
		live.Env = append(os.Environ(), asKidscopeEnv+"=1", confineProbeEnv+"="+probe)
		stderr = &lockedBuffer{}
		live.Stderr = stderr
		var err error
		if stdout, err = live.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
		if err := live.Start(); err != nil {
			t.Fatal(err)
		}
		err = waitConfined(live.Process.Pid)
		if err != nil && strings.Contains(stderr.String(), "address already in use") && attempt < 5 {
			_ = live.Wait()
			continue
		}
		if err != nil {
			_ = live.Process.Kill()
			_ = live.Wait()
			t.Fatalf("%v; stderr:\n%s", err, stderr.String())
		}
		break
	}
	defer live.Process.Kill()
	out := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stdout); out <- string(b) }()

	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", live.Process.Pid))
	want := map[string]string{"Uid": "65534 65534 65534 65534", "CapInh": "0000000000000000", "CapPrm": "0000000000000000",
		"CapEff": "0000000000000000", "CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"}
	for _, task := range tasks {
		st, err := procStatus(task)
		if err != nil {
			continue // a thread that ended
		}
		for k, v := range want {
			if st[k] != v {
				t.Errorf("%s: %s %q, want %q", task, k, st[k], v)
			}
		}
	}
	t.Logf("%d threads, each: %v", len(tasks), want)

	// Enough violating clients for the 8KB file to rotate: the next file
	// is created by the confined process.
	for range 12 {
		violatingClient(t, port)
	}
	if err := live.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "probe: done") {
		if time.Now().After(deadline) {
			t.Fatalf("the probe did not finish; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantProbe := map[string]string{
		"read " + secret: "permission denied", // Landlock: outside every rule
		"read " + keylog: "permission denied", // read through the descriptor opened before
		"create " + filepath.Join(outside, "planted"):  "permission denied",
		"create " + filepath.Join(writeDir, "allowed"): "ok",
		"exec /bin/true": "operation not permitted", // seccomp: EPERM (Landlock would say permission denied)
		"connect " + fmt.Sprintf("127.0.0.1:%d", listener): "permission denied", // Landlock: no TCP connect without --publish
		"unshare": "operation not permitted", // seccomp; an unprivileged user may make a user namespace
	}
	for step, w := range wantProbe {
		line := "probe: " + step + ": "
		i := strings.Index(stderr.String(), line)
		if i < 0 {
			t.Errorf("no probe line for %q", step)
			continue
		}
		got, _, _ := strings.Cut(stderr.String()[i+len(line):], "\n")
		if !strings.HasSuffix(got, w) {
			t.Errorf("probe %s: %q, want %q", step, got, w)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the probe planted a file outside the --write directory: %v", err)
	}
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "process_resident_memory_bytes") {
		t.Errorf("the metrics lack the process collector's memory (it reads /proc/self):\n%.2000s", body)
	}
	_ = live.Process.Signal(syscall.SIGINT)
	report := <-out
	_ = live.Wait()
	if !strings.Contains(report, `"rule":"header-id-changed"`) {
		t.Errorf("live found nothing while confined; stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(writeDir, "x-2.pcapng")); err != nil {
		t.Errorf("no rotated file made while confined: %v; stderr:\n%s", err, stderr.String())
	}
}

// waitConfined waits until a thread of pid runs under the seccomp filter
// (live has confined itself), or the process has ended.
func waitConfined(pid int) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		if len(tasks) == 0 {
			return fmt.Errorf("live ended before it was confined")
		}
		for _, task := range tasks {
			if st, err := procStatus(task); err == nil && st["Seccomp"] == "2" {
				return nil // the others are checked one by one
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("live was not confined within 20s")
}
