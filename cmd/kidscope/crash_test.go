package main

import (
	"bytes"
	be "encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pcapngBlocks walks the blocks of a little-endian pcapng file (live's
// --write files): the enhanced packet blocks it holds whole, and the bytes
// after the last whole block (a block cut short: 0 for a file that ends
// where a block ends). A block whose lengths disagree is an error: the
// damage would not be at the tail only.
func pcapngBlocks(b []byte) (frames int, tail int, err error) {
	le := be.LittleEndian
	at := 0
	for at < len(b) {
		if len(b)-at < 12 {
			return frames, len(b) - at, nil
		}
		typ, n := le.Uint32(b[at:]), int(le.Uint32(b[at+4:]))
		if at == 0 && typ != 0x0a0d0d0a {
			return frames, 0, fmt.Errorf("no section header block")
		}
		if n < 12 || n%4 != 0 {
			return frames, 0, fmt.Errorf("block at %d: length %d", at, n)
		}
		if at+n > len(b) {
			return frames, len(b) - at, nil
		}
		if le.Uint32(b[at+n-4:]) != uint32(n) {
			return frames, 0, fmt.Errorf("block at %d: its two lengths differ (%d, %d)", at, n, le.Uint32(b[at+n-4:]))
		}
		if typ == 6 {
			frames++
		}
		at += n
	}
	return frames, 0, nil
}

// tsharkFrames counts the frames tshark reads of file, and says whether
// it found the file cut short.
func tsharkFrames(t *testing.T, file string) (int, bool) {
	t.Helper()
	cmd := exec.Command("tshark", "-r", file, "-T", "fields", "-e", "frame.number")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	cut := strings.Contains(stderr.String(), "cut short")
	if err != nil && !cut {
		t.Fatalf("tshark -r %s: %v\n%s", file, err, stderr.String())
	}
	return strings.Count(stdout.String(), "\n"), cut
}

// numbered is the number of a rotated file's name: x.pcapng 1, x-2.pcapng 2.
func numbered(name string) int {
	if m := regexp.MustCompile(`-(\d+)\.pcapng$`).FindStringSubmatch(name); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1
}

// bulk sends size bytes to 127.0.0.1:port in chunks, for frames that fill
// files quickly.
func bulk(port, size int) error {
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	defer c.Close()
	chunk := bytes.Repeat([]byte("k"), 8<<10)
	for sent := 0; sent < size; sent += len(chunk) {
		if _, err := c.Write(chunk); err != nil {
			return err
		}
	}
	return nil
}

// TestLiveKilledFilesReadable kills live --write with SIGKILL at several
// moments while it rotates small files every few frames and moves late
// TLS secrets ahead of each file's frames: every file it leaves must be
// read by tshark up to its last whole block, with nothing damaged but a
// block cut short at the very end, and no file but the captures.
func TestLiveKilledFilesReadable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live captures as root, which CI runs as")
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (CI installs it)")
	}
	port := sink(t)
	for _, after := range []time.Duration{150 * time.Millisecond, 600 * time.Millisecond, 1100 * time.Millisecond, 1700 * time.Millisecond} {
		dir := t.TempDir()
		keylog := filepath.Join(dir, "keys.log")
		if err := os.WriteFile(keylog, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		live, stdout, stderr, _ := startLive(t, "-i", "lo", "-p", strconv.Itoa(port), "-o", "ndjson", "--no-status", "-Z", "root",
			"-w", filepath.Join(dir, "x.pcapng"), "--write-max-size", "256KB", "--tls-keylog", keylog, "--write-secrets")
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			kl, err := os.OpenFile(keylog, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer kl.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// A key log line now and then: late secrets in most files.
				fmt.Fprintf(kl, "CLIENT_RANDOM %064x %096x\n", i, i)
				_ = bulk(port, 24<<10)
				time.Sleep(5 * time.Millisecond)
			}
		}()
		time.Sleep(after)
		if err := live.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = live.Wait()
		close(stop)
		wg.Wait()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		captures, totalFrames, cutFiles := 0, 0, 0
		newest := 0 // the file being written when live was killed, and the last closed
		for _, e := range entries {
			if m := regexp.MustCompile(`^x-(\d+)\.pcapng$`).FindStringSubmatch(e.Name()); m != nil {
				n, _ := strconv.Atoi(m[1])
				newest = max(newest, n)
			}
		}
		for _, e := range entries {
			name := e.Name()
			switch {
			case name == "keys.log":
				continue
			case !regexp.MustCompile(`^x(-\d+)?\.pcapng$`).MatchString(name):
				t.Errorf("killed after %v: %s is left in the directory", after, name)
				continue
			}
			captures++
			path := filepath.Join(dir, name)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			frames, tail, err := pcapngBlocks(b)
			if err != nil {
				t.Errorf("killed after %v: %s (%d bytes): %v", after, name, len(b), err)
				continue
			}
			cut := false
			if n := numbered(name); n >= newest-1 { // tshark takes a second a file: the two that matter
				var got int
				if got, cut = tsharkFrames(t, path); got != frames {
					t.Errorf("killed after %v: %s: tshark reads %d frames, %d are whole in it", after, name, got, frames)
				}
			}
			if tail > 0 || cut {
				cutFiles++
				t.Logf("killed after %v: %s ends with %d bytes of a block cut short (tshark: cut short %v)", after, name, tail, cut)
			}
			totalFrames += frames
		}
		if captures == 0 {
			t.Errorf("killed after %v: no capture file; stderr:\n%s", after, stderr.String())
		}
		t.Logf("killed after %v: %d files, %d frames, all whole (the last two read by tshark too); %d cut short at the end", after, captures, totalFrames, cutFiles)
	}
}

