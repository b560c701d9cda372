package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/kidscope/kidscope/internal/realcapture"
)

// rdHook follows a librdkafka client through its debug log ("protocol" and
// "telemetry" contexts, delivered on the Go logs channel): the requests it
// sent and the responses it received, by name, so a scenario waits for
// what it is there to show instead of sleeping for a guessed time. The log
// lines name requests and sizes only; they are not kept.
type rdHook struct {
	*realcapture.Tally[string]
	stop chan struct{}
	done chan struct{}
}

var (
	rdSent     = regexp.MustCompile(`Sent (\w+)Request \(v\d+`)
	rdReceived = regexp.MustCompile(`Received (\w+)Response \(v\d+`)
)

// rdDebug is the debug setting that makes the log lines rdHook reads.
const rdDebug = "protocol,telemetry"

func newRDHook(logs chan kafka.LogEvent) *rdHook {
	h := &rdHook{Tally: realcapture.NewTally[string](), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			select {
			case <-h.stop:
				return
			case ev, ok := <-logs:
				if !ok {
					return
				}
				h.line(ev.Message)
			}
		}
	}()
	return h
}

func (h *rdHook) line(msg string) {
	if m := rdSent.FindStringSubmatch(msg); m != nil {
		h.Sent(m[1])
	} else if m := rdReceived.FindStringSubmatch(msg); m != nil {
		h.Received(m[1])
	}
}

// close stops reading the log (the client is being closed).
func (h *rdHook) close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
}

// rdConfig is the configuration every librdkafka client here starts from.
// Telemetry (enable.metrics.push) is librdkafka's default; it is set
// anyway, to say so.
func rdConfig(seeds []string, clientID string, more kafka.ConfigMap) *kafka.ConfigMap {
	cm := kafka.ConfigMap{
		"bootstrap.servers":      strings.Join(seeds, ","),
		"client.id":              clientID,
		"enable.metrics.push":    true,
		"go.logs.channel.enable": true,
		"debug":                  rdDebug,
		"log_level":              7,
		// Fail within the scenario's bounds rather than retry for long.
		"socket.timeout.ms":    10000,
		"reconnect.backoff.ms": 100,
	}
	for k, v := range more {
		cm[k] = v
	}
	return &cm
}

// rdTelemetry is what a librdkafka scenario waits for before it closes its
// client: the subscription (71) answered, and against a broker whose push
// interval is short (the mock's), a periodic push (72) sent from now on and
// answered. librdkafka sends its final push (Terminating) while it closes;
// in one run a client that closed while a periodic push was under way sent
// none, so the scenarios close just after a push was answered, a whole push
// interval before the next.
func rdTelemetry(ctx context.Context, h *rdHook, periodicPush bool) error {
	if err := h.WaitReceived(ctx, 1, "GetTelemetrySubscriptions"); err != nil {
		return err
	}
	if !periodicPush {
		return nil
	}
	// Pushes go on one connection and are answered in order: the next one
	// sent is number sent+1, and so is its answer.
	sent := h.SentCount("PushTelemetry")
	return h.WaitReceived(ctx, sent+1, "PushTelemetry")
}

