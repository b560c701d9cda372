// Command loadgen writes a large, deterministic, realistic Kafka capture
// (classic pcap, Ethernet, IPv4, microsecond timestamps) for kidscope's
// benchmarks and end-to-end tests, and the findings kidscope must report on
// it.
//
//	go run ./bench/loadgen -bytes 1GB -conns 200 -seed 1 -o load.pcap -expect load.expect.json
//	kidscope analyze -o json --fail-on never load.pcap > report.json
//	go run ./bench/loadgen -check report.json -expect load.expect.json
//
// Client instances on many hosts talk to three brokers on port 9092: as
// Java clients and franz-go do, each instance keeps one connection per
// broker and purpose. Producers send Produce v9 with record batches of
// 1–64 KiB; consumers send Fetch v13 and get up to 1 MiB of record batches
// back, cut into MSS segments; group members send Heartbeat v4 and
// OffsetCommit v8 (classic groups, joined with JoinGroup v9 and KIP-394's
// MEMBER_ID_REQUIRED round) or ConsumerGroupHeartbeat v1 and OffsetCommit
// v9 (KIP-848 groups, client-generated member IDs); every connection opens
// with ApiVersions v3 and Metadata v12, and refreshes Metadata now and
// then. Each instance sends KIP-714 telemetry on one of its connections:
// GetTelemetrySubscriptions v0, then PushTelemetry v0 every 5 s of capture
// time.
//
// Half the instances are new clients: every request header carries their
// client instance ID (KIP-1313 tag 0, seed profile), which is also their
// telemetry ID. The others are old clients: no header ID; the broker
// assigns their telemetry ID and they reuse it. All of this is consistent:
// it makes no finding. TCP is what Linux sends: handshakes, timestamps,
// delayed ACKs, 0.5 % of data segments overtaken by the next one, 0.2 %
// retransmitted. Some connections close and reconnect, some client
// instances end (with a terminating push) and are replaced, and a few
// connections were open before the capture started: the capture begins
// inside a large Produce request or Fetch response of theirs.
//
// A few violations are planted, each on a client instance of its own (see
// plant.go); -expect writes them, with the frame where kidscope must point,
// and the number of whole requests and responses in the capture. -check
// compares a report of `kidscope analyze -o json` with such a file: the
// error and warning findings must be the planted ones exactly, the info
// findings those the load makes by design (stream-mid-start on each
// connection open before the capture), the counts those of the load.
//
// With -tls every connection is TLS 1.3 (-tls-suite: AES-128-GCM by
// default), as a broker's TLS listener sees it: after the TCP handshake a
// full TLS handshake, then each Kafka message sealed in application data
// records of up to 16 KiB of plaintext, and a close_notify before a close;
// -keylog gets the NSS key log of every connection:
//
//	go run ./bench/loadgen -tls -keylog load.keys -bytes 1GB -o load.pcap -expect load.expect.json
//	kidscope analyze -o json --fail-on never --tls-keylog load.keys load.pcap > report.json
//
// The planted findings and the counts are the same kind as in plaintext;
// a message's frame is still that of its last segment (the one that
// completes its last record). There are no connections open before the
// capture (-midstream 0): their handshake would be before it too, and
// nobody could decrypt them.
//
// Once the file reaches -bytes, the exchanges in flight finish, so the
// file ends a little past it with no message cut. The same flags give the
// same bytes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kidscope/kidscope/internal/size"
)

