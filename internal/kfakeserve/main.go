// Command kfakeserve runs an in-process Kafka cluster (franz-go's kfake)
// for benchmarks that publish to Kafka (scripts/live-bench.sh): it prints
// the brokers' addresses on one line and serves until SIGINT or SIGTERM,
// with as many brokers as asked on free ports. To try the fleet, kidscope
// try-kafka is the same with the kidscope binary alone
// (docs/fleet-try.md).
//
//	go run ./internal/kfakeserve -brokers 1 -topic kidscope -partitions 3
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	brokers := flag.Int("brokers", 1, "brokers in the cluster")
	topic := flag.String("topic", "kidscope", "topic to create")
	partitions := flag.Int("partitions", 3, "its partitions")
	flag.Parse()
	c, err := kfake.NewCluster(kfake.NumBrokers(*brokers), kfake.SeedTopics(int32(*partitions), *topic))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakeserve:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(strings.Join(c.ListenAddrs(), ","))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