// rdProduce produces n records (two thirds to orders, one third to
// payments with a header) in bursts, waiting for each burst's delivery
// reports.
func rdProduce(ctx context.Context, p *kafka.Producer, n int) error {
	orders, payments := realcapture.TopicOrders, realcapture.TopicPayments
	const bursts = 6
	reports := make(chan kafka.Event, n)
	for b := 0; b < bursts; b++ {
		sent := 0
		for i := b * n / bursts; i < (b+1)*n/bursts; i++ {
			msg := &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &orders, Partition: kafka.PartitionAny},
				Key:            fmt.Appendf(nil, "order-%d", i),
				Value:          fmt.Appendf(nil, `{"id":%d,"qty":%d}`, i, i%7+1),
			}
			if i%3 == 2 {
				msg.TopicPartition.Topic = &payments
				msg.Value = fmt.Appendf(nil, `{"amount":%d}`, 100+i)
				msg.Headers = []kafka.Header{{Key: "source", Value: []byte("kidscope")}}
			}
			if err := p.Produce(msg, reports); err != nil {
				return fmt.Errorf("producing: %w", err)
			}
			sent++
		}
		for ; sent > 0; sent-- {
			select {
			case ev := <-reports:
				if m, ok := ev.(*kafka.Message); ok && m.TopicPartition.Error != nil {
					return fmt.Errorf("delivery: %w", m.TopicPartition.Error)
				}
			case <-ctx.Done():
				return fmt.Errorf("waiting for delivery reports: %w", ctx.Err())
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// rdProducer produces Records records with acks=all and idempotence (so
// InitProducerId comes first), then closes.
func rdProducer(ctx context.Context, seeds []string, clientID string, periodicPush bool) (string, error) {
	p, err := kafka.NewProducer(rdConfig(seeds, clientID, kafka.ConfigMap{
		"acks": "all", "enable.idempotence": true, "linger.ms": 5,
	}))
	if err != nil {
		return "", err
	}
	h := newRDHook(p.Logs())
	defer func() { p.Close(); h.close() }()
	if err := rdProduce(ctx, p, realcapture.Records); err != nil {
		return "", err
	}
	if err := rdTelemetry(ctx, h, periodicPush); err != nil {
		return "", err
	}
	summary := fmt.Sprintf("produced %d records; %s", realcapture.Records, h)
	return summary, nil
}

// rdTwoProducers runs two producers, each with its own client ID, so one
// capture holds two client instances: the mock cluster gives every client
// the same telemetry instance ID. Producer 1 starts, gets its telemetry
// subscription and pushes; producer 2 does the same, and closes (its final
// push is Terminating); then producer 1 makes one more periodic push before
// it closes. It needs a short push interval (the mock's).
func rdTwoProducers(ctx context.Context, seeds []string, clientID string, periodicPush bool) (string, error) {
	if !periodicPush {
		return "", errors.New("two-producers needs a broker with a short telemetry push interval")
	}
	type producer struct {
		p *kafka.Producer
		h *rdHook
	}
	start := func(i int) (*producer, error) {
		p, err := kafka.NewProducer(rdConfig(seeds, fmt.Sprintf("%s-%d", clientID, i), kafka.ConfigMap{
			"acks": "all", "linger.ms": 5,
		}))
		if err != nil {
			return nil, err
		}
		pr := &producer{p: p, h: newRDHook(p.Logs())}
		if err := rdProduce(ctx, p, 30); err != nil {
			return pr, err
		}
		return pr, rdTelemetry(ctx, pr.h, true)
	}
	stop := func(pr *producer) {
		if pr != nil {
			pr.p.Close()
			pr.h.close()
		}
	}
	first, err := start(1)
	defer func() { stop(first) }()
	if err != nil {
		return "", err
	}
	second, err := start(2)
	if err != nil {
		stop(second)
		return "", err
	}
	summary2 := fmt.Sprintf("producer 2: 30 records, %s", second.h)
	stop(second)
	// Producer 1 pushes once more, after producer 2's terminating push.
	if err := rdTelemetry(ctx, first.h, true); err != nil {
		return "", err
	}
	summary1 := fmt.Sprintf("producer 1: 30 records, %s", first.h)
	p := first
	first = nil
	stop(p)
	return summary1 + ", pushing after producer 2 closed; " + summary2, nil
}

// rdConsumer consumes both topics from the start in group, with the
// classic protocol or KIP-848's (group.protocol=consumer), until it has
// Records records; commits, waits for the heartbeats it is there to show,
// and closes (leaving the group).
func rdConsumer(ctx context.Context, seeds []string, clientID, group string, kip848, periodicPush bool) (string, error) {
	more := kafka.ConfigMap{
		"group.id":           group,
		"auto.offset.reset":  "earliest",
		"enable.auto.commit": false,
		"fetch.wait.max.ms":  200,
	}
	if kip848 {
		more["group.protocol"] = "consumer"
	} else {
		more["group.protocol"] = "classic"
		more["heartbeat.interval.ms"] = 300
		more["session.timeout.ms"] = 6000
		more["partition.assignment.strategy"] = "cooperative-sticky"
	}
	c, err := kafka.NewConsumer(rdConfig(seeds, clientID, more))
	if err != nil {
		return "", err
	}
	h := newRDHook(c.Logs())
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
		h.close()
	}()
	if err := c.SubscribeTopics([]string{realcapture.TopicOrders, realcapture.TopicPayments}, nil); err != nil {
		return "", err
	}
	got := 0
	for got < realcapture.Records {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("consumed %d of %d records: %w (%s)", got, realcapture.Records, err, h)
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				return "", fmt.Errorf("consuming: %w", ev.TopicPartition.Error)
			}
			got++
		case kafka.Error:
			if ev.IsFatal() {
				return "", fmt.Errorf("consumer: %w", ev)
			}
		}
	}
	if _, err := c.Commit(); err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	hb, n := "Heartbeat", 2
	if kip848 {
		hb, n = "ConsumerGroupHeartbeat", 3
	}
	// Keep polling (a consumer that stops polling is not alive) while the
	// heartbeats come.
	wait, cancel := context.WithCancel(ctx)
	waitErr := make(chan error, 1)
	go func() {
		err := h.WaitReceived(wait, n, hb)
		if err == nil {
			err = rdTelemetry(wait, h, periodicPush)
		}
		waitErr <- err
		cancel()
	}()
	for wait.Err() == nil {
		c.Poll(50)
	}
	cancel()
	if err := <-waitErr; err != nil {
		return "", err
	}
	summary := fmt.Sprintf("consumed %d records in group %s; %s", got, group, h)
	joined := h.SentCount("JoinGroup")
	if kip848 && joined > 0 {
		return "", errors.New("the KIP-848 consumer sent JoinGroup")
	}
	closed = true
	if err := c.Close(); err != nil {
		return "", fmt.Errorf("closing: %w", err)
	}
	return summary, nil
}

