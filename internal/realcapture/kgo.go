package realcapture

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The topics every cluster is seeded with, and how many records each
// producer scenario writes to them. Consumers read from the start until they
// have at least Records records.
const (
	TopicOrders   = "kidscope-orders"
	TopicPayments = "kidscope-payments"

	OrdersPartitions   = 3
	PaymentsPartitions = 2

	NOrders   = 200
	NPayments = 100
	Records   = NOrders + NPayments
)

// keyHook counts, through kgo's hooks, the requests a client wrote and
// the responses it read, by API key.
type keyHook struct{ *Tally[int16] }

func newKeyHook() *keyHook { return &keyHook{NewTally[int16]()} }

func (h *keyHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.Sent(key)
	}
}

func (h *keyHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.Received(key)
	}
}

func newClient(seeds []string, clientID string, hook *keyHook, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(clientID),
		kgo.WithHooks(hook),
	}
	return kgo.NewClient(append(base, opts...)...)
}

// closeWithTelemetry closes cl and checks that it sent its final KIP-714
// PushTelemetry (Terminating) on the way out.
func closeWithTelemetry(cl *kgo.Client, hook *keyHook) error {
	cl.Close()
	if hook.SentCount(int16(kmsg.PushTelemetry)) == 0 {
		return errors.New("client closed without sending PushTelemetry")
	}
	return nil
}

