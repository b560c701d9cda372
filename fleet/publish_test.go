package fleet

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kidscope/kidscope/internal/stoppable"
)

// TestPublisherTimesOutWithBrokerGone: records waiting for a broker that
// went away are dropped and counted after DeliveryTimeout, those that were
// in a request on the connection that died too, so that the buffer empties
// for later records however long the broker stays away.
func TestPublisherTimesOutWithBrokerGone(t *testing.T) {
	var sl *stoppable.Listener
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "kidscope"),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			var err error
			sl, err = stoppable.Listen(network, address)
			return sl, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	p, err := NewPublisher(PublisherOptions{Brokers: cluster.ListenAddrs(), Topic: "kidscope", Agent: "gone",
		MaxBuffered: 20, DeliveryTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(time.Second)
	// settled polls until every record published is delivered or dropped;
	// the deadline only keeps a failure from hanging.
	settled := func(what string) (published, delivered, dropped int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			published, delivered, dropped = p.Counts()
			if delivered+dropped == published {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d published, %d delivered, %d dropped: %d records wait still", what, published, delivered, dropped,
					published-delivered-dropped)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for range 3 {
		p.Hello(false)
	}
	if published, delivered, _ := settled("broker up"); delivered != published {
		t.Fatalf("broker up: %d published, %d delivered", published, delivered)
	}
	_, delivered, _ := p.Counts()
	sl.Stop()
	for range 5 {
		p.Hello(false)
	}
	published, delivered2, dropped := settled("broker gone, records past their delivery timeout")
	if delivered2 != delivered || dropped != 5 {
		t.Errorf("broker gone: %d published, %d delivered (%d before), %d dropped, want the 5 since dropped", published, delivered2, delivered, dropped)
	}
}

// TestPublisherCountsAddUp: with Kafka away for the whole run, every
// record published is counted dropped once Close returns, though the
// producer may answer for some of them later.
func TestPublisherCountsAddUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	away := ln.Addr().String()
	ln.Close()
	for range 3 {
		p, err := NewPublisher(PublisherOptions{Brokers: []string{away}, Topic: "kidscope", Agent: "away"})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			p.Hello(false)
		}
		p.Close(100 * time.Millisecond)
		published, delivered, dropped := p.Counts()
		if published != 12 || delivered != 0 || dropped != published {
			t.Errorf("Kafka away: %d published, %d delivered, %d dropped", published, delivered, dropped)
		}
		// Why: the producer gave the records no error of their own
		// (closed), the dial did.
		if full, last := p.Cause(); last == nil || !strings.Contains(last.Error(), "dial") || full != 0 {
			t.Errorf("Kafka away: cause %v, %d past the buffer", last, full)
		}
	}
}
