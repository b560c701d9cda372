package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// tryStep is a block of commands of docs/fleet-try.md (```sh) and the
// output the page shows of them (the ```text blocks up to the next
// commands).
type tryStep struct {
	commands [][]string
	shown    []string
}

// trySteps reads the walk-through: every line of a ```sh block is a
// command, without shell syntax; ```text blocks are what the commands
// before them print; ```shell blocks are for reading, not run.
func trySteps(t *testing.T, page string) []tryStep {
	t.Helper()
	var steps []tryStep
	var block string
	for _, line := range strings.Split(page, "\n") {
		switch {
		case block == "" && strings.HasPrefix(line, "```"):
			block = strings.TrimPrefix(line, "```")
			if block == "sh" {
				steps = append(steps, tryStep{})
			}
			if block == "" {
				t.Fatal("docs/fleet-try.md: a code block without its kind")
			}
		case line == "```":
			block = ""
		case block == "sh" && strings.TrimSpace(line) != "":
			if strings.ContainsAny(line, "|&;<>$`\\\"'*?") {
				t.Fatalf("docs/fleet-try.md: %q is shell, not a command", line)
			}
			steps[len(steps)-1].commands = append(steps[len(steps)-1].commands, strings.Fields(line))
		case block == "text" && len(steps) > 0 && strings.TrimSpace(line) != "":
			steps[len(steps)-1].shown = append(steps[len(steps)-1].shown, line)
		}
	}
	return steps
}

// TestFleetTryWalkthrough runs docs/fleet-try.md: kidscope try-kafka in
// the background, then every other command in order, from the
// repository's root, with the page's port replaced by a free one; each
// exits 0, or 1 for findings; what the page shows of a step's output is
// there, line for line.
func TestFleetTryWalkthrough(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "fleet-try.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := trySteps(t, string(page))
	if len(steps) != 3 || len(steps[0].commands) != 1 || strings.Join(steps[0].commands[0], " ") != "kidscope try-kafka" {
		t.Fatalf("the walk-through is not: start Kafka, agents, fleet: %q", steps)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	args := func(cmd []string) []string {
		if cmd[0] != "kidscope" {
			t.Fatalf("%q is not a kidscope command", cmd)
		}
		out := make([]string, len(cmd)-1)
		for i, a := range cmd[1:] {
			out[i] = strings.ReplaceAll(a, strconv.Itoa(tryKafkaPort), port)
		}
		return out
	}

	kafka := exec.Command(binary, append(args(steps[0].commands[0]), "--port", port)...)
	kafka.Dir = root
	stdout, err := kafka.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var kafkaErr bytes.Buffer
	kafka.Stderr = &kafkaErr
	if err := kafka.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kafka.Process.Kill(); _ = kafka.Wait() }()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(addr) != "127.0.0.1:"+port {
		t.Fatalf("try-kafka printed %q, %v: %s", addr, err, kafkaErr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	for i, step := range steps[1:] {
		var out strings.Builder
		for _, cmd := range step.commands {
			c := exec.Command(binary, args(cmd)...)
			c.Dir = root
			var o, e bytes.Buffer
			c.Stdout, c.Stderr = &o, &e
			err := c.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code > 1 {
				t.Fatalf("%q: exit %d: %s", cmd, code, e.String())
			}
			out.WriteString(o.String() + e.String())
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(out.String(), "\n") {
			lines[strings.TrimRight(l, " ")] = true
		}
		for _, l := range step.shown {
			if !lines[strings.TrimRight(l, " ")] {
				t.Errorf("step %d: the page shows %q, which the commands did not print:\n%s", i+2, l, out.String())
			}
		}
		if len(step.shown) == 0 {
			t.Errorf("step %d: the page shows none of its output", i+2)
		}
	}
	if err := kafka.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := kafka.Wait(); err != nil {
		t.Errorf("try-kafka, stopped with SIGINT: %v: %s", err, kafkaErr.String())
	}
}
