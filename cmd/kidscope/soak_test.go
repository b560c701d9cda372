//go:build soak

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSoakLive runs `kidscope live` on loopback under steady traffic with
// connection churn for SOAK_DURATION (default 10m) and samples its
// resident memory every 10 s: it must stay flat. Not in the default run:
//
//	go test -tags soak -run TestSoakLive -timeout 30m -v ./cmd/kidscope
func TestSoakLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root")
	}
	duration := 10 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("SOAK_DURATION")); err == nil {
		duration = d
	}
	loadloop := filepath.Join(t.TempDir(), "loadloop")
	if out, err := exec.Command("go", "build", "-o", loadloop, "../../internal/loadloop").CombinedOutput(); err != nil {
		t.Fatalf("build loadloop: %v\n%s", err, out)
	}
	// loadloop listens on a port freePort got from the kernel; if another
	// process takes it first, loadloop exits at once saying so, and both
	// start again with another port.
	var live, load *exec.Cmd
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		live = exec.Command(binary, "live", "-i", "lo", "-p", strconv.Itoa(port), "-o", "ndjson", "--no-status",
			"--idle-timeout", "30s", "--duration", (duration + 30*time.Second).String())
		live.Stdout, live.Stderr = nil, os.Stderr
		if err := live.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		load = exec.Command(loadloop, "-port", strconv.Itoa(port), "-rate", "20000", "-conns", "50", "-churn", "3s",
			"-duration", duration.String())
		loadErr := &lockedBuffer{}
		load.Stdout, load.Stderr = os.Stdout, loadErr
		if err := load.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if strings.Contains(loadErr.String(), "address already in use") && attempt < 5 {
			t.Logf("port %d was taken before loadloop bound it: again with another", port)
			_ = load.Wait()
			_ = live.Process.Kill()
			_ = live.Wait()
			continue
		}
		break
	}
	defer live.Process.Kill()
	var samples []int64
	start := time.Now()
	for time.Since(start) < duration {
		time.Sleep(10 * time.Second)
		rss := rssKB(t, live.Process.Pid)
		samples = append(samples, rss)
		t.Logf("%6.0fs  RSS %6.1f MB", time.Since(start).Seconds(), float64(rss)/1024)
	}
	if err := load.Wait(); err != nil {
		t.Fatal(err)
	}
	live.Process.Signal(syscall.SIGINT)
	live.Wait()
	third := len(samples) / 3
	if third == 0 {
		t.Fatalf("too few samples: %v", samples)
	}
	peak := func(s []int64) int64 {
		var m int64
		for _, v := range s {
			m = max(m, v)
		}
		return m
	}
	first, last := peak(samples[:third]), peak(samples[len(samples)-third:])
	t.Logf("peak RSS: first third %.1f MB, last third %.1f MB", float64(first)/1024, float64(last)/1024)
	if float64(last) > float64(first)*1.25+10*1024 {
		t.Errorf("memory grows: first third peaks at %d KB, last third at %d KB", first, last)
	}
}

func rssKB(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
