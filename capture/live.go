package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/afpacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/bpf"
)

// ErrNoPacket is what a live source's Next returns when no packet arrived
// within its poll interval: the caller may check for cancellation and
// expire idle state, then call Next again.
var ErrNoPacket = errors.New("no packet within the poll interval")

// ErrPermission is wrapped by OpenLive's error when the process may not
// capture: it needs root or CAP_NET_RAW.
var ErrPermission = errors.New("live capture needs root or the CAP_NET_RAW capability (sudo, or a copy of the binary that only one group may run, given the capability: see Privileges in kidscope's docs/live.md)")

// LiveOptions configure a live capture.
type LiveOptions struct {
	// Interface to capture on; "any" captures on all of them.
	Interface string
	// Snaplen is the most bytes libpcap and the socket without a ring keep
	// of a frame (default 262144); with the ring, the kernel keeps what
	// Filter's program returns, which should be the same.
	Snaplen int
	// RingMB is the size of the kernel ring buffer in MiB (default 64):
	// what absorbs bursts while kidscope is busy.
	RingMB int
	// Filter, when set, runs in the kernel: its program for this
	// interface's link type (see LinkTypeOf). Frames it rejects are never
	// seen, counted or written.
	Filter func(link layers.LinkType) ([]bpf.RawInstruction, error)
	// Record, when set, receives every frame read, before decoding.
	Record *Recorder
	// Poll is how long Next waits for a packet before ErrNoPacket
	// (default 100 ms).
	Poll time.Duration
	// Libpcap captures through libpcap instead of AF_PACKET: only in
	// binaries built with the libpcap build tag (and cgo).
	Libpcap bool
}

// frameSource is a capture handle of another kind than the AF_PACKET ring
// (libpcap).
type frameSource interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	Drops() int64
	Close()
}

// Live reads packets from a network interface through AF_PACKET (pure Go,
// TPACKET_V3 ring), falling back to a plain packet socket.
type Live struct {
	name   string
	tp     *afpacket.TPacket
	eh     *pcapgo.EthernetHandle
	other  frameSource
	link   layers.LinkType
	rec    *Recorder
	stats  Stats
	final  Stats // Stats as Close found them, for the recording's last file
	tcp    tcpLayer
	closed bool
	// early re-runs the filter in userspace on the first packets: the
	// socket is bound to the interface before the filter is attached to
	// it, so what arrived in between is in the ring unfiltered. It checks
	// until the first poll that finds the ring empty, or earlyUntil.
	early      *bpf.VM
	earlyUntil time.Time
}

// LinkTypeOf is the link type frames of an interface come with: raw IP for
// "any" (read as cooked packets without a link header) and interfaces with
// no Ethernet header (tun, WireGuard), Ethernet otherwise (loopback
// included: Linux gives it a zero Ethernet header).
func LinkTypeOf(iface string) (layers.LinkType, error) {
	if iface == "any" {
		return layers.LinkTypeRaw, nil
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return 0, fmt.Errorf("interface %s: %w", iface, err)
	}
	if ifi.Flags&net.FlagLoopback != 0 || len(ifi.HardwareAddr) == 6 {
		return layers.LinkTypeEthernet, nil
	}
	return layers.LinkTypeRaw, nil
}