func main() {
	var (
		out      = flag.String("o", "load.pcap", "output pcap file")
		expect   = flag.String("expect", "", "write what the capture holds and the findings kidscope must report to this JSON file")
		bytesS   = flag.String("bytes", "1GB", "size of the capture (KB, MB, GB = 10^3.., KiB, MiB, GiB = 2^10..); the exchanges in flight then finish")
		conns    = flag.Int("conns", 200, "TCP connections open at once, of every kind (mid-stream and planted ones included)")
		seed     = flag.Uint64("seed", 1, "random seed")
		mid      = flag.Int("midstream", 5, "connections open before the capture starts")
		closes   = flag.Int("closes", 6, "connections closed during the capture: reconnects and client restarts, alternately")
		brokers  = flag.Int("brokers", 3, "brokers (10.20.0.11... port 9092)")
		ooo      = flag.Float64("ooo", 0.005, "fraction of data segments overtaken by the next one")
		dup      = flag.Float64("dup", 0.002, "fraction of data segments retransmitted")
		rateS    = flag.String("rate", "20MB", "capture-time data rate per second (spaces the timestamps)")
		conc     = flag.Int("concurrency", 8, "exchanges in flight at once; their packets interleave")
		gweight  = flag.Int("group-weight", 8, "a group connection is picked this many times as often as a producer or fetcher")
		noPlants = flag.Bool("no-plants", false, "plant no violation")
		quiet    = flag.Bool("q", false, "print no summary")
		check    = flag.String("check", "", "compare this report of `kidscope analyze -o json` with the -expect file instead of generating; exit 1 when they differ")
		useTLS   = flag.Bool("tls", false, "wrap every connection in TLS 1.3 (needs -keylog; -midstream is 0)")
		keylog   = flag.String("keylog", "", "with -tls: write the NSS key log of every connection to this file (`kidscope --tls-keylog`, Wireshark's tls.keylog_file)")
		suiteS   = flag.String("tls-suite", "aes128-gcm", "with -tls: the cipher suite, aes128-gcm, aes256-gcm or chacha20-poly1305")
	)
	flag.Parse()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	if *check != "" {
		if *expect == "" {
			fail(fmt.Errorf("-check needs -expect"))
		}
		diffs, exp, err := checkFiles(*check, *expect)
		if err != nil {
			fail(err)
		}
		for _, d := range diffs {
			fmt.Println(d)
		}
		if len(diffs) > 0 {
			os.Exit(1)
		}
		fmt.Printf("%s: exactly the %d planted findings and the %d info findings by design; %d requests, %d responses, %d connections\n",
			*check, len(exp.Findings), len(exp.InfoFindings), exp.Requests, exp.Responses, exp.Connections)
		return
	}
	target, err := size.Parse(*bytesS)
	if err != nil {
		fail(err)
	}
	rate, err := size.Parse(*rateS)
	if err != nil {
		fail(err)
	}
	cfg := config{target: target, conns: *conns, seed: *seed, midstream: *mid, closes: *closes, brokers: *brokers,
		ooo: *ooo, dup: *dup, rate: rate, concurrency: *conc, groupWeight: max(1, *gweight), noPlants: *noPlants}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *useTLS {
		if cfg.tls, err = findTLSSuite(*suiteS); err != nil {
			fail(err)
		}
		if *keylog == "" {
			fail(fmt.Errorf("-tls needs -keylog FILE: without the keys nothing can decrypt the load"))
		}
		// A connection open before the capture has its handshake before
		// it too: nobody can decrypt it, with any key log.
		if set["midstream"] && *mid != 0 {
			fail(fmt.Errorf("-midstream with -tls: a connection open before the capture has no handshake in it and cannot be decrypted; only -midstream 0"))
		}
		cfg.midstream = 0
	} else if set["keylog"] || set["tls-suite"] {
		fail(fmt.Errorf("-keylog and -tls-suite go with -tls"))
	}
	if err := cfg.check(); err != nil {
		fail(err)
	}
	f, err := os.Create(*out)
	if err != nil {
		fail(err)
	}
	t0 := time.Now()
	g, err := generate(cfg, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*out)
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	flags := map[string]string{}
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "o" && f.Name != "expect" && f.Name != "q" && f.Name != "keylog" {
			flags[f.Name] = f.Value.String()
		}
	})
	e := g.expectation(*out, flags)
	if g.tls != nil {
		if err := os.WriteFile(*keylog, g.tls.keylog.Bytes(), 0o600); err != nil {
			fail(err)
		}
	}
	if *expect != "" {
		b, _ := json.MarshalIndent(e, "", "  ")
		if err := os.WriteFile(*expect, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
	if !*quiet {
		g.summary(e, time.Since(t0))
	}
}

func (c config) check() error {
	switch {
	case c.target < 100e3:
		return fmt.Errorf("-bytes: at least 100KB")
	case c.brokers < 1 || c.brokers > 200:
		return fmt.Errorf("-brokers: 1 to 200")
	case c.midstream < 0 || c.closes < 0:
		return fmt.Errorf("-midstream and -closes cannot be negative")
	case c.conns < c.midstream+10 || c.conns > 1000000:
		return fmt.Errorf("-conns: at least -midstream + 10 (the planted violations take 5), at most 1000000")
	case c.rate < 1 || c.concurrency < 1:
		return fmt.Errorf("-rate and -concurrency must be positive")
	case c.ooo < 0 || c.ooo > 0.2 || c.dup < 0 || c.dup > 0.2:
		return fmt.Errorf("-ooo and -dup: 0 to 0.2")
	}
	return nil
}

func (g *gen) summary(e *Expectation, took time.Duration) {
	p := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", a...) }
	p("wrote %s in %.1f s: %s, %d packets, %.1f s of capture time", e.File, took.Seconds(), size.Human(e.Bytes),
		e.Packets, float64(g.now-g.start)/1e9)
	p("TCP: %d data segments (%d overtaken by the next one, %d retransmitted), %d pure ACKs, %d SYN/FIN/handshake ACKs, %d packets before the capture start left out",
		g.st.dataSegs, g.st.ooo, g.st.dups, g.st.pureAcks, g.st.control, g.st.suppressed)
	p("connections: %d (%d open before the capture), %d client instances; %d reconnects, %d client restarts",
		e.Connections, e.MidStream, g.nextInst, e.Reconnects, e.Restarts)
	p("whole Kafka messages: %d requests, %d responses (%d of them answer a request sent before the capture)",
		e.Requests, e.Responses, e.Unmatched)
	for k := range g.st.reqs {
		if g.st.reqs[k] > 0 || g.st.resps[k] > 0 {
			p("  api key %2d: %9d requests %9d responses", k, g.st.reqs[k], g.st.resps[k])
		}
	}
	if g.tls != nil {
		p("TLS: %d handshakes (%s), key log %s", g.tls.conns, e.TLS, size.Human(int64(g.tls.keylog.Len())))
	}
	for _, f := range e.Findings {
		p("planted: %-28s %-7s frame %d, %s -> %s", f.Rule, f.Severity, f.Frame, f.Client, f.Broker)
	}
}
