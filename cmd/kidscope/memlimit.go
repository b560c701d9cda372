package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The soft memory limit (--memory-limit) makes the garbage collector work
// harder as the heap nears it, instead of letting the heap double. That is
// cheap while the live data stays well under the limit; when the live
// data itself comes near it, the collector would run back to back and a
// run take several times as long. The governor watches the live heap and
// then raises the limit to 15% above it, so the collector runs about once
// per 15% of the live heap allocated: memory grows with the data, slowly,
// and time stays reasonable (measured on 100,000 connections open at once:
// about 4 times quicker than with the limit fixed, and a little more than
// half the memory of no limit).

// Until the first collection the collector waits longer (GOGC 400 instead
// of 100): the first tens of megabytes of a capture are read with the heap
// growing from nothing, when a collection per doubling cost a sixth of the
// time of a 100 MB file. After it the collector runs as Go's default has
// it: a run's live heap is small (a few megabytes for hundreds of
// connections), and five times it would be most of the memory a long run
// holds.
const startGCPercent = 400

const (
	governorPeriod = 20 * time.Millisecond
	// raiseAt is how near the limit the live heap may come, and headroom
	// how far above the live heap a raised limit is put.
	raiseAt  = 0.95
	headroom = 1.15
)

// startMemoryGovernor sets the soft limit and watches it until stop is
// called. limit 0 means no limit, and no governor.
func startMemoryGovernor(limit int64) (stop func()) {
	if limit <= 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	_, gogcSet := os.LookupEnv("GOGC")
	small := !gogcSet
	if small {
		debug.SetGCPercent(startGCPercent)
	}
	done := make(chan struct{})
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		t := time.NewTicker(governorPeriod)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 {
				return
			}
			live := float64(sample[0].Value.Uint64())
			if small && sample[1].Value.Uint64() > 0 {
				small = false
				debug.SetGCPercent(100)
			}
			if live > raiseAt*float64(limit) {
				limit = int64(live * headroom)
				debug.SetMemoryLimit(limit)
			}
		}
	}()
	return func() { close(done) }
}

// reportPhaseHeap is the heap above which a run collects its garbage before
// it builds the report.
const reportPhaseHeap = 32 << 20

// collectBeforeReport runs a collection between the run and its report,
// when the heap is large. The run's per-connection state is garbage by
// then (thousands of connections close at the end of a capture), and the
// report's documents are megabytes for as many connections: without it,
// the collector, paced by the run's live heap, lets the report stack up on
// top of the garbage, and peak memory came at the very end (measured at
// 20,000 connections: 150 MB at the end against 100 MB while reading).
func collectBeforeReport() {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > reportPhaseHeap {
		runtime.GC()
	}
}
