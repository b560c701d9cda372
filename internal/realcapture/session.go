// Package realcapture captures real Kafka clients talking to real (test)
// brokers on the loopback interface, and writes one classic pcap file per
// scenario with a JSON sidecar that names the broker ports.
//
// A Session is one AF_PACKET capture of "lo" during which scenarios run one
// after the other, each in its own time window. Brokers listen on ports the
// kernel picks; the harness tells the session those ports (Watch) after they
// bind and before any client connects. At the end, each scenario's
// connections (assigned by the time of their SYN) go to its own file.
//
// The package is pure Go. internal/realtraffic uses it for franz-go clients
// against kfake; the separate realclients module (cgo and npm) uses it for
// librdkafka, kafkajs and librdkafka's mock cluster.
package realcapture

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// settle is how long a window stays open after its scenario returned, so
// that the last FINs and ACKs of its connections are in before the next
// window opens. Packets of a connection belong to the window of its SYN
// whenever they come; settle only keeps a late reconnect of a closing client
// out of the next scenario's file.
const settle = 300 * time.Millisecond

// MaxFileSize is the size a capture file must stay under, so the committed
// set stays small.
const MaxFileSize = 1 << 20

// Session is one capture during which scenarios run one at a time.
type Session struct {
	capt    *Capture
	log     io.Writer
	windows []window
}

type window struct {
	meta       Meta
	start, end time.Time
}

// NewSession starts capturing iface (the loopback interface). It needs root
// or CAP_NET_RAW.
func NewSession(iface string, log io.Writer) (*Session, error) {
	c, err := Start(iface)
	if err != nil {
		return nil, err
	}
	return &Session{capt: c, log: log}, nil
}

// Watch adds the ports of brokers that listen now and that clients will
// connect to from now on.
func (s *Session) Watch(ports []uint16) { s.capt.Watch(ports...) }

// Run runs one scenario in its own window, bounded by timeout. fn returns a
// one-line summary of what the client did, which goes into the sidecar. An
// error from fn fails the scenario.
func (s *Session) Run(ctx context.Context, meta Meta, timeout time.Duration, fn func(ctx context.Context) (string, error)) error {
	if meta.Scenario == "" || len(meta.Ports) == 0 {
		return fmt.Errorf("scenario %q: no name or no broker ports", meta.Scenario)
	}
	for _, w := range s.windows {
		if w.meta.Scenario == meta.Scenario {
			return fmt.Errorf("scenario %s runs twice", meta.Scenario)
		}
	}
	w := window{meta: meta, start: time.Now()}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	summary, err := fn(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("scenario %s: %w", meta.Scenario, err)
	}
	time.Sleep(settle)
	w.end = time.Now()
	w.meta.Summary = summary
	s.windows = append(s.windows, w)
	fmt.Fprintf(s.log, "%-34s %5.2fs  %s\n", meta.Scenario, w.end.Sub(w.start).Seconds(), summary)
	return nil
}

// Stop ends the capture (without writing anything); Write calls it too.
func (s *Session) Stop() error {
	_, err := s.capt.Stop()
	return err
}

