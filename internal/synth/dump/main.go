// Command dump writes the synthetic corpus (internal/synth's variants) as
// capture files into a directory, for scripts that compare two builds of
// kidscope on it (scripts/compare-outputs.sh).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kidscope/kidscope/internal/synth"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dump DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
	for _, v := range synth.Variants() {
		if _, err := v.Write(filepath.Join(dir, v.Name+v.Ext)); err != nil {
			fmt.Fprintf(os.Stderr, "dump: %s: %v\n", v.Name, err)
			os.Exit(1)
		}
	}
}
