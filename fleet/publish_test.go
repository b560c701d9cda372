package fleet

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// stoppableListener is a broker's listener the test can stop as a broker
// dies: the real listener closed, so dials are refused, and every
// connection it accepted closed. Stopped, Accept waits for Close (an error
// would end kfake's accept loop early, which is harmless here, but a
// stopped broker is not a closed cluster).
type stoppableListener struct {
	net.Listener
	mu      sync.Mutex
	conns   []net.Conn
	stopped bool
	closed  chan struct{}
	once    sync.Once
}

func (l *stoppableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	l.mu.Lock()
	stopped := l.stopped
	if err == nil && !stopped {
		l.conns = append(l.conns, c)
	}
	l.mu.Unlock()
	if stopped {
		if c != nil {
			c.Close()
		}
		<-l.closed
		return nil, net.ErrClosed
	}
	return c, err
}

func (l *stoppableListener) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.Listener.Close()
	for _, c := range l.conns {
		c.Close()
	}
}

func (l *stoppableListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// TestPublisherTimesOutWithBrokerGone: records waiting for a broker that
// went away are dropped and counted after DeliveryTimeout, those that were
// in a request on the connection that died too, so that the buffer empties
// for later records however long the broker stays away.
func TestPublisherTimesOutWithBrokerGone(t *testing.T) {
	var sl *stoppableListener
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "kidscope"),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			ln, err := net.Listen(network, address)
			if err != nil {
				return nil, err
			}
			sl = &stoppableListener{Listener: ln, closed: make(chan struct{})}
			return sl, nil
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