// TestLiveFullDisk fills a small tmpfs with live's --write file: live
// says so in one line, the file ends at its last whole block (tshark
// reads it without complaint), the capture and the findings go on, and
// the report says how many frames were not written.
func TestLiveFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs and capturing need root, which CI has")
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (CI installs it)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "kidscope-full", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	broker := fakeBroker(t)
	filler := sink(t)
	live, stdout, stderr, _ := startLive(t, "-i", "lo", "-p", fmt.Sprintf("%d,%d", broker, filler), "-o", "ndjson", "--no-status",
		"-Z", "root", "-w", filepath.Join(dir, "x.pcapng"))
	out := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stdout); out <- string(b) }()
	const full = "no space left on device"
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), full) {
		if time.Now().After(deadline) {
			t.Fatalf("the disk did not fill; stderr:\n%s", stderr.String())
		}
		if err := bulk(filler, 64<<10); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// After the disk filled: more frames, and a finding.
	_ = bulk(filler, 64<<10)
	violatingClient(t, broker)
	time.Sleep(300 * time.Millisecond)
	_ = live.Process.Signal(syscall.SIGINT)
	report := <-out
	err := live.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != exitFindings {
		t.Errorf("exit %d, want %d (a finding); stderr:\n%s", code, exitFindings, stderr.String())
	}
	if n := strings.Count(stderr.String(), full); n != 2 {
		// The warning when it happened, and the report's problem at the end.
		t.Errorf("%d lines say the disk is full, want 2; stderr:\n%s", n, stderr.String())
	}
	if !strings.Contains(report, `"rule":"header-id-changed"`) {
		t.Errorf("no finding after the disk filled; stderr:\n%s", stderr.String())
	}
	m := regexp.MustCompile(`"--write: (\d+) frames captured were not written: write [^"]*x\.pcapng: no space left on device: the recording stopped; [^"]*x\.pcapng ends at its last whole frame \((\d+)\)"`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("the report's problems do not say what was not written:\n%.3000s", report)
	}
	unwritten, _ := strconv.Atoi(m[1])
	last, _ := strconv.Atoi(m[2])
	b, err := os.ReadFile(filepath.Join(dir, "x.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	frames, tail, err := pcapngBlocks(b)
	if err != nil || tail != 0 {
		t.Fatalf("x.pcapng: %v, %d bytes after its last whole block", err, tail)
	}
	got, cut := tsharkFrames(t, filepath.Join(dir, "x.pcapng"))
	if got != frames || cut || frames != last {
		t.Errorf("x.pcapng: tshark reads %d frames (cut short: %v), %d are whole, the report says %d", got, cut, frames, last)
	}
	if unwritten == 0 {
		t.Errorf("the report says no frame went unwritten")
	}
	t.Logf("tmpfs of 256 KiB: x.pcapng holds %d frames (%d bytes), %d captured frames not written", frames, len(b), unwritten)
}

// TestAnnotateFullDisk: analyze --annotate and --extract onto a disk too
// small for them fail with one line each and leave nothing under the
// outputs' names (each is written under a temporary name and renamed
// when whole), nor a temporary file.
func TestAnnotateFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root, which CI has")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24k", "kidscope-full", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	annotated, extracts := filepath.Join(dir, "a.pcapng"), filepath.Join(dir, "x")
	_, stderr, code := runKidscope(t, "analyze", "-p", "auto", "-o", "json", "--fail-on", "never",
		"--annotate", annotated, "--extract", extracts, filepath.Join("..", "..", "samples", "captures", "net-tso.pcap"))
	if code != exitBadInput {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitBadInput, stderr)
	}
	for _, out := range []string{annotated, filepath.Join(extracts, "finding-1-")} {
		if !strings.Contains(stderr, " to "+out) || !strings.Contains(stderr, "no space left on device (nothing is left under that name)") {
			t.Errorf("no line says %s could not be written; stderr:\n%s", out, stderr)
		}
	}
	var left []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, path)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("left on the full disk: %v", left)
	}
}