// KgoProducer produces Records small records to the two topics with kgo's
// defaults: acks=all and idempotence, so InitProducerID comes first.
func KgoProducer(ctx context.Context, seeds []string, clientID string) (string, error) {
	hook := newKeyHook()
	cl, err := newClient(seeds, clientID, hook,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	if err := produceBursts(ctx, cl); err != nil {
		return "", err
	}
	// Telemetry starts once the client has produced: it asks for its
	// subscription, and pushes a final (terminating) report on close.
	if err := hook.WaitReceived(ctx, 1, int16(kmsg.GetTelemetrySubscriptions)); err != nil {
		return "", err
	}
	if err := closeWithTelemetry(cl, hook); err != nil {
		return "", err
	}
	return fmt.Sprintf("produced %d records; %s", Records, hook), nil
}

// produceBursts writes the records in a few bursts, so there are several
// Produce requests and batches.
func produceBursts(ctx context.Context, cl *kgo.Client) error {
	const bursts = 6
	for b := 0; b < bursts; b++ {
		var recs []*kgo.Record
		for i := b * NOrders / bursts; i < (b+1)*NOrders/bursts; i++ {
			recs = append(recs, &kgo.Record{
				Topic: TopicOrders,
				Key:   fmt.Appendf(nil, "order-%d", i),
				Value: fmt.Appendf(nil, `{"id":%d,"qty":%d}`, i, i%7+1),
			})
		}
		for i := b * NPayments / bursts; i < (b+1)*NPayments/bursts; i++ {
			recs = append(recs, &kgo.Record{
				Topic:   TopicPayments,
				Key:     fmt.Appendf(nil, "order-%d", i*2),
				Value:   fmt.Appendf(nil, `{"amount":%d}`, 100+i),
				Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("kidscope")}},
			})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("producing: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// KgoProducerGivingUp is KgoProducer against a broker kgo cannot talk to
// (librdkafka's mock cluster answers kgo's ApiVersions v5 with
// UNSUPPORTED_VERSION and a v0 body; kgo closes the connection and tries
// the next seed broker 5 s later, for ever): it tries to produce one record
// until ctx ends or the client has read maxAPIVersions ApiVersions
// responses, whichever is first, and reports what it wrote. It is not an
// error for the record not to get through.
func KgoProducerGivingUp(ctx context.Context, seeds []string, clientID string, maxAPIVersions int) (string, error) {
	hook := newKeyHook()
	cl, err := newClient(seeds, clientID, hook, kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- cl.ProduceSync(pctx, &kgo.Record{Topic: TopicOrders, Value: []byte("one")}).FirstErr()
	}()
	var perr error
wait:
	for {
		n, ch := hook.ReceivedCount(int16(kmsg.ApiVersions))
		if n >= maxAPIVersions {
			cancel()
		}
		select {
		case perr = <-done:
			break wait
		case <-ch:
		case <-ctx.Done():
			cancel()
			perr = <-done
			break wait
		}
	}
	cl.Close()
	outcome := "the record got through"
	if perr != nil {
		outcome = "gave up: " + perr.Error()
	}
	return fmt.Sprintf("%s; %s", outcome, hook), nil
}

// consume polls cl until it has at least Records records.
func consume(ctx context.Context, cl *kgo.Client) (int, error) {
	got := 0
	for got < Records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return got, fmt.Errorf("consumed %d of %d records: %w", got, Records, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("fetching %s[%d]: %w", t, p, err) })
		if ferr != nil {
			return got, ferr
		}
		got += fs.NumRecords()
	}
	return got, nil
}

// KgoConsumerClassic consumes both topics as a member of a classic consumer
// group (JoinGroup, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit,
// LeaveGroup).
func KgoConsumerClassic(ctx context.Context, seeds []string, clientID, group string) (string, error) {
	hook := newKeyHook()
	cl, err := newClient(seeds, clientID, hook,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(TopicOrders, TopicPayments),
		kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.AutoCommitInterval(500*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	got, err := consume(ctx, cl)
	if err != nil {
		return "", err
	}
	if err := hook.WaitReceived(ctx, 2, int16(kmsg.Heartbeat)); err != nil {
		return "", err
	}
	if err := hook.WaitReceived(ctx, 1, int16(kmsg.GetTelemetrySubscriptions)); err != nil {
		return "", err
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	if err := closeWithTelemetry(cl, hook); err != nil {
		return "", err
	}
	return fmt.Sprintf("consumed %d records in group %s; %s", got, group, hook), nil
}

// KgoConsumer848 consumes both topics as a member of a KIP-848 consumer
// group: the broker assigns partitions through ConsumerGroupHeartbeat.
func KgoConsumer848(ctx context.Context, seeds []string, clientID, group string) (string, error) {
	hook := newKeyHook()
	cl, err := newClient(seeds, clientID, hook,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(TopicOrders, TopicPayments),
		kgo.ServerSideBalancer(),
		kgo.AutoCommitInterval(500*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	got, err := consume(ctx, cl)
	if err != nil {
		return "", err
	}
	if err := hook.WaitReceived(ctx, 3, int16(kmsg.ConsumerGroupHeartbeat)); err != nil {
		return "", err
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	if err := closeWithTelemetry(cl, hook); err != nil {
		return "", err
	}
	if hook.SentCount(int16(kmsg.JoinGroup)) > 0 {
		return "", errors.New("the KIP-848 consumer fell back to the classic protocol (JoinGroup sent)")
	}
	return fmt.Sprintf("consumed %d records in group %s; %s", got, group, hook), nil
}

// KgoAdmin uses kadm: create topics PREFIX-a and PREFIX-b, describe
// configs, list and describe groups, list offsets, fetch the offsets of
// group, delete PREFIX-b.
func KgoAdmin(ctx context.Context, seeds []string, clientID, prefix, group string) (string, error) {
	hook := newKeyHook()
	cl, err := newClient(seeds, clientID, hook)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	topicA, topicB := prefix+"-a", prefix+"-b"
	created, err := adm.CreateTopics(ctx, 3, 3, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, topicA, topicB)
	if err != nil {
		return "", fmt.Errorf("creating topics: %w", err)
	}
	if err := created.Error(); err != nil {
		return "", fmt.Errorf("creating topics: %w", err)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, topicA, TopicOrders)
	if err != nil {
		return "", fmt.Errorf("describing topic configs: %w", err)
	}
	for _, c := range cfgs {
		if c.Err != nil {
			return "", fmt.Errorf("describing configs of %s: %w", c.Name, c.Err)
		}
	}
	if _, err := adm.DescribeBrokerConfigs(ctx, 0); err != nil {
		return "", fmt.Errorf("describing broker configs: %w", err)
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return "", fmt.Errorf("listing groups: %w", err)
	}
	if _, err := adm.DescribeGroups(ctx, groups.Groups()...); err != nil {
		return "", fmt.Errorf("describing groups: %w", err)
	}
	if _, err := adm.ListStartOffsets(ctx, TopicOrders, TopicPayments); err != nil {
		return "", fmt.Errorf("listing start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, TopicOrders, TopicPayments)
	if err != nil {
		return "", fmt.Errorf("listing end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return "", fmt.Errorf("listing end offsets: %w", err)
	}
	if _, err := adm.FetchOffsets(ctx, group); err != nil {
		return "", fmt.Errorf("fetching group offsets: %w", err)
	}
	deleted, err := adm.DeleteTopics(ctx, topicB)
	if err != nil {
		return "", fmt.Errorf("deleting topic: %w", err)
	}
	if err := deleted.Error(); err != nil {
		return "", fmt.Errorf("deleting topic: %w", err)
	}
	cl.Close()
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	return fmt.Sprintf("groups %v, %d records in the seeded topics; %s", groups.Groups(), total, hook), nil
}
