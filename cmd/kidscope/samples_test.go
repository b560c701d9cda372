package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/samples"
)

// needSamplesCommand skips until the root command registers `samples`.
func needSamplesCommand(t *testing.T) {
	t.Helper()
	if _, _, code := runKidscope(t, "samples", "--help"); code != 0 {
		t.Skip("the samples command is not registered in the root command yet")
	}
}

// TestSamplesCommand runs `kidscope samples DIR` and requires every
// scenario's two files, with the bytes the samples package writes, one
// output line per file.
func TestSamplesCommand(t *testing.T) {
	needSamplesCommand(t)
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := runKidscope(t, "samples", dir)
	if code != 0 {
		t.Fatalf("kidscope samples: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	all := samples.All()
	if len(lines) != 2*len(all) {
		t.Errorf("%d lines printed, want %d (two files per scenario)", len(lines), 2*len(all))
	}
	ref := t.TempDir()
	ws, err := samples.WriteAll(ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		name := filepath.Base(w.Path)
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s not written: %v", name, err)
			continue
		}
		want, _ := os.ReadFile(w.Path)
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the samples package writes", name)
		}
		if !strings.Contains(stdout, filepath.Join(dir, name)) {
			t.Errorf("%s is not in the output", name)
		}
	}
}

func TestSamplesList(t *testing.T) {
	needSamplesCommand(t)
	stdout, _, code := runKidscope(t, "samples", "--list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range samples.All() {
		if !strings.Contains(stdout, s.Name) {
			t.Errorf("--list does not name %s", s.Name)
		}
	}
}

// TestSamplesFramesAgree runs the built binary's `frames` on the committed
// captures: every request a scenario wrote is listed, at its frame.
func TestSamplesFramesAgree(t *testing.T) {
	dir := "../../samples/captures"
	for _, s := range samples.Small() {
		b, err := samples.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, b.File)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: %v (go test ./samples -update)", path, err)
		}
		var ports []string
		for _, p := range b.Expect.Ports {
			ports = append(ports, strconv.Itoa(int(p)))
		}
		got := map[string]bool{}
		for _, m := range kidscopeMessages(t, path, strings.Join(ports, ",")) {
			if m.request {
				got[m.frame+"/"+m.corr+"/"+m.key+"/"+m.version] = true
			}
		}
		for _, m := range b.Messages {
			if !m.Request || m.Frame == 0 || m.Partial {
				continue
			}
			k := fmt.Sprintf("%d/%d/%d/%d", m.Frame, m.Corr, m.Key, m.Version)
			if !got[k] {
				t.Errorf("%s: kidscope frames does not list the request at frame %d (corr %d)", s.Name, m.Frame, m.Corr)
			}
		}
	}
}

// TestNewSamplesCmd runs the command in-process (it needs no registration
// in the root command): it writes every file and prints one line each.
func TestNewSamplesCmd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	cmd := newSamplesCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{dir})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2*len(samples.All()) {
		t.Errorf("%d lines, want %d", len(lines), 2*len(samples.All()))
	}
	for _, s := range samples.All() {
		if _, err := os.Stat(filepath.Join(dir, samples.ExpectFile(s.Name))); err != nil {
			t.Error(err)
		}
	}
	// Too many arguments is a usage error.
	cmd = newSamplesCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{dir, "extra"})
	if err := cmd.Execute(); err == nil {
		t.Error("two arguments accepted")
	}
}
