// Command realtls makes packet captures of real Kafka traffic over TLS, with
// the clients' key logs (NSS key log format, SSLKEYLOGFILE), for the TLS
// decryption of issue 14: it starts franz-go's kfake with TLS (a self-signed
// ECDSA P-256 certificate made at run time), captures the loopback
// interface with AF_PACKET (internal/realcapture), and runs the same kgo
// scenario over plaintext, TLS 1.3 and TLS 1.2, then a crafted client over
// TLS 1.3 that changes its header instance ID (header-id-changed).
//
//	go run ./internal/realtls -o testdata/tls
//
// Each scenario NAME gets NAME.pcap and NAME.meta.json (the broker ports);
// a TLS one also NAME.keylog (every secret its connections used) and, when
// editcap is installed, NAME.dsb.pcapng (the pcap with the key log injected
// as a Decryption Secrets Block); and, when tshark is installed,
// NAME.tshark.txt, the Kafka messages tshark decrypts and dissects (see
// TestTsharkReference). Each scenario runs against its own one-broker
// cluster, so the plaintext and TLS runs start from the same state.
//
// It needs root (or CAP_NET_RAW) for the capture.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kidscope/kidscope/internal/realcapture"
	"github.com/kidscope/kidscope/internal/wireshark"
)

func main() {
	out := flag.String("o", "testdata/tls", "directory to write the capture files into")
	iface := flag.String("i", "lo", "interface to capture (the loopback interface)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *iface, *out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "realtls:", err)
		os.Exit(1)
	}
}

// The topic of every scenario: one partition, so the records and the
// requests that carry them do not depend on a partitioner.
const (
	topic    = "kidscope-tls"
	group    = "kidscope-tls-group"
	nRecords = 20
)

// scenario is one client workload against its own kfake broker; tlsVersion
// 0 is plaintext.
type scenario struct {
	name, role string
	tlsVersion uint16
	run        func(ctx context.Context, seeds []string, tlsCfg *tls.Config) (string, error)
}

var scenarios = []scenario{
	{"kgo-plain", "producer+consumer", 0, kgoScenario},
	{"kgo-tls13", "producer+consumer", tls.VersionTLS13, kgoScenario},
	{"kgo-tls12", "producer+consumer", tls.VersionTLS12, kgoScenario},
	{"violating-tls13", "crafted", tls.VersionTLS13, violatingScenario},
}

// tlsName is "1.3" for tls.VersionTLS13, "" for 0.
func tlsName(v uint16) string {
	switch v {
	case 0:
		return ""
	case tls.VersionTLS12:
		return "1.2"
	case tls.VersionTLS13:
		return "1.3"
	}
	return fmt.Sprintf("0x%04x", v)
}

// syncBuffer is a key log that several connections write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}

// run captures every scenario into dir.
func run(ctx context.Context, iface, dir string, log io.Writer) (err error) {
	begin := time.Now()
	cert, err := realcapture.SelfSigned()
	if err != nil {
		return err
	}
	s, err := realcapture.NewSession(iface, log)
	if err != nil {
		return err
	}
	defer func() {
		if serr := s.Stop(); err == nil && serr != nil {
			err = serr
		}
	}()
	keylogs := map[string]*syncBuffer{}
	for _, sc := range scenarios {
		opts := []kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID("kidscope-tls"), kfake.SeedTopics(1, topic)}
		var clientCfg *tls.Config
		if sc.tlsVersion != 0 {
			opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
			kl := &syncBuffer{}
			keylogs[sc.name] = kl
			clientCfg = &tls.Config{
				InsecureSkipVerify: true, // the certificate is self-signed, made above
				KeyLogWriter:       kl,
				MinVersion:         sc.tlsVersion,
				MaxVersion:         sc.tlsVersion,
			}
		}
		cluster, err := kfake.NewCluster(opts...)
		if err != nil {
			return fmt.Errorf("starting kfake: %w", err)
		}
		seeds := cluster.ListenAddrs()
		ports, err := realcapture.PortsOf(seeds)
		if err != nil {
			cluster.Close()
			return err
		}
		s.Watch(ports)
		meta := realcapture.Meta{
			Scenario: sc.name, Role: sc.role, Ports: ports, TLS: tlsName(sc.tlsVersion),
			Client: "kgo", ClientVersion: realcapture.ModuleVersion("github.com/twmb/franz-go"),
			Broker: "kfake", BrokerVersion: realcapture.ModuleVersion("github.com/twmb/franz-go/pkg/kfake"),
		}
		if sc.role == "crafted" {
			meta.Client, meta.ClientVersion = "crafted", "kidscope (crypto/tls)"
		}
		err = s.Run(ctx, meta, 20*time.Second, func(ctx context.Context) (string, error) { return sc.run(ctx, seeds, clientCfg) })
		cluster.Close()
		if err != nil {
			return err
		}
	}
	time.Sleep(200 * time.Millisecond)
	if err := s.Write(dir); err != nil {
		return err
	}
	for _, sc := range scenarios {
		kl := keylogs[sc.name]
		if kl == nil {
			continue
		}
		pcap := filepath.Join(dir, sc.name+".pcap")
		keylog := filepath.Join(dir, sc.name+".keylog")
		if err := os.WriteFile(keylog, kl.Bytes(), 0o644); err != nil {
			return err
		}
		if editcap, err := exec.LookPath("editcap"); err == nil {
			dsb := filepath.Join(dir, sc.name+".dsb.pcapng")
			if out, err := exec.Command(editcap, "--inject-secrets", "tls,"+keylog, pcap, dsb).CombinedOutput(); err != nil {
				return fmt.Errorf("editcap: %v: %s", err, out)
			}
		} else {
			fmt.Fprintln(log, "editcap is not installed: no .dsb.pcapng")
		}
	}
	if tshark := wireshark.Path(); tshark != "" {
		for _, sc := range scenarios {
			m, err := realcapture.ReadMeta(filepath.Join(dir, sc.name+realcapture.MetaSuffix))
			if err != nil {
				return err
			}
			keylog := ""
			if sc.tlsVersion != 0 {
				keylog = filepath.Join(dir, sc.name+".keylog")
			}
			msgs, err := Tshark(tshark, filepath.Join(dir, sc.name+".pcap"), keylog, keylog != "", m.Ports)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, sc.name+GoldenSuffix), FormatGolden(msgs), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(log, "%s: tshark dissects %d Kafka messages\n", sc.name, len(msgs))
		}
	} else {
		fmt.Fprintln(log, "tshark is not installed: no .tshark.txt")
	}
	fmt.Fprintf(log, "done in %.1fs\n", time.Since(begin).Seconds())
	return nil
}