// Write stops the capture and writes each scenario's file NAME.pcap and its
// sidecar NAME.meta.json into dir. It fails if a connection opened outside
// every window (a client still at work after its scenario returned), if the
// kernel dropped a packet, or a file is not under MaxFileSize.
func (s *Session) Write(dir string) error {
	pkts, err := s.capt.Stop()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	byScenario, stray := split(pkts, s.windows)
	if len(stray) > 0 {
		var conns []string
		for _, c := range stray {
			conns = append(conns, c.Client+"->"+c.Broker)
		}
		return fmt.Errorf("%d connections opened outside every scenario's window: %s", len(stray), strings.Join(conns, ", "))
	}
	for _, w := range s.windows {
		name := w.meta.Scenario
		path := filepath.Join(dir, name+".pcap")
		if err := writePcap(path, byScenario[name]); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		var st *FileStats
		if w.meta.TLS != "" {
			// Encrypted: count frames and connections only.
			st = tlsStats(byScenario[name])
		} else if st, err = ReadRequests(path, w.meta.Ports); err != nil {
			return fmt.Errorf("re-reading %s: %w", path, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.Size() >= MaxFileSize {
			return fmt.Errorf("%s is %d bytes, want under %d", path, fi.Size(), MaxFileSize)
		}
		m := w.meta
		m.Frames, m.Connections, m.Bytes = st.Frames, st.Connections, fi.Size()
		m.Flexible, m.HeaderIDs, m.TerminatingPushes = st.Flexible, st.HeaderIDs, st.TerminatingPushes
		m.EmptyMemberHeartbeats = st.EmptyMemberHeartbeats
		m.Requests = map[string]APICount{}
		for _, k := range SortedKeys(st.Requests) {
			m.Requests[fmt.Sprint(k)] = APICount{Name: kmsg.NameForKey(k), Count: st.Requests[k], Versions: SortedKeys(st.Versions[k])}
		}
		if err := WriteMeta(filepath.Join(dir, name+MetaSuffix), m); err != nil {
			return err
		}
		fmt.Fprintf(s.log, "%s: %d bytes, %d frames, %d connections, ports %v\n", path, fi.Size(), st.Frames, st.Connections, m.Ports)
		for _, k := range SortedKeys(st.Requests) {
			var vs []string
			for _, v := range SortedKeys(st.Versions[k]) {
				vs = append(vs, fmt.Sprintf("v%d", v))
			}
			fmt.Fprintf(s.log, "  %7d  %2d %-26s %s\n", st.Requests[k], k, kmsg.NameForKey(k), strings.Join(vs, ","))
		}
	}
	fmt.Fprintf(s.log, "captured %d packets in %d files, no drops\n", len(pkts), len(s.windows))
	return nil
}

// tlsStats is the FileStats of an encrypted capture: its frames and
// connections, no Kafka requests.
func tlsStats(pkts []Packet) *FileStats {
	st := &FileStats{Frames: len(pkts), Requests: map[int16]int{}, Versions: map[int16]map[int16]int{}}
	conns := map[ConnKey]bool{}
	for _, p := range pkts {
		conns[p.Conn] = true
	}
	st.Connections = len(conns)
	return st
}

// split assigns each connection to the window that holds its first packet
// (its SYN) and returns each window's packets in capture order, and the
// connections that fall in no window.
func split(pkts []Packet, windows []window) (map[string][]Packet, []ConnKey) {
	owner := make(map[ConnKey]string)
	out := make(map[string][]Packet)
	var stray []ConnKey
	for _, p := range pkts {
		name, ok := owner[p.Conn]
		if !ok {
			for _, w := range windows {
				if !p.CI.Timestamp.Before(w.start) && p.CI.Timestamp.Before(w.end) {
					name = w.meta.Scenario
					break
				}
			}
			owner[p.Conn] = name
			if name == "" {
				stray = append(stray, p.Conn)
			}
		}
		if name != "" {
			out[name] = append(out[name], p)
		}
	}
	for _, ps := range out {
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].CI.Timestamp.Before(ps[j].CI.Timestamp) })
	}
	return out, stray
}

// writePcap writes pkts to path as a classic pcap with the Ethernet link type,
// which is what AF_PACKET gives on the loopback interface.
func writePcap(path string, pkts []Packet) (err error) {
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
			Timestamp:     p.CI.Timestamp,
			CaptureLength: len(p.Data),
			Length:        p.CI.Length,
		}
		if err := w.WritePacket(ci, p.Data); err != nil {
			return err
		}
	}
	return nil
}

// PortsOf returns the ports of host:port addresses.
func PortsOf(addrs []string) ([]uint16, error) {
	var ports []uint16
	for _, a := range addrs {
		i := strings.LastIndexByte(a, ':')
		var p uint16
		if i < 0 {
			return nil, fmt.Errorf("address %q has no port", a)
		}
		if _, err := fmt.Sscan(a[i+1:], &p); err != nil || p == 0 {
			return nil, fmt.Errorf("address %q: bad port", a)
		}
		ports = append(ports, p)
	}
	return ports, nil
}
