package stoppable

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Listener is a broker's listener a test can stop and start
// again on the same address: stopped, new dials are refused and every
// connection it accepted is closed, as when a broker process dies; started,
// it listens again and Accept resumes. While stopped Accept blocks (an
// error would end kfake's accept loop for good); Close, kfake's, makes it
// return an error.
type Listener struct {
	addr net.Addr

	mu     sync.Mutex
	wake   *sync.Cond
	ln     net.Listener // nil while stopped
	conns  map[*trackedConn]struct{}
	closed bool
}

// trackedConn leaves its listener's set when closed.
type trackedConn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// Listen listens on address, as net.Listen.
func Listen(network, address string) (*Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	l := &Listener{addr: ln.Addr(), ln: ln, conns: map[*trackedConn]struct{}{}}
	l.wake = sync.NewCond(&l.mu)
	return l, nil
}

// Accept waits for a connection, and while stopped for the start.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		for l.ln == nil && !l.closed {
			l.wake.Wait()
		}
		if l.closed {
			l.mu.Unlock()
			return nil, net.ErrClosed
		}
		ln := l.ln
		l.mu.Unlock()

		c, err := ln.Accept()
		l.mu.Lock()
		switch {
		case l.closed:
			l.mu.Unlock()
			if c != nil {
				c.Close()
			}
			return nil, net.ErrClosed
		case l.ln != ln:
			// Stopped while accepting: a stopped broker takes no one.
			l.mu.Unlock()
			if c != nil {
				c.Close()
			}
			continue
		case err != nil:
			l.mu.Unlock()
			return nil, err
		}
		tc := &trackedConn{Conn: c, l: l}
		l.conns[tc] = struct{}{}
		l.mu.Unlock()
		return tc, nil
	}
}

// Stop closes the real listener, so that dials are refused, and every
// connection accepted.
func (l *Listener) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		c.Conn.Close()
		delete(l.conns, c)
	}
}

// Start listens again on the address of the first listen. The port was
// ours a moment ago; another process may take it meanwhile, or the kernel
// refuse it briefly: Listen is tried again for a while.
func (l *Listener) Start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return net.ErrClosed
	}
	if l.ln != nil {
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen(l.addr.Network(), l.addr.String())
		if err == nil {
			l.ln = ln
			l.wake.Broadcast()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("listen again on %s: %w", l.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Close stops the listener for good (kfake's cluster.Close).
func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.wake.Broadcast()
	if l.ln != nil {
		err := l.ln.Close()
		l.ln = nil
		return err
	}
	return nil
}

// Addr is the address it listens on, stopped or not.
func (l *Listener) Addr() net.Addr { return l.addr }
