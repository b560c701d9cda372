package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/afpacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
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

// packet is one captured frame, copied out of the ring.
type packet struct {
	ci   gopacket.CaptureInfo
	data []byte
	conn connKey
}

// connKey names a TCP connection by its client and broker endpoints.
type connKey struct {
	client, broker string
}

// capturer reads the loopback interface with AF_PACKET and keeps the frames of
// TCP connections to or from the broker ports, in capture order.
type capturer struct {
	tp    *afpacket.TPacket
	ports map[uint16]bool

	stopOnce sync.Once
	stopAt   chan time.Time
	done     chan error

	mu        sync.Mutex
	pkts      []packet
	seen      int // frames read from the ring, before our port filter
	truncated int
}

// startCapture opens an AF_PACKET socket on iface and starts reading it. Once
// it returns, every later packet on the interface is in the ring.
func startCapture(iface string, ports []uint16) (*capturer, error) {
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
	c := &capturer{
		tp:     tp,
		ports:  make(map[uint16]bool),
		stopAt: make(chan time.Time, 1),
		done:   make(chan error, 1),
	}
	for _, p := range ports {
		c.ports[p] = true
	}
	go func() { c.done <- c.loop() }()
	return c, nil
}

func (c *capturer) loop() error {
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
		sp, dp := uint16(tcp.SrcPort), uint16(tcp.DstPort)
		var key connKey
		switch {
		case c.ports[dp]:
			key = connKey{client: src, broker: dst}
		case c.ports[sp]:
			key = connKey{client: dst, broker: src}
		default:
			continue
		}
		buf := make([]byte, len(data))
		copy(buf, data)
		c.mu.Lock()
		if ci.CaptureLength < ci.Length {
			c.truncated++
		}
		c.pkts = append(c.pkts, packet{ci: ci, data: buf, conn: key})
		c.mu.Unlock()
	}
}

// stop waits for the reader to take every packet captured until now out of
// the ring, closes the socket, and fails if the kernel dropped anything or any
// frame was truncated.
func (c *capturer) stop() ([]packet, error) {
	var err error
	c.stopOnce.Do(func() {
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && c.truncated > 0 {
		err = fmt.Errorf("%d captured frames were truncated", c.truncated)
	}
	return c.pkts, err
}

func (c *capturer) checkStats() error {
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

// window is the time span a scenario owns: connections whose first packet
// falls in [start, end) belong to it.
type window struct {
	name       string
	start, end time.Time
}

// split assigns each connection to the scenario whose window holds its first
// packet and returns each scenario's packets in capture order. Packets of
// connections outside every window are returned under "".
func split(pkts []packet, windows []window) map[string][]packet {
	owner := make(map[connKey]string)
	out := make(map[string][]packet)
	for _, p := range pkts {
		name, ok := owner[p.conn]
		if !ok {
			for _, w := range windows {
				if !p.ci.Timestamp.Before(w.start) && p.ci.Timestamp.Before(w.end) {
					name = w.name
					break
				}
			}
			owner[p.conn] = name
		}
		out[name] = append(out[name], p)
	}
	for _, ps := range out {
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].ci.Timestamp.Before(ps[j].ci.Timestamp) })
	}
	return out
}

// writePcap writes pkts to path as a classic pcap with the Ethernet link type,
// which is what AF_PACKET gives on the loopback interface.
func writePcap(path string, pkts []packet) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(snapLen, layers.LinkTypeEthernet); err != nil {
		return err
	}
	for _, p := range pkts {
		ci := gopacket.CaptureInfo{
			Timestamp:     p.ci.Timestamp,
			CaptureLength: len(p.data),
			Length:        p.ci.Length,
		}
		if err := w.WritePacket(ci, p.data); err != nil {
			return err
		}
	}
	return nil
}
