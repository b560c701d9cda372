package realcapture

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/afpacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// snapLen is the snapshot length written into the pcap headers and asked of
// the kernel. Loopback's MTU is 65536, so 256 KiB (what tcpdump uses) never
// truncates a frame.
const snapLen = 262144

// packetOutgoing is the kernel's PACKET_OUTGOING packet type
// (linux/if_packet.h).
const packetOutgoing = 4

// kernelFilter drops the copy of every packet that the kernel hands to packet
// sockets on transmit. On the loopback interface each packet is seen twice,
// once going out and once coming back in; libpcap drops the outgoing copy on
// "lo" for the same reason, and so do we, so that every TCP segment appears
// once in the capture, as with tcpdump -i lo.
func kernelFilter() ([]bpf.RawInstruction, error) {
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: packetOutgoing, SkipTrue: 1},
		bpf.RetConstant{Val: snapLen},
		bpf.RetConstant{Val: 0},
	})
}

// Packet is one captured frame, copied out of the ring, with the broker
// connection it belongs to.
type Packet struct {
	CI   gopacket.CaptureInfo
	Data []byte
	Conn ConnKey
}

// ConnKey names a TCP connection by its client and broker endpoints
// (ip:port).
type ConnKey struct {
	Client, Broker string
}

// Capture reads the loopback interface with AF_PACKET and keeps, in capture
// order, the frames of the TCP connections whose SYN it saw going to a
// broker port. Broker ports are learned after the capture starts (brokers
// listen on ports the kernel picks): Watch adds them, and every connection
// opened to one of them from then on is kept, from its SYN to its end. A
// connection that merely uses a watched port number on its client side, or
// began before its port was watched, is not.
type Capture struct {
	tp *afpacket.TPacket

	stopOnce sync.Once
	stopErr  error
	stopAt   chan time.Time
	done     chan error

	mu        sync.Mutex
	ports     map[uint16]bool
	conns     map[ConnKey]bool
	pkts      []Packet
	seen      int // frames read from the ring, before our port filter
	truncated int
}

// Start opens an AF_PACKET socket on iface and starts reading it. Once it
// returns, every later packet on the interface is in the ring.
func Start(iface string) (*Capture, error) {
	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(iface),
		afpacket.OptFrameSize(afpacket.DefaultFrameSize),
		afpacket.OptBlockSize(1<<20),
		afpacket.OptNumBlocks(64),
		afpacket.OptBlockTimeout(10*time.Millisecond),
		afpacket.OptPollTimeout(100*time.Millisecond),
	)
	if err != nil {
		return nil, fmt.Errorf("opening AF_PACKET capture on %q (needs root or CAP_NET_RAW): %w", iface, err)
	}
	prog, err := kernelFilter()
	if err != nil {
		tp.Close()
		return nil, err
	}
	if err := tp.SetBPF(prog); err != nil {
		tp.Close()
		return nil, fmt.Errorf("attaching BPF filter: %w", err)
	}
	if err := tp.InitSocketStats(); err != nil {
		tp.Close()
		return nil, fmt.Errorf("reading socket stats: %w", err)
	}
	c := &Capture{
		tp:     tp,
		ports:  make(map[uint16]bool),
		conns:  make(map[ConnKey]bool),
		stopAt: make(chan time.Time, 1),
		done:   make(chan error, 1),
	}
	go func() { c.done <- c.loop() }()
	return c, nil
}

// Watch adds broker ports: connections opened to them after Watch returns
// are captured. Call it once the brokers listen and before any client
// connects.
func (c *Capture) Watch(ports ...uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range ports {
		c.ports[p] = true
	}
}

// keep reports which broker connection a TCP segment belongs to, if any,
// and registers a new connection at its SYN to a watched port. The ring is
// read after the packets were sent, and ports are watched before clients
// connect, so a SYN to a watched port always finds the port watched.
func (c *Capture) keep(tcp *layers.TCP, src, dst string) (ConnKey, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := (ConnKey{Client: src, Broker: dst}); c.conns[k] {
		return k, true
	}
	if k := (ConnKey{Client: dst, Broker: src}); c.conns[k] {
		return k, true
	}
	if tcp.SYN && !tcp.ACK && c.ports[uint16(tcp.DstPort)] {
		k := ConnKey{Client: src, Broker: dst}
		c.conns[k] = true
		return k, true
	}
	return ConnKey{}, false
}

func (c *Capture) loop() error {
	dec := newSegmentDecoder()

	var stopAt time.Time
	for {
		if stopAt.IsZero() {
			select {
			case stopAt = <-c.stopAt:
			default:
			}
		}
		data, ci, err := c.tp.ZeroCopyReadPacketData()
		if errors.Is(err, afpacket.ErrTimeout) {
			if !stopAt.IsZero() {
				return nil // the ring is empty: drained
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("reading packet: %w", err)
		}
		c.mu.Lock()
		c.seen++
		c.mu.Unlock()
		if !stopAt.IsZero() && ci.Timestamp.After(stopAt) {
			// The ring is in time order: everything before the stop
			// has been read.
			return nil
		}
		tcp, src, dst, isTCP := dec.decode(data)
		if !isTCP {
			continue
		}
		key, ok := c.keep(tcp, src, dst)
		if !ok {
			continue
		}
		buf := make([]byte, len(data))
		copy(buf, data)
		c.mu.Lock()
		if ci.CaptureLength < ci.Length {
			c.truncated++
		}
		c.pkts = append(c.pkts, Packet{CI: ci, Data: buf, Conn: key})
		c.mu.Unlock()
	}
}

// Stop waits for the reader to take every packet captured until now out of
// the ring, closes the socket, and fails if the kernel dropped anything or any
// frame was truncated. Calls after the first return the same packets.
func (c *Capture) Stop() ([]Packet, error) {
	c.stopOnce.Do(func() {
		var err error
		defer func() { c.stopErr = err }()
		c.stopAt <- time.Now()
		select {
		case err = <-c.done:
		case <-time.After(10 * time.Second):
			err = errors.New("capture did not drain within 10s")
		}
		if err == nil {
			err = c.checkStats()
		}
		c.tp.Close()
	})
	err := c.stopErr
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && c.truncated > 0 {
		err = fmt.Errorf("%d captured frames were truncated", c.truncated)
	}
	return c.pkts, err
}

func (c *Capture) checkStats() error {
	v2, v3, err := c.tp.SocketStats()
	if err != nil {
		return fmt.Errorf("reading socket stats: %w", err)
	}
	if v2.Drops() != 0 || v3.Drops() != 0 || v3.QueueFreezes() != 0 {
		return fmt.Errorf("kernel dropped packets: tpacket_v2 drops %d, tpacket_v3 drops %d, queue freezes %d",
			v2.Drops(), v3.Drops(), v3.QueueFreezes())
	}
	return nil
}