// OpenLive starts capturing on an interface.
func OpenLive(opt LiveOptions) (*Live, error) {
	if opt.Snaplen <= 0 {
		opt.Snaplen = 262144
	}
	if opt.RingMB <= 0 {
		opt.RingMB = 64
	}
	if opt.Poll <= 0 {
		opt.Poll = 100 * time.Millisecond
	}
	l := &Live{name: opt.Interface, rec: opt.Record}
	if l.rec != nil {
		l.rec.SetStats(l.recordStats)
	}
	if opt.Libpcap {
		// libpcap tells the link type of what it delivers (Linux SLL on
		// "any"), and drops the loopback echoes itself.
		var err error
		if l.other, l.link, err = openLibpcap(opt); err != nil {
			return nil, openError(opt.Interface, err)
		}
		return l, nil
	}
	link, err := LinkTypeOf(opt.Interface)
	if err != nil {
		return nil, err
	}
	l.link = link
	var prog []bpf.RawInstruction
	if opt.Filter != nil {
		if prog, err = opt.Filter(link); err != nil {
			return nil, err
		}
	}
	if len(prog) > 0 {
		if ins, ok := bpf.Disassemble(prog); ok {
			if vm, err := bpf.NewVM(ins); err == nil {
				l.early, l.earlyUntil = vm, time.Now().Add(time.Second)
			}
		}
	}
	prog, err = withoutLoopbackEchoes(opt.Interface, prog, opt.Snaplen)
	if err != nil {
		return nil, err
	}
	if err := l.openRing(opt, prog); err != nil {
		if isPermission(err) {
			return nil, openError(opt.Interface, err)
		}
		// TPACKET_V3 may be missing (old kernels, some sandboxes): a plain
		// packet socket still works, only slower.
		if ferr := l.openSocket(opt, prog); ferr != nil {
			if isPermission(ferr) {
				return nil, openError(opt.Interface, ferr)
			}
			return nil, fmt.Errorf("capture on %s: %w (and without the ring: %v)", opt.Interface, err, ferr)
		}
	}
	return l, nil
}

// openError says why capturing on iface could not start; a missing
// privilege is ErrPermission, which says how to grant it.
func openError(iface string, err error) error {
	if isPermission(err) {
		err = ErrPermission
	}
	return fmt.Errorf("capture on %s: %w", iface, err)
}

func isPermission(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

func (l *Live) openRing(opt LiveOptions, prog []bpf.RawInstruction) error {
	const blockSize = 1 << 20
	opts := []any{
		afpacket.OptFrameSize(afpacket.DefaultFrameSize),
		afpacket.OptBlockSize(blockSize),
		afpacket.OptNumBlocks(opt.RingMB * (1 << 20) / blockSize),
		afpacket.OptBlockTimeout(10 * time.Millisecond),
		afpacket.OptPollTimeout(opt.Poll),
		afpacket.TPacketVersion3,
	}
	if opt.Interface == "any" {
		opts = append(opts, afpacket.SocketDgram)
	} else {
		opts = append(opts, afpacket.OptInterface(opt.Interface))
	}
	tp, err := afpacket.NewTPacket(opts...)
	if err != nil {
		return err
	}
	if len(prog) > 0 {
		if err := tp.SetBPF(prog); err != nil {
			tp.Close()
			return fmt.Errorf("attach filter: %w", err)
		}
	}
	if err := tp.InitSocketStats(); err != nil {
		tp.Close()
		return err
	}
	l.tp = tp
	return nil
}

func (l *Live) openSocket(opt LiveOptions, prog []bpf.RawInstruction) error {
	if opt.Interface == "any" {
		return errors.New("-i any needs the AF_PACKET ring")
	}
	eh, err := pcapgo.NewEthernetHandle(opt.Interface)
	if err != nil {
		return err
	}
	if len(prog) > 0 {
		if err := eh.SetBPF(prog); err != nil {
			eh.Close()
			return fmt.Errorf("attach filter: %w", err)
		}
	}
	if err := eh.SetCaptureLength(opt.Snaplen); err != nil {
		eh.Close()
		return err
	}
	l.eh = eh
	return nil
}

// packetOutgoing is Linux's PACKET_OUTGOING packet type.
const packetOutgoing = 4

// withoutLoopbackEchoes prefixes the filter with a test that drops the
// outgoing copy of loopback packets: a packet socket sees each loopback
// packet leave and arrive, and libpcap keeps only the arrival.
func withoutLoopbackEchoes(iface string, prog []bpf.RawInstruction, snaplen int) ([]bpf.RawInstruction, error) {
	var lo *net.Interface
	ifs, _ := net.Interfaces()
	for i := range ifs {
		if ifs[i].Flags&net.FlagLoopback != 0 && (iface == "any" || ifs[i].Name == iface) {
			lo = &ifs[i]
			break
		}
	}
	if lo == nil {
		return prog, nil
	}
	prefix := []bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: packetOutgoing, SkipTrue: 3},
		bpf.LoadExtension{Num: bpf.ExtInterfaceIndex},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(lo.Index), SkipTrue: 1},
		bpf.RetConstant{Val: 0},
	}
	if len(prog) == 0 {
		prefix = append(prefix, bpf.RetConstant{Val: uint32(snaplen)})
		return bpf.Assemble(prefix)
	}
	head, err := bpf.Assemble(prefix)
	if err != nil {
		return nil, err
	}
	return append(head, prog...), nil
}

