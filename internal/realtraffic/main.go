// Command realtraffic makes packet captures of real Kafka traffic: it starts
// an in-process three-broker Kafka cluster (franz-go's kfake) on fixed
// loopback ports, captures the loopback interface with AF_PACKET (pure Go,
// gopacket's afpacket), runs franz-go clients through a few scenarios, and
// writes each scenario's connections to its own classic pcap file.
//
//	go run ./internal/realtraffic -o testdata/real
//
// It needs root (or CAP_NET_RAW) for the capture. It fails if the kernel
// dropped a packet, a frame was truncated, or a scenario's file lacks the
// requests it is there to show.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerPorts are the loopback ports the three brokers listen on.
var brokerPorts = []uint16{39092, 39093, 39094}

func seedBrokers() []string {
	seeds := make([]string, len(brokerPorts))
	for i, p := range brokerPorts {
		seeds[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	return seeds
}

func brokerPortSet() map[uint16]bool {
	m := make(map[uint16]bool, len(brokerPorts))
	for _, p := range brokerPorts {
		m[p] = true
	}
	return m
}

func main() {
	out := flag.String("o", "testdata/real", "directory to write the capture files into")
	iface := flag.String("i", "lo", "interface to capture (the loopback interface)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *iface, *out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "realtraffic:", err)
		os.Exit(1)
	}
}

// run captures every scenario into dir and checks the files it wrote.
func run(ctx context.Context, iface, dir string, log io.Writer) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	begin := time.Now()

	// The capture starts before the cluster listens, so every connection
	// is seen from its SYN.
	capt, err := startCapture(iface, brokerPorts)
	if err != nil {
		return err
	}
	defer func() {
		if _, serr := capt.stop(); err == nil && serr != nil {
			err = serr
		}
	}()

	ports := make([]int, len(brokerPorts))
	for i, p := range brokerPorts {
		ports[i] = int(p)
	}
	cluster, err := kfake.NewCluster(
		kfake.NumBrokers(len(brokerPorts)),
		kfake.Ports(ports...),
		kfake.ClusterID("kidscope-real"),
		kfake.SeedTopics(3, topicOrders),
		kfake.SeedTopics(2, topicPayments),
		kfake.BrokerConfigs(map[string]string{
			// KIP-848 members heartbeat at the interval the broker
			// gives them; 500ms shows a few within a short run.
			"group.consumer.heartbeat.interval.ms": "500",
		}),
	)
	if err != nil {
		return fmt.Errorf("starting kfake cluster: %w", err)
	}
	clusterUp := true
	defer func() {
		if clusterUp {
			cluster.Close()
		}
	}()

	var windows []window
	for _, sc := range scenarios {
		w := window{name: sc.name, start: time.Now()}
		sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
		t0 := time.Now()
		res, err := sc.run(sctx)
		scancel()
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.name, err)
		}
		// Let the last FINs and ACKs through before the next
		// scenario's window opens.
		time.Sleep(300 * time.Millisecond)
		w.end = time.Now()
		windows = append(windows, w)
		fmt.Fprintf(log, "%-14s %5.2fs  %s\n", sc.name, time.Since(t0).Seconds(), res)
	}
	cluster.Close()
	clusterUp = false
	time.Sleep(200 * time.Millisecond)

	pkts, err := capt.stop()
	if err != nil {
		return err
	}
	byScenario := split(pkts, windows)
	if stray := byScenario[""]; len(stray) > 0 {
		return fmt.Errorf("%d captured packets belong to no scenario", len(stray))
	}

	for _, sc := range scenarios {
		path := filepath.Join(dir, sc.name+".pcap")
		if err := writePcap(path, byScenario[sc.name]); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		st, err := readRequests(path, brokerPortSet())
		if err != nil {
			return fmt.Errorf("re-reading %s: %w", path, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "%s: %d bytes, %d frames, %d connections\n", path, fi.Size(), st.Frames, st.Connections)
		for _, k := range sortedKeys(st.Requests) {
			var vs []string
			for _, v := range sortedKeys(st.Versions[k]) {
				vs = append(vs, fmt.Sprintf("v%d", v))
			}
			fmt.Fprintf(log, "  %7d  %2d %-26s %s\n", st.Requests[k], k, kmsg.NameForKey(k), strings.Join(vs, ","))
		}
		var missing []string
		for _, k := range sc.want {
			if st.Requests[k] == 0 {
				missing = append(missing, fmt.Sprintf("%d %s", k, kmsg.NameForKey(k)))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s has no %s requests", path, strings.Join(missing, ", "))
		}
		if fi.Size() >= 1<<20 {
			return fmt.Errorf("%s is %d bytes, want under 1 MiB", path, fi.Size())
		}
	}
	fmt.Fprintf(log, "captured %d packets in %.1fs, no drops\n", len(pkts), time.Since(begin).Seconds())
	return nil
}
