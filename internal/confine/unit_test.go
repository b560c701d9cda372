package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSystemdUnit checks the unit docs/confinement.md gives with
// systemd-analyze: it parses, and its exposure stays within what the
// document says is left (CI installs systemd for the tool; nothing is
// started).
func TestSystemdUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (CI installs it)")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "confinement.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```\n(\\[Unit\\].*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/confinement.md has no unit")
	}
	unit := filepath.Join(t.TempDir(), "kidscope.service")
	if err := os.WriteFile(unit, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	// --threshold counts tenths of the exposure shown: 20 is 2.0.
	out, err := exec.Command("systemd-analyze", "security", "--offline=true", "--no-pager", "--threshold=20", unit).CombinedOutput()
	score := regexp.MustCompile(`Overall exposure level for kidscope.service: ([0-9.]+)`).FindSubmatch(out)
	if score == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	if err != nil {
		t.Errorf("exposure %s, over 2 (the document says 1.6):\n%s", score[1], out)
	}
	// Every directive systemd does not know is a warning of verify's.
	out, _ = exec.Command("systemd-analyze", "verify", "--man=false", unit).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.Contains(l, "is not executable") && !strings.Contains(l, "kidscope.service: Command") {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
	t.Logf("exposure %s", score[1])
}
