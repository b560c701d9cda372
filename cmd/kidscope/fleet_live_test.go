package main

import (
	"context"
	be "encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFleetLiveAgents: three live agents on loopback, each capturing the
// port of its own broker of a three-broker kfake cluster, publish to
// another Kafka (as an operator's monitoring cluster would be). Real kgo
// clients make the traffic:
//   - one client instance talks to two brokers with two header instance
//     IDs (kgo sends none of KIP-1313's yet: its dialer writes them in):
//     instance-id-split, which no agent can see alone;
//   - another client uses one of those IDs from another address, on
//     the broker that sees the other: instance-id-shared;
//   - a client's telemetry ID, whose terminating push one broker got, is
//     pushed again to another broker: telemetry-push-after-terminating.
//
// kidscope fleet finds both, and its findings are exactly analyze's on
// the union (mergecap) of the agents' --write files.
func TestFleetLiveAgents(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	if _, err := exec.LookPath("mergecap"); err != nil {
		t.Skip("mergecap (Wireshark's) is not installed")
	}
	kafkaCluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "fleet-orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer kafkaCluster.Close()
	monitor, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "kidscope"))
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close()
	brokers, publishTo := kafkaCluster.ListenAddrs(), monitor.ListenAddrs()[0]

	dir := t.TempDir()
	type agent struct {
		cmd     *exec.Cmd
		stdout  *lockedBuffer
		copied  chan struct{}
		stderr  *lockedBuffer
		metrics string
		file    string
	}
	var agents []agent
	for i, addr := range brokers {
		_, port, _ := net.SplitHostPort(addr)
		file := filepath.Join(dir, fmt.Sprintf("broker-%d.pcapng", i))
		cmd, stdout, stderr, metrics := startLive(t, "-i", "lo", "-p", port, "--write", file, "-o", "ndjson", "--duration", "5m",
			"--publish", publishTo, "--agent", fmt.Sprintf("broker-%d", i))
		out := &lockedBuffer{}
		copied := make(chan struct{})
		go func() { _, _ = io.Copy(out, stdout); close(copied) }()
		agents = append(agents, agent{cmd, out, copied, stderr, metrics, file})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dialed := &dialCount{n: map[string]int{}}
	splitInstance(ctx, t, brokers, dialed)
	pushAfterTerminating(ctx, t, brokers, dialed)

	// Every agent has seen all the connections to its broker, and their
	// end, before it stops.
	for i, a := range agents {
		want := float64(dialed.to(brokers[i]))
		deadline := time.Now().Add(30 * time.Second)
		for {
			total := metricValue(t, a.metrics, "kidscope_connections_total", a.stderr)
			open := metricValue(t, a.metrics, "kidscope_connections_open", a.stderr)
			if total >= want && open == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("agent %d: %v connections of %v, %v open; %s", i, total, want, open, a.stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var files []string
	for i, a := range agents {
		_ = a.cmd.Process.Signal(syscall.SIGINT)
		<-a.copied // all read before Wait closes the pipe
		_ = a.cmd.Wait()
		if line := a.stderr.String(); !strings.Contains(line, "delivered") || strings.Contains(line, "dropped") {
			t.Fatalf("agent %d: %s", i, line)
		}
		for _, rule := range []string{"instance-id-split", "instance-id-shared", "telemetry-push-after-terminating"} {
			if strings.Contains(a.stdout.String(), `"rule":"`+rule+`"`) {
				t.Errorf("agent %d alone found %s: the test does not need the fleet", i, rule)
			}
		}
		files = append(files, a.file)
	}

	union := filepath.Join(dir, "union.pcapng")
	if out, err := exec.Command("mergecap", append([]string{"-w", union}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("mergecap: %v: %s", err, out)
	}
	ports := make([]string, len(brokers))
	for i, addr := range brokers {
		_, ports[i], _ = net.SplitHostPort(addr)
	}
	whole, stderr, code := runKidscope(t, "analyze", "-p", strings.Join(ports, ","), "-o", "json", "--fail-on", "never", "--no-progress", union)
	if code != 0 {
		t.Fatalf("analyze of the union: exit %d: %s", code, stderr)
	}
	fleet, stderr, code := runKidscope(t, "fleet", "--brokers", publishTo, "--from-beginning", "--until-end", "-o", "json", "--fail-on", "never")
	if code != 0 {
		t.Fatalf("fleet: exit %d: %s", code, stderr)
	}
	want, got := framelessFindings(t, whole), framelessFindings(t, fleet)
	if !slices.Equal(got, want) {
		t.Errorf("fleet found\n  %s\nanalyze of the union found\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	t.Logf("the fleet found\n  %s", strings.Join(got, "\n  "))
	// Every section, as analyze's of the union, but for its frames.
	merged := sections(t, whole, normal{frameless: true})
	sameSections(t, sections(t, fleet, normal{agentFiles: true, frameless: true}), merged)
	if c, i, b := len(merged["connections"].([]any)), len(merged["instances"].([]any)), len(merged["brokers"].([]any)); c < 6 || i < 2 || b != 3 {
		t.Errorf("the union has %d connections, %d instances, %d brokers: too little to compare", c, i, b)
	}
	for _, rule := range []string{"instance-id-split", "instance-id-shared", "telemetry-push-after-terminating"} {
		if !slices.ContainsFunc(got, func(f string) bool { return strings.HasPrefix(f, rule+" ") }) {
			t.Errorf("the fleet did not find %s: %s", rule, strings.Join(got, "\n  "))
		}
	}
	for i := range brokers {
		if !strings.Contains(fleet, fmt.Sprintf(`"broker-%d"`, i)) {
			t.Errorf("the fleet's report does not name agent broker-%d", i)
		}
	}
}

var frameOf = regexp.MustCompile(` frame \d+ `)

// framelessFindings are a JSON report's findings without their frame
// numbers: a finding's frame in an agent's file and in the union differ,
// its time and connection do not.
func framelessFindings(t *testing.T, out string) []string {
	t.Helper()
	keys := reportFindings(t, out)
	for i, k := range keys {
		keys[i] = frameOf.ReplaceAllString(k, " ")
	}
	slices.Sort(keys)
	return keys
}

// splitInstance runs a kgo producer whose connections to the second
// broker carry one header instance ID, Y, and those to the others
// another, X; and a client from another address that uses X too, on the
// second broker.
func splitInstance(ctx context.Context, t *testing.T, brokers []string, dialed *dialCount) {
	t.Helper()
	x := [16]byte{0x6b, 0x69, 0x64, 0x73, 0x63, 0x6f, 0x70, 0x65, 1, 2, 3, 4, 5, 6, 7, 8}
	y := [16]byte{0x6b, 0x69, 0x64, 0x73, 0x63, 0x6f, 0x70, 0x65, 8, 7, 6, 5, 4, 3, 2, 1}
	idFor := func(host string) [16]byte {
		if host == brokers[1] {
			return y
		}
		return x
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("fleet-app"), kgo.DefaultProduceTopic("fleet-orders"),
		kgo.DisableClientMetrics(), kgo.Dialer(instanceDialer(nil, idFor)), kgo.WithHooks(dialed))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The same ID X from another address, on the second broker only,
	// where the producer uses Y: no agent sees X from both.
	twin, err := kgo.NewClient(kgo.SeedBrokers(brokers[1]), kgo.ClientID("fleet-app"), kgo.DisableClientMetrics(),
		kgo.Dialer(instanceDialer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, func(string) [16]byte { return x })), kgo.WithHooks(dialed))
	if err != nil {
		t.Fatal(err)
	}
	defer twin.Close()
	if _, err := twin.Broker(1).Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("the twin's metadata: %v", err)
	}
	for i := 0; i < 30; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A connection to every broker, whichever leads the partitions.
	for node := range brokers {
		if _, err := cl.Broker(node).Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
			t.Fatalf("metadata from broker %d: %v", node, err)
		}
	}
}

// pushAfterTerminating runs a kgo client with KIP-714 telemetry on until
// the broker has given it a telemetry ID, and closes it (its last push
// says Terminating); then another kgo client pushes for that ID to a
// broker other than the one that got the terminating push.
func pushAfterTerminating(ctx context.Context, t *testing.T, brokers []string, dialed *dialCount) {
	t.Helper()
	log := &telemetryLog{got: make(chan struct{})}
	hook := &pushHook{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("fleet-telemetry"), kgo.DefaultProduceTopic("fleet-orders"),
		kgo.WithLogger(log), kgo.WithHooks(hook, dialed))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("telemetry")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-log.got:
	case <-ctx.Done():
		t.Fatal("kgo got no telemetry subscription")
	}
	cl.Close()
	id, sub := log.subscription()
	terminatedOn := hook.last()
	if terminatedOn == "" {
		t.Fatal("kgo closed without its terminating PushTelemetry")
	}

	zombie, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("fleet-telemetry"), kgo.DisableClientMetrics(),
		kgo.WithHooks(dialed))
	if err != nil {
		t.Fatal(err)
	}
	defer zombie.Close()
	for node, addr := range brokers {
		if addr == terminatedOn {
			continue
		}
		push := kmsg.NewPtrPushTelemetryRequest()
		push.ClientInstanceID, push.SubscriptionID = id, sub
		resp, err := zombie.Broker(node).Request(ctx, push)
		if err != nil {
			t.Fatalf("push to broker %d: %v", node, err)
		}
		if code := resp.(*kmsg.PushTelemetryResponse).ErrorCode; code == 0 {
			t.Fatalf("broker %d accepted a push after the terminating one", node)
		}
		return
	}
}

// telemetryLog takes, from kgo's log, the telemetry ID and subscription
// the broker gave (kgo logs them; it has no API for them).
type telemetryLog struct {
	mu   sync.Mutex
	id   [16]byte
	sub  int32
	got  chan struct{}
	once sync.Once
}

func (l *telemetryLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *telemetryLog) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	if !strings.Contains(msg, "client metrics subscription") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i+1 < len(keyvals); i += 2 {
		switch keyvals[i] {
		case "client_instance_id":
			if b, err := hex.DecodeString(fmt.Sprint(keyvals[i+1])); err == nil && len(b) == 16 {
				copy(l.id[:], b)
			}
		case "subscription_id":
			if v, ok := keyvals[i+1].(int32); ok {
				l.sub = v
			}
		}
	}
	l.once.Do(func() { close(l.got) })
}

