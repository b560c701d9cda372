package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
)

// tryKafkaPort is try-kafka's port when none is given: not Kafka's 9092,
// so that it does not take the place of a Kafka the user runs.
const tryKafkaPort = 39092

// newTryKafkaCmd is kidscope try-kafka: an in-memory Kafka (franz-go's
// kfake) on loopback, so that a newcomer can try the agents and the fleet
// on one machine with the kidscope binary alone (docs/fleet-try.md). It is
// hidden from the list of commands, which are kidscope's tools; fleet
// --help names it.
func newTryKafkaCmd() *cobra.Command {
	var port, partitions int
	var topic string
	cmd := &cobra.Command{
		Use:   "try-kafka",
		Short: "Run an in-memory Kafka on this machine, to try live --publish, analyze --publish and fleet",
		Long: `try-kafka runs an in-memory Kafka (franz-go's kfake) on 127.0.0.1, with the topic the agents
publish to, prints its address on standard output and the commands that use it on standard
error, and serves until Ctrl-C (SIGINT) or SIGTERM. It keeps nothing: what was published is lost
when it stops. It is for trying kidscope fleet on one machine (docs/fleet-try.md), not for a
fleet: it listens on loopback only, without TLS or SASL.`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if port < 0 || port > 65535 {
				return usageError(fmt.Errorf("--port %d: want 0 (any free port) to 65535", port))
			}
			if partitions < 1 || partitions > 1000 {
				return usageError(fmt.Errorf("--partitions %d: want 1 to 1000", partitions))
			}
			if topic == "" {
				return usageError(fmt.Errorf("--topic: want a topic name"))
			}
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(int32(partitions), topic))
			if err != nil {
				return inputError(fmt.Errorf("start an in-memory Kafka on port %d: %w (another Kafka there? --port 0 takes any free port)", port, err))
			}
			defer cluster.Close()
			addr := cluster.ListenAddrs()[0]
			fmt.Fprintln(cmd.OutOrStdout(), addr)
			topicFlag := ""
			if topic != "kidscope" {
				topicFlag = " --topic " + topic
			}
			fmt.Fprintf(os.Stderr, `kidscope: an in-memory Kafka at %[1]s, topic %[2]s (%[3]d partitions); what it holds is lost when it stops (Ctrl-C).
Agents publish to it:
  kidscope analyze --publish %[1]s%[4]s --agent NAME CAPTURE...
  kidscope live -i IFACE -p 9092 --publish %[1]s%[4]s --agent NAME
The fleet reads it:
  kidscope fleet --brokers %[1]s%[5]s --from-beginning --until-end -o table
`, addr, topic, partitions, publishTopicFlag(topic), topicFlag)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&port, "port", tryKafkaPort, "the port to listen on, on 127.0.0.1 (0: any free port)")
	fl.StringVar(&topic, "topic", "kidscope", "the topic to make, which the agents publish to")
	fl.IntVar(&partitions, "partitions", 3, "its partitions")
	return cmd
}

// publishTopicFlag is the agents' flag for a topic other than the default.
func publishTopicFlag(topic string) string {
	if topic == "kidscope" {
		return ""
	}
	return " --publish-topic " + topic
}
