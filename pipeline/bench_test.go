package pipeline

import (
	"context"
	"os"
	"testing"

	"github.com/kidscope/kidscope/reassembly"
)

// BenchmarkRunFile runs the whole path, rules included, over the capture
// named by KIDSCOPE_BENCH_FILE (the shared bench's loads, for profiles:
// go test -run '^$' -bench RunFile -benchtime 1x -cpuprofile cpu.out
// ./pipeline), with one worker so that a profile shows one path.
func BenchmarkRunFile(b *testing.B) {
	file := os.Getenv("KIDSCOPE_BENCH_FILE")
	if file == "" {
		b.Skip("KIDSCOPE_BENCH_FILE is not set")
	}
	st, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	var packets int64
	for b.Loop() {
		res, err := Run(context.Background(), Options{Files: []string{file}, Workers: 1,
			Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}, Rules: &Check{}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		packets += res.Capture.Packets
	}
	b.ReportMetric(float64(packets)/b.Elapsed().Seconds(), "packets/s")
}