func (l *telemetryLog) subscription() ([16]byte, int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id, l.sub
}

// dialCount counts the connections kgo made to each broker.
type dialCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *dialCount) OnBrokerConnect(m kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		d.mu.Lock()
		d.n[net.JoinHostPort(m.Host, strconv.Itoa(int(m.Port)))]++
		d.mu.Unlock()
	}
}

func (d *dialCount) to(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[addr]
}

// pushHook remembers the broker that got the client's last PushTelemetry.
type pushHook struct {
	mu   sync.Mutex
	addr string
}

func (h *pushHook) OnBrokerWrite(m kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.PushTelemetry) && err == nil {
		h.mu.Lock()
		h.addr = net.JoinHostPort(m.Host, strconv.Itoa(int(m.Port)))
		h.mu.Unlock()
	}
}

func (h *pushHook) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addr
}

// instanceDialer dials as kgo does (from the address from, when not nil),
// and writes KIP-1313's header instance
// ID (tag 0, 16 bytes) idFor(host) into every request with a flexible
// header on the connection.
func instanceDialer(from net.Addr, idFor func(host string) [16]byte) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: from}
		c, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &instanceConn{Conn: c, id: idFor(host)}, nil
	}
}

type instanceConn struct {
	net.Conn
	id      [16]byte
	pending []byte
}

