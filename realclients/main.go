// Command realclients captures real Kafka clients that no one in this
// project wrote, talking on loopback to two brokers no one here wrote
// either, and writes one classic pcap per scenario with its sidecar
// (internal/realcapture):
//
//   - clients: librdkafka (the static librdkafka bundled in
//     confluent-kafka-go, through cgo), kafkajs (node, node/), and franz-go's
//     kgo against the mock;
//   - brokers: franz-go's kfake (in-process, three brokers) and librdkafka's
//     built-in mock cluster (in-process through cgo, three brokers).
//
// Both brokers listen on ports the kernel picks; the capture learns them
// once they listen. Run it from this directory, as root (AF_PACKET):
//
//	(cd node && npm ci) && go run . -o ../testdata/real
//
// kgo against kfake is internal/realtraffic's (pure Go, in the main module).
// Every scenario is bounded in time and stops by itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/kidscope/kidscope/internal/realcapture"
)

func main() {
	out := flag.String("o", "../testdata/real", "directory to write the capture files into")
	iface := flag.String("i", "lo", "interface to capture (the loopback interface)")
	nodeDir := flag.String("node", "node", "directory of the node package (kafkajs.js, node_modules)")
	only := flag.String("run", "", "run only the scenarios whose name matches this regular expression")
	serve := flag.String("serve", "", "only start this broker (kfake or mock), print its addresses and run until stdin closes or 10 minutes pass: for trying a client by hand")
	flag.Parse()
	if *serve != "" {
		if err := serveBroker(*serve); err != nil {
			fmt.Fprintln(os.Stderr, "realclients:", err)
			os.Exit(1)
		}
		return
	}
	var sel *regexp.Regexp
	if *only != "" {
		var err error
		if sel, err = regexp.Compile(*only); err != nil {
			fmt.Fprintln(os.Stderr, "realclients: -run:", err)
			os.Exit(2)
		}
	}
	nd, err := filepath.Abs(*nodeDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "realclients:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := run(ctx, *iface, *out, nd, sel, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "realclients:", err)
		os.Exit(1)
	}
}

// env is what a scenario gets: the broker's addresses, and whether its
// telemetry push interval is short enough to wait for a periodic push (the
// mock's is set to 1 s; kfake's is 30 s and cannot be changed).
type env struct {
	seeds        []string
	periodicPush bool
	nodeDir      string
}

// scenario is one client workload against one broker, captured into
// NAME.pcap with NAME = CLIENT-ROLE-BROKER.
type scenario struct {
	client, role string
	run          func(ctx context.Context, e env, name string) (string, error)
}

// clientID is the client ID each scenario's client uses: kidscope-NAME.
func clientID(name string) string { return "kidscope-" + name }

var (
	rdkafkaScenarios = []scenario{
		{"rdkafka", "producer", func(ctx context.Context, e env, name string) (string, error) {
			return rdProducer(ctx, e.seeds, clientID(name), e.periodicPush)
		}},
		{"rdkafka", "consumer-classic", func(ctx context.Context, e env, name string) (string, error) {
			return rdConsumer(ctx, e.seeds, clientID(name), "kidscope-rdkafka-classic", false, e.periodicPush)
		}},
		{"rdkafka", "consumer-848", func(ctx context.Context, e env, name string) (string, error) {
			return rdConsumer(ctx, e.seeds, clientID(name), "kidscope-rdkafka-848", true, e.periodicPush)
		}},
		{"rdkafka", "admin", func(ctx context.Context, e env, name string) (string, error) {
			return rdAdmin(ctx, e.seeds, clientID(name), "kidscope-rdkafka-admin", "kidscope-rdkafka-classic", e.periodicPush)
		}},
	}
	kafkajsScenarios = []scenario{
		{"kafkajs", "producer", func(ctx context.Context, e env, name string) (string, error) {
			return runKafkajs(ctx, e.nodeDir, kafkajsArgs{Role: "producer", Brokers: e.seeds, ClientID: clientID(name)})
		}},
		{"kafkajs", "consumer-classic", func(ctx context.Context, e env, name string) (string, error) {
			return runKafkajs(ctx, e.nodeDir, kafkajsArgs{Role: "consumer-classic", Brokers: e.seeds, ClientID: clientID(name),
				Group: "kidscope-kafkajs-classic"})
		}},
		{"kafkajs", "admin", func(ctx context.Context, e env, name string) (string, error) {
			return runKafkajs(ctx, e.nodeDir, kafkajsArgs{Role: "admin", Brokers: e.seeds, ClientID: clientID(name),
				Prefix: "kidscope-kafkajs-admin", Group: "kidscope-kafkajs-classic"})
		}},
	}
	// Only against the mock: two librdkafka clients in one capture (the
	// mock gives both the same instance ID), and kgo, which cannot get past
	// the mock's ApiVersions answer (bounded: it gives up after three
	// ApiVersions exchanges, 5 s apart, or 15 s).
	mockOnlyScenarios = []scenario{
		{"rdkafka", "two-producers", func(ctx context.Context, e env, name string) (string, error) {
			return rdTwoProducers(ctx, e.seeds, clientID(name), e.periodicPush)
		}},
		{"kgo", "producer", func(ctx context.Context, e env, name string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			return realcapture.KgoProducerGivingUp(ctx, e.seeds, clientID(name), 3)
		}},
	}
)

