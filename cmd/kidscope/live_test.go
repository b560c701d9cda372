package main

import (
	"bufio"
	"context"
	be "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// freePort asks the kernel for an unused loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lockedBuffer is a strings.Builder safe to write from the process's
// copier while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startLive starts `kidscope live ARGS --metrics-addr 127.0.0.1:P` and
// waits until its metrics endpoint answers. P is a port the kernel gave
// freePort, which another process may take before live binds it: then live
// exits saying the address is in use, and it is started again with another
// port (at most five times).
func startLive(t *testing.T, args ...string) (*exec.Cmd, io.ReadCloser, *lockedBuffer, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		mport := freePort(t)
		cmd := exec.Command(binary, append(append([]string{"live"}, args...), "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", mport))...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &lockedBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := http.Get(metricsURL)
			if err == nil {
				resp.Body.Close()
				return cmd, stdout, stderr, metricsURL
			}
			if strings.Contains(stderr.String(), "address already in use") && attempt < 5 {
				t.Logf("metrics port %d was taken before live bound it: again with another", mport)
				_ = cmd.Process.Kill()
				_, _ = io.Copy(io.Discard, stdout)
				_ = cmd.Wait()
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("live did not start: %v; stderr %s", err, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// fakeBroker answers every request with an empty response of its API: a
// peer for a crafted client, since kfake answers only what kgo sends.
func fakeBroker(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					var size int32
					if err := be.Read(r, be.BigEndian, &size); err != nil {
						return
					}
					frame := make([]byte, size)
					if _, err := io.ReadFull(r, frame); err != nil {
						return
					}
					key := int16(be.BigEndian.Uint16(frame))
					ver := int16(be.BigEndian.Uint16(frame[2:]))
					corr := int32(be.BigEndian.Uint32(frame[4:]))
					api, _ := decode.LookupAPI(key)
					resp := kmsg.ResponseForKey(key)
					resp.SetVersion(ver)
					out := decode.AppendResponse(nil, corr, api.ResponseHeaderVersion(ver), resp.AppendTo(nil))
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// violatingClient sends, over a real socket, a seed-profile client whose
// third request changes its header instance ID: header-id-changed. It
// returns the client's address, as findings name it.
func violatingClient(t *testing.T, port int) string {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	violateOn(t, c)
	return c.LocalAddr().String()
}

// violateOn sends the crafted client's requests on c, reading each answer.
func violateOn(t *testing.T, c net.Conn) {
	t.Helper()
	a := kafka.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	b := kafka.UUID{9, 9, 9, 9, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	send := func(key, ver int16, corr int32, id kafka.UUID, body kmsg.Request) {
		body.SetVersion(ver)
		api, _ := decode.LookupAPI(key)
		h := decode.RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: corr, HeaderVersion: api.RequestHeaderVersion(ver),
			ClientID: "crafted", InstanceID: id, HasInstanceID: true}
		if _, err := c.Write(decode.AppendRequest(nil, h, body.AppendTo(nil))); err != nil {
			t.Fatal(err)
		}
		var size int32
		if err := be.Read(c, be.BigEndian, &size); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, c, int64(size)); err != nil {
			t.Fatal(err)
		}
	}
	send(18, 3, 0, a, &kmsg.ApiVersionsRequest{ClientSoftwareName: "crafted", ClientSoftwareVersion: "1"})
	send(3, 12, 1, a, &kmsg.MetadataRequest{})
	send(3, 12, 2, b, &kmsg.MetadataRequest{})
}

// realClient produces and consumes with kgo against kfake.
func realClient(t *testing.T, cluster *kfake.Cluster) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ClientID("live-test"),
		kgo.ConsumeTopics("live-test"), kgo.DefaultProduceTopic("live-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("record %d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for got < 20 && ctx.Err() == nil {
		got += cl.PollFetches(ctx).NumRecords()
	}
}

// finding is a finding line of the ndjson stream or of analyze's JSON.
type streamFinding struct {
	Kind       string `json:"kind"`
	Rule       string `json:"rule"`
	Severity   string `json:"severity"`
	Frame      int64  `json:"frame"`
	File       string `json:"file"`
	Connection struct {
		Client string `json:"client"`
	} `json:"connection"`
}

func (f streamFinding) key() string {
	return fmt.Sprintf("%s %s frame %d %s", f.Rule, f.Severity, f.Frame, f.Connection.Client)
}

// TestLiveOnLoopback runs `kidscope live` on the loopback interface while
// kgo talks to kfake and a crafted client breaks a header rule over a real
// socket: the finding must appear in the ndjson stream while live runs,
// the metrics endpoint must count it, and after Ctrl-C the final report
// must match `analyze` of the --write file.
func TestLiveOnLoopback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	// The brokers listen on ports the kernel gives them before live starts
	// (live needs their ports); clients connect only once live runs.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "live-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	var kports []string
	for _, a := range cluster.ListenAddrs() {
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		kports = append(kports, p)
	}
	fport := fakeBroker(t)
	portList := fmt.Sprintf("%s,%d", strings.Join(kports, ","), fport)
	written := filepath.Join(t.TempDir(), "live.pcapng")
	cmd, stdout, stderr, metricsURL := startLive(t, "-i", "lo", "-p", portList, "--write", written, "-o", "ndjson", "--duration", "60s")
	defer cmd.Process.Kill()
	var mu sync.Mutex
	var lines []string
	seen := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			var f streamFinding
			if json.Unmarshal(sc.Bytes(), &f) == nil && f.Kind == "finding" {
				seen <- f.Rule
			}
		}
		close(seen)
	}()

	realClient(t, cluster)
	violatingClient(t, fport)

	// The finding comes while live runs (the broker answered, so it is final).
	timeout := time.After(15 * time.Second)
wait:
	for {
		select {
		case rule, ok := <-seen:
			if !ok {
				t.Fatalf("stream ended before the finding; stderr %s", stderr.String())
			}
			if rule == "header-id-changed" {
				break wait
			}
		case <-timeout:
			t.Fatalf("no header-id-changed finding in the live stream; stderr %s", stderr.String())
		}
	}

	// The metrics count it and the Kafka requests. Totals are refreshed
	// once a second: scrape until they are in.
	var families map[string]*dto.MetricFamily
	for try := 0; ; try++ {
		resp, err := http.Get(metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err = parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("metrics do not parse: %v", err)
		}
		if fam := families["kidscope_packets_total"]; fam != nil && fam.GetMetric()[0].GetCounter().GetValue() > 0 || try == 40 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	value := func(name string, labels map[string]string) float64 {
		fam := families[name]
		if fam == nil {
			return -1
		}
	next:
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			if m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
		return 0
	}
	if v := value("kidscope_findings_total", map[string]string{"rule": "header-id-changed", "severity": "error"}); v != 1 {
		t.Errorf("kidscope_findings_total{rule=header-id-changed} = %v, want 1", v)
	}
	if v := value("kidscope_kafka_requests_total", map[string]string{"api": "Produce"}); v < 1 {
		t.Errorf("kidscope_kafka_requests_total{api=Produce} = %v", v)
	}
	if v := value("kidscope_client_instances", nil); v != 2 {
		t.Errorf("kidscope_client_instances = %v, want 2", v)
	}
	if v := value("kidscope_packets_total", nil); v < 50 {
		t.Errorf("kidscope_packets_total = %v", v)
	}

	// Ctrl-C: the full report follows, and the exit code says an error was found.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range seen {
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("live exit: %v, want 1; stderr %s", err, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	var live []string
	kinds := map[string]int{}
	for _, l := range lines {
		var f streamFinding
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("ndjson line %q: %v", l, err)
		}
		kinds[f.Kind]++
		if f.Kind == "finding" {
			if f.File != filepath.Base(written) && f.File != written {
				t.Errorf("finding names file %q, want the --write file", f.File)
			}
			live = append(live, f.key())
		}
	}
	if kinds["summary"] != 1 || kinds["connection"] == 0 || kinds["broker"] == 0 {
		t.Errorf("the final report is missing: kinds %v", kinds)
	}
	// The run line first, naming the interface; every line as the JSON
	// Schema says.
	if kinds["run"] != 1 || len(lines) == 0 || !strings.HasPrefix(lines[0], `{"kind":"run",`) ||
		!strings.Contains(lines[0], `"inputs":[{"kind":"interface","name":"lo",`) {
		t.Errorf("no run line first naming the interface: kinds %v", kinds)
	}
	_, lineSchema := analysisSchemas(t)
	validOutput(t, nil, lineSchema, "live", strings.Join(lines, "\n"), true)

	// analyze on the written file reports the same findings.
	out, errOut, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "-p", portList, written)
	if code != 0 {
		t.Fatalf("analyze %s: exit %d: %s", written, code, errOut)
	}
	var doc struct {
		Findings []streamFinding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var offline []string
	for _, f := range doc.Findings {
		offline = append(offline, f.key())
	}
	sort.Strings(live)
	sort.Strings(offline)
	if strings.Join(live, "\n") != strings.Join(offline, "\n") {
		t.Errorf("live findings:\n  %s\nanalyze of the --write file:\n  %s", strings.Join(live, "\n  "), strings.Join(offline, "\n  "))
	}
	for _, f := range doc.Findings {
		if f.Severity != "info" && f.Rule != "header-id-changed" {
			t.Errorf("unexpected %s finding %s at frame %d", f.Severity, f.Rule, f.Frame)
		}
	}
}

// TestLiveWithoutPrivilege: as an unprivileged user, live says in one line
// what it needs and exits 2.
func TestLiveWithoutPrivilege(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run the binary as another user")
	}
	// The test binary's directory may not be readable by nobody: copy it.
	dir, err := os.MkdirTemp("", "kidscope-nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "kidscope")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", bin, "live", "-i", "lo", "--duration", "1s")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2; stderr %q", err, stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "CAP_NET_RAW") || !strings.Contains(msg, "root") {
		t.Errorf("want one line naming root or CAP_NET_RAW, got %q", msg)
	}
}