// Write holds bytes until a request is whole, then writes it with the ID.
func (c *instanceConn) Write(p []byte) (int, error) {
	c.pending = append(c.pending, p...)
	var out []byte
	for len(c.pending) >= 4 {
		size := int(be.BigEndian.Uint32(c.pending))
		if len(c.pending) < 4+size {
			break
		}
		out = appendWithInstanceID(out, c.pending[4:4+size], c.id)
		c.pending = c.pending[4+size:]
	}
	if len(out) > 0 {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// appendWithInstanceID appends the request framed, its header's empty
// tagged fields replaced by tag 0 with the ID when the header is flexible.
func appendWithInstanceID(dst, req []byte, id [16]byte) []byte {
	framed := func(b ...[]byte) []byte {
		n := 0
		for _, p := range b {
			n += len(p)
		}
		dst = be.BigEndian.AppendUint32(dst, uint32(n))
		for _, p := range b {
			dst = append(dst, p...)
		}
		return dst
	}
	if len(req) < 10 {
		return framed(req)
	}
	r := kmsg.RequestForKey(int16(be.BigEndian.Uint16(req)))
	if r == nil {
		return framed(req)
	}
	r.SetVersion(int16(be.BigEndian.Uint16(req[2:])))
	tags := 10
	if n := int16(be.BigEndian.Uint16(req[8:])); n > 0 {
		tags += int(n)
	}
	if !r.IsFlexible() || tags >= len(req) || req[tags] != 0 {
		return framed(req)
	}
	return framed(req[:tags], []byte{1, 0, 16}, id[:], req[tags+1:])
}