// rdAdmin uses librdkafka's admin API: create topics PREFIX-a and PREFIX-b,
// describe a topic's and a broker's configs, list and describe groups, list
// offsets, fetch the offsets of group, describe the cluster, delete
// PREFIX-b. A broker that does not support a call (the mock cluster
// supports few admin APIs) makes it fail; each failure is named in the
// summary, and the scenario goes on.
func rdAdmin(ctx context.Context, seeds []string, clientID, prefix, group string, periodicPush bool) (string, error) {
	// confluent-kafka-go's AdminClient is a librdkafka producer handle
	// without a logs channel; one made from a producer (which produces
	// nothing) is the same handle with one.
	p, err := kafka.NewProducer(rdConfig(seeds, clientID, nil))
	if err != nil {
		return "", err
	}
	h := newRDHook(p.Logs())
	defer func() { p.Close(); h.close() }()
	a, err := kafka.NewAdminClientFromProducer(p)
	if err != nil {
		return "", err
	}
	defer a.Close()
	var failed []string
	note := func(what string, err error) {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", what, err))
		}
	}
	// Each call is bounded: librdkafka holds a request for an API no
	// broker advertises until its timeout.
	const callTimeout = 3 * time.Second
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, callTimeout) }
	topicErr := func(res []kafka.TopicResult, err error) error {
		if err != nil {
			return err
		}
		var errs []error
		for _, r := range res {
			if r.Error.Code() != kafka.ErrNoError {
				errs = append(errs, fmt.Errorf("%s: %w", r.Topic, r.Error))
			}
		}
		return errors.Join(errs...)
	}
	topicA, topicB := prefix+"-a", prefix+"-b"
	opTimeout := kafka.SetAdminOperationTimeout(2 * time.Second)
	var specs []kafka.TopicSpecification
	for _, t := range []string{topicA, topicB} {
		specs = append(specs, kafka.TopicSpecification{Topic: t, NumPartitions: 3, ReplicationFactor: 3,
			Config: map[string]string{"retention.ms": "3600000"}})
	}
	cctx, cancel := call()
	note("create topics", topicErr(a.CreateTopics(cctx, specs, opTimeout)))
	cancel()

	md, err := a.GetMetadata(nil, false, int(callTimeout.Milliseconds()))
	broker := "0"
	if err == nil && len(md.Brokers) > 0 {
		broker = fmt.Sprint(md.Brokers[0].ID)
	}
	note("metadata", err)
	cctx, cancel = call()
	res, err := a.DescribeConfigs(cctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: realcapture.TopicOrders}})
	cancel()
	if err == nil {
		for _, r := range res {
			if r.Error.Code() != kafka.ErrNoError {
				err = r.Error
			}
		}
	}
	note("describe topic configs", err)
	cctx, cancel = call()
	_, err = a.DescribeConfigs(cctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: broker}})
	cancel()
	note("describe broker configs", err)

	var groups []string
	cctx, cancel = call()
	lg, err := a.ListConsumerGroups(cctx)
	cancel()
	if err == nil {
		for _, g := range lg.Valid {
			groups = append(groups, g.GroupID)
		}
		sort.Strings(groups)
	}
	note("list groups", err)
	if len(groups) > 0 {
		cctx, cancel = call()
		_, err = a.DescribeConsumerGroups(cctx, groups)
		cancel()
		note("describe groups", err)
	}
	specsOff := map[kafka.TopicPartition]kafka.OffsetSpec{}
	orders := realcapture.TopicOrders
	for p := int32(0); p < realcapture.OrdersPartitions; p++ {
		specsOff[kafka.TopicPartition{Topic: &orders, Partition: p}] = kafka.LatestOffsetSpec
	}
	var total int64
	cctx, cancel = call()
	lo, err := a.ListOffsets(cctx, specsOff)
	cancel()
	if err == nil {
		for _, r := range lo.ResultInfos {
			if r.Error.Code() != kafka.ErrNoError {
				err = r.Error
			}
			total += int64(r.Offset)
		}
	}
	note("list end offsets", err)
	cctx, cancel = call()
	_, err = a.ListConsumerGroupOffsets(cctx, []kafka.ConsumerGroupTopicPartitions{{Group: group}})
	cancel()
	note("fetch group offsets", err)
	cctx, cancel = call()
	_, err = a.DescribeCluster(cctx)
	cancel()
	note("describe cluster", err)
	cctx, cancel = call()
	note("delete topic", topicErr(a.DeleteTopics(cctx, []string{topicB}, opTimeout)))
	cancel()
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("admin calls: %w (%s)", err, h)
	}
	if err := rdTelemetry(ctx, h, periodicPush); err != nil {
		return "", err
	}
	outcome := "every call succeeded"
	if len(failed) > 0 {
		outcome = "failed: " + strings.Join(failed, "; ")
	}
	return fmt.Sprintf("groups %v, %d records in %s; %s; %s", groups, total, orders, outcome, h), nil
}
