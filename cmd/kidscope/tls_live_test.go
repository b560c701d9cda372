package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/internal/realcapture"
)

// TestLiveTLSKeyLogGrows runs live on loopback with a key log that is
// empty when it starts: a kgo client and the crafted client talk to kfake
// over TLS, writing their keys as their connections start, and live reads
// them as they come, decrypting what it held meanwhile. The crafted
// client's header-id-changed is streamed, and the final report has the
// requests decoded and no connection without its key. The --write file
// holds the keys only with --write-secrets: then it decrypts on its own.
func TestLiveTLSKeyLogGrows(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (or CAP_NET_RAW); CI runs as root")
	}
	for _, secrets := range []bool{true, false} {
		t.Run(fmt.Sprintf("write-secrets=%v", secrets), func(t *testing.T) { liveTLSKeyLogGrows(t, secrets) })
	}
}

func liveTLSKeyLogGrows(t *testing.T, writeSecrets bool) {
	cert, err := realcapture.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "tls-live"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	addr := cluster.ListenAddrs()[0]
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "keys.log")
	keyFile, err := os.OpenFile(keys, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer keyFile.Close()
	clientTLS := &tls.Config{InsecureSkipVerify: true, KeyLogWriter: keyFile}

	written := filepath.Join(t.TempDir(), "written.pcapng")
	args := []string{"-i", "lo", "-p", port, "--tls-keylog", keys, "-o", "ndjson", "--duration", "60s", "--write", written}
	if writeSecrets {
		args = append(args, "--write-secrets")
	}
	cmd, stdout, stderr, _ := startLive(t, args...)
	defer cmd.Process.Kill()
	type line struct {
		Kind     string `json:"kind"`
		Rule     string `json:"rule"`
		Requests int    `json:"requests"`
		// A connection's not_kafka is a string or null; the summary's
		// a count.
		NotKafka any `json:"not_kafka"`
	}
	lines := make(chan line, 1000)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				lines <- l
			}
		}
		close(lines)
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("tls-live"), kgo.DefaultProduceTopic("tls-live"),
		kgo.DialTLSConfig(clientTLS))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record %d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	c, err := tls.Dial("tcp", addr, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	violateOn(t, c)
	c.Close()

	timeout := time.After(15 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended before the finding; stderr %s", stderr.String())
			}
			if l.Kind == "finding" && l.Rule == "header-id-changed" {
				break wait
			}
		case <-timeout:
			t.Fatalf("no header-id-changed over TLS in the live stream; stderr %s", stderr.String())
		}
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	requests, conns := 0, 0
	for l := range lines {
		switch l.Kind {
		case "connection":
			conns++
			if l.NotKafka != nil {
				t.Errorf("a connection is %v", l.NotKafka)
			}
		case "summary":
			requests = l.Requests
		}
	}
	_ = cmd.Wait()
	if conns == 0 || requests < 13 {
		t.Errorf("final report: %d connections, %d requests; want the kgo client's and the crafted one's (13 or more)", conns, requests)
	}

	// The written file, analysed without the key log.
	out, errOut, code := runKidscope(t, "analyze", "-p", port, "-o", "json", "--fail-on", "never", written)
	var doc struct {
		Summary struct {
			Requests int `json:"requests"`
		} `json:"summary"`
		Connections []struct {
			NotKafka *string `json:"not_kafka"`
		} `json:"connections"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("analyze %s: exit %d: %s", written, code, errOut)
	}
	secretsIn := 0
	rd, err := capture.Open([]string{written}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rd.OnSecrets(func(int, uint32, []byte) { secretsIn++ })
	for p := (capture.Packet{}); rd.Next(&p) == nil; {
	}
	rd.Close()
	if !writeSecrets {
		if secretsIn != 0 || doc.Summary.Requests != 0 {
			t.Errorf("without --write-secrets: %d secrets blocks in the file, %d requests decoded from it; want none", secretsIn, doc.Summary.Requests)
		}
		return
	}
	if secretsIn < 2 || doc.Summary.Requests != requests {
		t.Errorf("with --write-secrets: %d secrets blocks, %d requests decoded from the file; want some and %d (live's)", secretsIn, doc.Summary.Requests, requests)
	}
	for _, c := range doc.Connections {
		if c.NotKafka != nil {
			t.Errorf("with --write-secrets, a connection of the file is %s", *c.NotKafka)
		}
	}
	// Wireshark decrypts it too, with no key log of its own: the secrets
	// blocks were moved ahead of the frames when the file closed.
	tshark := exec.Command("tshark", append([]string{"-d", "tcp.port==" + port + ",tls", "-d", "tls.port==" + port + ",kafka"},
		tsharkArgs(written, nil)...)...)
	tout, err := tshark.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v", written, err)
	}
	got, want := tsharkFields(string(tout)), kidscopeMessages(t, written, port)
	if fmt.Sprint(got) != fmt.Sprint(want) || len(want) < 2*13 {
		t.Errorf("tshark on the --write-secrets file: %d messages, kidscope %d (want the same, 26 or more)", len(got), len(want))
	}
	t.Logf("tshark and kidscope on the --write-secrets file: %d and %d messages", len(got), len(want))
}
