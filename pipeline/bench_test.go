package pipeline

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"

	"github.com/kidscope/kidscope/reassembly"
)

// BenchmarkRunFile runs the whole path, rules included, over the capture
// named by KIDSCOPE_BENCH_FILE (the shared bench's loads, for profiles:
// go test -run '^$' -bench RunFile -benchtime 1x -cpuprofile cpu.out
// ./pipeline), with one worker so that a profile shows one path, or
// KIDSCOPE_BENCH_WORKERS of them.
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
	workers := 1
	if w, err := strconv.Atoi(os.Getenv("KIDSCOPE_BENCH_WORKERS")); err == nil {
		workers = w
	}
	var packets int64
	for b.Loop() {
		res, err := Run(context.Background(), Options{Files: []string{file}, Workers: workers, OnTick: heapAtPeak(b),
			Reassembly: reassembly.Options{Ports: reassembly.DefaultPorts()}, Rules: &Check{}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		packets += res.Capture.Packets
	}
	b.ReportMetric(float64(packets)/b.Elapsed().Seconds(), "packets/s")
}

// heapAtPeak returns, when KIDSCOPE_BENCH_HEAP names a file, a tick that
// writes a heap profile there whenever the live heap is the largest yet:
// what a run holds at its peak, which a profile at the end cannot show.
func heapAtPeak(b *testing.B) func(Progress) {
	path := os.Getenv("KIDSCOPE_BENCH_HEAP")
	if path == "" {
		return nil
	}
	var peak uint64
	return func(Progress) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc <= peak {
			return
		}
		peak = ms.HeapAlloc
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
}
