// Command realtraffic makes packet captures of real Kafka traffic: it starts
// an in-process three-broker Kafka cluster (franz-go's kfake) on ports the
// kernel picks, captures the loopback interface with AF_PACKET (pure Go,
// gopacket's afpacket), runs franz-go clients through a few scenarios, and
// writes each scenario's connections to its own classic pcap file with a
// sidecar naming the broker ports (internal/realcapture).
//
//	go run ./internal/realtraffic -o testdata/real
//
// It needs root (or CAP_NET_RAW) for the capture. It fails if the kernel
// dropped a packet, a frame was truncated, or a scenario failed. The other
// clients (librdkafka, kafkajs) and librdkafka's mock cluster are in the
// separate realclients module, which needs cgo and npm.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kidscope/kidscope/internal/realcapture"
)

func main() {
	out := flag.String("o", "testdata/real", "directory to write the capture files into")
	iface := flag.String("i", "lo", "interface to capture (the loopback interface)")
	table := flag.String("table", "", "capture nothing: print the Markdown tables of testdata/real/README.md from the sidecars in this directory")
	flag.Parse()
	if *table != "" {
		s, err := realcapture.Tables(*table)
		if err != nil {
			fmt.Fprintln(os.Stderr, "realtraffic:", err)
			os.Exit(1)
		}
		fmt.Print(s)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *iface, *out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "realtraffic:", err)
		os.Exit(1)
	}
}

// scenario is one kgo workload against kfake, captured into NAME.pcap.
type scenario struct {
	name, role string
	run        func(ctx context.Context, seeds []string) (string, error)
}

// Group IDs of the consumer scenarios; the admin scenario fetches the
// classic group's offsets.
const (
	groupClassic = "kidscope-kgo-classic"
	group848     = "kidscope-kgo-848"
)

var scenarios = []scenario{
	{"kgo-producer-kfake", "producer", func(ctx context.Context, seeds []string) (string, error) {
		return realcapture.KgoProducer(ctx, seeds, "kidscope-kgo-producer")
	}},
	{"kgo-consumer-classic-kfake", "consumer-classic", func(ctx context.Context, seeds []string) (string, error) {
		return realcapture.KgoConsumerClassic(ctx, seeds, "kidscope-kgo-consumer-classic", groupClassic)
	}},
	{"kgo-consumer-848-kfake", "consumer-848", func(ctx context.Context, seeds []string) (string, error) {
		return realcapture.KgoConsumer848(ctx, seeds, "kidscope-kgo-consumer-848", group848)
	}},
	{"kgo-admin-kfake", "admin", func(ctx context.Context, seeds []string) (string, error) {
		return realcapture.KgoAdmin(ctx, seeds, "kidscope-kgo-admin", "kidscope-kgo-admin", groupClassic)
	}},
}

// run captures every scenario into dir.
func run(ctx context.Context, iface, dir string, log io.Writer) (err error) {
	begin := time.Now()
	// The capture starts before the cluster listens, so every connection
	// is seen from its SYN.
	s, err := realcapture.NewSession(iface, log)
	if err != nil {
		return err
	}
	defer func() {
		if serr := s.Stop(); err == nil && serr != nil {
			err = serr
		}
	}()
	cluster, err := realcapture.NewKfake()
	if err != nil {
		return fmt.Errorf("starting kfake cluster: %w", err)
	}
	defer cluster.Close()
	seeds := cluster.ListenAddrs()
	ports, err := realcapture.PortsOf(seeds)
	if err != nil {
		return err
	}
	s.Watch(ports)
	fmt.Fprintf(log, "kfake listens on %v\n", seeds)

	for _, sc := range scenarios {
		meta := realcapture.Meta{
			Scenario: sc.name, Role: sc.role, Ports: ports,
			Client: "kgo", ClientVersion: realcapture.ModuleVersion("github.com/twmb/franz-go"),
			Broker: "kfake", BrokerVersion: realcapture.ModuleVersion("github.com/twmb/franz-go/pkg/kfake"),
		}
		if err := s.Run(ctx, meta, 20*time.Second, func(ctx context.Context) (string, error) { return sc.run(ctx, seeds) }); err != nil {
			return err
		}
	}
	cluster.Close()
	time.Sleep(200 * time.Millisecond)
	if err := s.Write(dir); err != nil {
		return err
	}
	fmt.Fprintf(log, "done in %.1fs\n", time.Since(begin).Seconds())
	return nil
}