// broker is one of the two clusters, started when its scenarios run.
type broker struct {
	name, version string
	start         func() (seeds []string, periodicPush bool, stop func(), err error)
	scenarios     []scenario
}

// mockPushIntervalMs is the telemetry push interval the mock hands out.
const mockPushIntervalMs = 1000

func brokers() []broker {
	_, rdVersion := kafka.LibraryVersion()
	all := append(append([]scenario{}, rdkafkaScenarios...), kafkajsScenarios...)
	return []broker{
		{
			name: "kfake", version: realcapture.ModuleVersion("github.com/twmb/franz-go/pkg/kfake"),
			start: func() ([]string, bool, func(), error) {
				c, err := realcapture.NewKfake()
				if err != nil {
					return nil, false, nil, err
				}
				return c.ListenAddrs(), false, c.Close, nil
			},
			scenarios: all,
		},
		{
			name: "mock", version: "librdkafka " + rdVersion + " mock cluster",
			start: func() ([]string, bool, func(), error) {
				m, err := newMockCluster(3)
				if err != nil {
					return nil, false, nil, err
				}
				for _, t := range []struct {
					name string
					n    int
				}{{realcapture.TopicOrders, realcapture.OrdersPartitions}, {realcapture.TopicPayments, realcapture.PaymentsPartitions}} {
					if err := m.createTopic(t.name, t.n, 3); err != nil {
						m.close()
						return nil, false, nil, err
					}
				}
				if err := m.setTelemetry(mockPushIntervalMs, []string{""}); err != nil {
					m.close()
					return nil, false, nil, err
				}
				m.setGroupTimings(500)
				return m.bootstraps(), true, m.close, nil
			},
			scenarios: append(all, mockOnlyScenarios...),
		},
	}
}

func clientVersion(client, nodeDir string) (string, error) {
	switch client {
	case "rdkafka":
		_, v := kafka.LibraryVersion()
		return "librdkafka " + v + " (static, bundled in " + realcapture.ModuleVersion("github.com/confluentinc/confluent-kafka-go/v2") + ")", nil
	case "kafkajs":
		v, err := kafkajsVersion(nodeDir)
		if err != nil {
			return "", err
		}
		node, err := exec.Command("node", "--version").Output()
		if err != nil {
			return "", fmt.Errorf("node: %w", err)
		}
		return "kafkajs " + v + " (node " + strings.TrimSpace(string(node)) + ")", nil
	case "kgo":
		return realcapture.ModuleVersion("github.com/twmb/franz-go"), nil
	}
	return "", fmt.Errorf("unknown client %s", client)
}

func run(ctx context.Context, iface, dir, nodeDir string, sel *regexp.Regexp, log io.Writer) (err error) {
	begin := time.Now()
	s, err := realcapture.NewSession(iface, log)
	if err != nil {
		return err
	}
	defer func() {
		if serr := s.Stop(); err == nil && serr != nil {
			err = serr
		}
	}()
	versions := map[string]string{}
	for _, b := range brokers() {
		var todo []scenario
		for _, sc := range b.scenarios {
			if sel == nil || sel.MatchString(sc.client+"-"+sc.role+"-"+b.name) {
				todo = append(todo, sc)
			}
		}
		if len(todo) == 0 {
			continue
		}
		seeds, periodic, stop, err := b.start()
		if err != nil {
			return fmt.Errorf("starting %s: %w", b.name, err)
		}
		ports, err := realcapture.PortsOf(seeds)
		if err != nil {
			stop()
			return err
		}
		s.Watch(ports)
		fmt.Fprintf(log, "%s listens on %v\n", b.name, seeds)
		e := env{seeds: seeds, periodicPush: periodic, nodeDir: nodeDir}
		for _, sc := range todo {
			name := sc.client + "-" + sc.role + "-" + b.name
			cv, ok := versions[sc.client]
			if !ok {
				if cv, err = clientVersion(sc.client, nodeDir); err != nil {
					stop()
					return err
				}
				versions[sc.client] = cv
			}
			meta := realcapture.Meta{Scenario: name, Client: sc.client, ClientVersion: cv, Role: sc.role,
				Broker: b.name, BrokerVersion: b.version, Ports: ports}
			if err := s.Run(ctx, meta, 40*time.Second, func(ctx context.Context) (string, error) { return sc.run(ctx, e, name) }); err != nil {
				stop()
				return err
			}
		}
		stop()
		time.Sleep(200 * time.Millisecond)
	}
	if err := s.Write(dir); err != nil {
		return err
	}
	fmt.Fprintf(log, "done in %.1fs\n", time.Since(begin).Seconds())
	return nil
}

// serveBroker starts one broker, prints its addresses and waits (bounded).
func serveBroker(name string) error {
	for _, b := range brokers() {
		if b.name != name {
			continue
		}
		seeds, _, stop, err := b.start()
		if err != nil {
			return err
		}
		defer stop()
		fmt.Println(strings.Join(seeds, ","))
		done := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Minute):
		}
		return nil
	}
	return fmt.Errorf("-serve %s: no such broker (kfake, mock)", name)
}
