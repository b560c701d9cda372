package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kidscope/kidscope/internal/realcapture"
)

// kafkajsArgs is what node/kafkajs.js reads from its first argument.
type kafkajsArgs struct {
	Role          string   `json:"role"`
	Brokers       []string `json:"brokers"`
	ClientID      string   `json:"clientId"`
	Group         string   `json:"group,omitempty"`
	Prefix        string   `json:"prefix,omitempty"`
	TopicOrders   string   `json:"topicOrders"`
	TopicPayments string   `json:"topicPayments"`
	Records       int      `json:"records"`
	DeadlineMs    int64    `json:"deadlineMs"`
}

// kafkajsVersion reads the installed kafkajs version from node_modules.
func kafkajsVersion(nodeDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(nodeDir, "node_modules", "kafkajs", "package.json"))
	if err != nil {
		return "", fmt.Errorf("kafkajs is not installed (cd %s && npm ci): %w", nodeDir, err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", err
	}
	return pkg.Version, nil
}

// runKafkajs runs one kafkajs scenario as a node process. The script
// bounds itself by the context's deadline; the process is killed if it
// outlives it by a few seconds.
func runKafkajs(ctx context.Context, nodeDir string, a kafkajsArgs) (string, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return "", fmt.Errorf("kafkajs %s: no deadline", a.Role)
	}
	a.TopicOrders, a.TopicPayments, a.Records = realcapture.TopicOrders, realcapture.TopicPayments, realcapture.Records
	a.DeadlineMs = time.Until(dl).Milliseconds()
	arg, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	cmd := exec.Command("node", filepath.Join(nodeDir, "kafkajs.js"), string(arg))
	cmd.Dir = nodeDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting node: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Until(dl) + 5*time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = fmt.Errorf("killed after its deadline: %w", <-done)
	}
	if err != nil {
		return "", fmt.Errorf("kafkajs %s: %v: %s", a.Role, err, strings.TrimSpace(stderr.String()))
	}
	var out struct {
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return "", fmt.Errorf("kafkajs %s: reading its output %q: %w", a.Role, stdout.String(), err)
	}
	if logged := kafkajsLog(stderr.String()); logged != "" {
		out.Summary += "; kafkajs logged: " + logged
	}
	return out.Summary, nil
}

// kafkajsLog shortens what kafkajs logged (JSON lines at WARN and above)
// to "LEVEL message (error)", one per line, joined.
func kafkajsLog(s string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "" {
			continue
		}
		var e struct {
			Level, Message, Error string
		}
		if json.Unmarshal([]byte(l), &e) != nil || e.Message == "" {
			lines = append(lines, l)
			continue
		}
		if e.Error != "" {
			e.Message += " (" + e.Error + ")"
		}
		lines = append(lines, e.Level+" "+e.Message)
	}
	return strings.Join(lines, "; ")
}