// LinkType is the link type of the frames read.
func (l *Live) LinkType() layers.LinkType { return l.link }

// Next returns the next TCP segment; ErrNoPacket when none arrived within
// the poll interval.
func (l *Live) Next(p *Packet) error {
	for {
		if l.closed {
			return errors.New("capture: Next on a closed live source")
		}
		var data []byte
		var ci gopacket.CaptureInfo
		var err error
		switch {
		case l.tp != nil:
			data, ci, err = l.tp.ZeroCopyReadPacketData()
			if errors.Is(err, afpacket.ErrTimeout) || errors.Is(err, afpacket.ErrPoll) {
				l.early = nil // the ring was drained: what comes now was filtered
				return ErrNoPacket
			}
		case l.other != nil:
			data, ci, err = l.other.ZeroCopyReadPacketData()
			if errors.Is(err, errLibpcapTimeout) {
				return ErrNoPacket
			}
		default:
			data, ci, err = l.eh.ZeroCopyReadPacketData()
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				l.early = nil
				return ErrNoPacket
			}
		}
		if err != nil {
			return fmt.Errorf("capture on %s: %w", l.name, err)
		}
		if l.early != nil {
			if time.Now().After(l.earlyUntil) {
				l.early = nil
			} else if keep, err := l.early.Run(data); err == nil && keep == 0 {
				continue // arrived before the filter was attached
			}
		}
		file, frame := 0, l.stats.Packets+1
		if l.rec != nil {
			if file, frame, err = l.rec.Write(ci, data); err != nil {
				return err
			}
		}
		l.stats.Packets++
		l.stats.Bytes += int64(len(data))
		v, info := decodeFrame(l.link, data, max(ci.Length-len(data), 0), &l.tcp, &p.Network)
		p.Segment = info.seg
		if !l.stats.count(v, info) {
			continue
		}
		p.File, p.Frame, p.Time, p.TCP, p.Cut, p.WireLength = file, frame, ci.Timestamp, &l.tcp.TCP, info.cut, ci.Length
		return nil
	}
}

// Stats returns the counters, with the kernel's drops.
func (l *Live) Stats() Stats {
	s := l.stats
	if l.tp != nil {
		if _, v3, err := l.tp.SocketStats(); err == nil {
			s.KernelDrops = int64(v3.Drops())
		}
	} else if l.eh != nil {
		if st, err := l.eh.Stats(); err == nil {
			s.KernelDrops = int64(st.Drops)
		}
	} else if l.other != nil {
		s.KernelDrops = l.other.Drops()
	}
	return s
}

// recordStats are the counts the Recorder ends each file with: the
// packets the kernel passed to the capture (read, and dropped for want of
// room in the ring) and those it dropped, since the capture began.
func (l *Live) recordStats() (received, dropped int64) {
	s := l.final
	if !l.closed {
		s = l.Stats()
	}
	return s.Packets + s.KernelDrops, s.KernelDrops
}

// Close stops the capture and closes the recording.
func (l *Live) Close() error {
	if l.closed {
		return nil
	}
	if l.rec != nil {
		// The handles answer no more once closed: the last file's
		// statistics are taken now.
		l.final = l.Stats()
	}
	l.closed = true
	if l.tp != nil {
		l.tp.Close()
	}
	if l.eh != nil {
		l.eh.Close()
	}
	if l.other != nil {
		l.other.Close()
	}
	if l.rec != nil {
		return l.rec.Close()
	}
	return nil
}
