package main

import (
	"strings"
	"testing"

	"github.com/kidscope/kidscope/pipeline"
)

// TestStatusText: the status line fits in width-1 columns, and at 80 it
// still says the packets, the findings shown and the kernel's drops.
func TestStatusText(t *testing.T) {
	p := pipeline.Progress{Packets: 123456789, Connections: 4321, Open: 17, Requests: 98765432, KernelDrops: 1234567}
	for _, width := range []int{40, 80, 120, 200} {
		got := statusText(width, p, 42)
		if len(got) > width-1 {
			t.Errorf("width %d: %d columns: %q", width, len(got), got)
		}
		if width >= 80 {
			for _, n := range []string{"123456789", " 42 findings", "1234567"} {
				if !strings.Contains(got, n) {
					t.Errorf("width %d: %q lacks %q", width, got, n)
				}
			}
		}
		if width >= 120 && !strings.Contains(got, "42 findings shown") {
			t.Errorf("width %d: %q: want the full wording", width, got)
		}
	}
}
