package main

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/internal/realcapture"
	"github.com/kidscope/kidscope/kafka"
)

// Client IDs of the kgo scenario.
const (
	producerID = "kidscope-tls-producer"
	consumerID = "kidscope-tls-consumer"
)

// hook counts, through kgo's hooks, the requests a client wrote and the
// responses it read, by API key.
type hook struct{ *realcapture.Tally[int16] }

func (h hook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.Sent(key)
	}
}

func (h hook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.Received(key)
	}
}

// kgoClient is a kgo client for seeds, over TLS when tlsCfg is not nil.
func kgoClient(seeds []string, clientID string, tlsCfg *tls.Config, opts ...kgo.Opt) (*kgo.Client, hook, error) {
	h := hook{realcapture.NewTally[int16]()}
	base := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID(clientID), kgo.WithHooks(h)}
	if tlsCfg != nil {
		base = append(base, kgo.DialTLSConfig(tlsCfg))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	return cl, h, err
}

// kgoScenario is the scenario run in plaintext and over TLS: a producer
// writes nRecords records to the one-partition topic in two bursts (acks
// all, idempotent), closes; then a classic consumer group member reads them
// from the start, commits, leaves. Both wait for their telemetry
// subscription (KIP-714) before closing, so each sends a terminating
// PushTelemetry. One after the other, a broker of its own, a linger that
// puts each burst in one batch, auto-commit off: the requests are the same
// from run to run, up to the background ones (metadata refreshes, fetches
// in flight at the end).
func kgoScenario(ctx context.Context, seeds []string, tlsCfg *tls.Config) (string, error) {
	p, ph, err := kgoClient(seeds, producerID, tlsCfg,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(50*time.Millisecond),
		kgo.DefaultProduceTopic(topic),
	)
	if err != nil {
		return "", err
	}
	defer p.Close()
	for b := 0; b < 2; b++ {
		var recs []*kgo.Record
		for i := b * nRecords / 2; i < (b+1)*nRecords/2; i++ {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"n":%d}`, i)})
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return "", fmt.Errorf("producing: %w", err)
		}
	}
	if err := ph.WaitReceived(ctx, 1, int16(kmsg.GetTelemetrySubscriptions)); err != nil {
		return "", fmt.Errorf("producer telemetry: %w", err)
	}
	p.Close()
	if ph.SentCount(int16(kmsg.PushTelemetry)) == 0 {
		return "", errors.New("producer closed without PushTelemetry")
	}

	c, ch, err := kgoClient(seeds, consumerID, tlsCfg,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return "", err
	}
	defer c.Close()
	got := 0
	for got < nRecords {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("consumed %d of %d: %w", got, nRecords, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("fetching %s[%d]: %w", t, p, err) })
		if ferr != nil {
			return "", ferr
		}
		got += fs.NumRecords()
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	if err := ch.WaitReceived(ctx, 1, int16(kmsg.GetTelemetrySubscriptions)); err != nil {
		return "", fmt.Errorf("consumer telemetry: %w", err)
	}
	c.Close()
	if ch.SentCount(int16(kmsg.PushTelemetry)) == 0 {
		return "", errors.New("consumer closed without PushTelemetry")
	}
	return fmt.Sprintf("produced %d records, consumed %d in group %s; producer %s; consumer %s", nRecords, got, group, ph, ch), nil
}

// violatingScenario is cmd/kidscope's violating client over TLS: a
// seed-profile client (client ID "crafted") whose third request changes its
// header instance ID (KIP-1313 tag 0), which breaks header-id-changed.
func violatingScenario(ctx context.Context, seeds []string, tlsCfg *tls.Config) (string, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: tlsCfg}
	conn, err := d.DialContext(ctx, "tcp", seeds[0])
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return "", err
		}
	}
	a := kafka.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	b := kafka.UUID{9, 9, 9, 9, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	send := func(key, ver int16, corr int32, id kafka.UUID, body kmsg.Request) error {
		body.SetVersion(ver)
		api, _ := decode.LookupAPI(key)
		h := decode.RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: corr, HeaderVersion: api.RequestHeaderVersion(ver),
			ClientID: "crafted", InstanceID: id, HasInstanceID: true}
		if _, err := conn.Write(decode.AppendRequest(nil, h, body.AppendTo(nil))); err != nil {
			return err
		}
		var size int32
		if err := binary.Read(conn, binary.BigEndian, &size); err != nil {
			return err
		}
		_, err := io.CopyN(io.Discard, conn, int64(size))
		return err
	}
	for _, r := range []struct {
		key, ver int16
		corr     int32
		id       kafka.UUID
		body     kmsg.Request
	}{
		{18, 3, 0, a, &kmsg.ApiVersionsRequest{ClientSoftwareName: "crafted", ClientSoftwareVersion: "1"}},
		{3, 12, 1, a, &kmsg.MetadataRequest{}},
		{3, 12, 2, b, &kmsg.MetadataRequest{}},
	} {
		if err := send(r.key, r.ver, r.corr, r.id, r.body); err != nil {
			return "", fmt.Errorf("request key %d corr %d: %w", r.key, r.corr, err)
		}
	}
	return "ApiVersions v3, Metadata v12 twice; the third request's instance ID differs from the first two's (header-id-changed)", nil
}
