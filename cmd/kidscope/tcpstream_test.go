package main

import (
	"encoding/json"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kidscope/kidscope/internal/synth"
	"github.com/kidscope/kidscope/samples/netsim"
)

// TestTCPStreamAgreesWithTshark: each connection's tcp_stream is the
// tcp.stream tshark gives the connection's first frame, on real clients'
// captures and on the samples (some carry other TCP traffic besides
// Kafka, which Wireshark numbers too); with --workers too.
func TestTCPStreamAgreesWithTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("no tshark")
	}
	type input struct{ file, ports string }
	var inputs []input
	real, _ := filepath.Glob("../../testdata/real/*.pcap")
	for _, f := range real {
		inputs = append(inputs, input{f, strings.Join(capturePorts(t, strings.TrimSuffix(f, ".pcap")+".meta.json"), ",")})
	}
	samples, _ := filepath.Glob(filepath.Join(scopeSamples(t), "*.pcapng"))
	for _, f := range samples {
		inputs = append(inputs, input{f, "auto"})
	}
	if len(real) == 0 || len(samples) == 0 {
		t.Fatalf("%d real captures, %d samples", len(real), len(samples))
	}
	checked := 0
	for _, in := range inputs {
		out, err := exec.Command("tshark", "-r", in.file, "-T", "fields", "-e", "frame.number", "-e", "tcp.stream").Output()
		if err != nil {
			t.Fatalf("tshark %s: %v", in.file, err)
		}
		stream := map[int64]string{}
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Split(l, "\t"); len(f) == 2 && f[1] != "" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				stream[n] = f[1]
			}
		}
		for _, workers := range []string{"1", "3"} {
			stdout, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", "--workers", workers, "-p", in.ports, in.file)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", in.file, code, stderr)
			}
			var d struct {
				Connections []struct {
					ID        int  `json:"id"`
					TCPStream *int `json:"tcp_stream"`
					First     struct {
						Frame int64 `json:"frame"`
					} `json:"first"`
				} `json:"connections"`
			}
			if err := json.Unmarshal([]byte(stdout), &d); err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Connections {
				got := "null"
				if c.TCPStream != nil {
					got = strconv.Itoa(*c.TCPStream)
				}
				if want := stream[c.First.Frame]; got != want {
					t.Errorf("%s --workers %s: connection %d (first frame %d): tcp_stream %s, tshark %q",
						filepath.Base(in.file), workers, c.ID, c.First.Frame, got, want)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no connection checked")
	}
}

// TestTCPStreamReuseAgreesWithTshark: other TCP traffic between Kafka
// connections, and a Kafka client that reuses a closed connection's
// 4-tuple with a new SYN: kidscope's numbers are still tshark's.
func TestTCPStreamReuseAgreesWithTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("no tshark")
	}
	b := synth.New(netsim.Options{Format: netsim.Pcap, Seed: 5})
	web := b.C.Open(netip.MustParseAddrPort("10.1.0.7:40000"), netip.MustParseAddrPort("10.1.0.2:80"), netsim.ConnOptions{})
	web.Send(true, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	web.Send(false, []byte("HTTP/1.1 204 No Content\r\n\r\n"))
	first := b.Open(synth.Client4, synth.Broker4, netsim.ConnOptions{ClientISN: 0x1000, ServerISN: 0x2000}, "first")
	first.Short("a-")
	first.N.Close(true)
	other := b.C.Open(netip.MustParseAddrPort("10.1.0.8:40001"), netip.MustParseAddrPort("10.1.0.2:22"), netsim.ConnOptions{})
	other.Send(true, []byte("SSH-2.0-x\r\n"))
	again := b.Open(synth.Client4, synth.Broker4, netsim.ConnOptions{ClientISN: 0x9000_0000, ServerISN: 0x7000_0000}, "again")
	again.Short("b-")
	again.N.Close(true)
	path := filepath.Join(t.TempDir(), "streams.pcap")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tshark", "-r", path, "-T", "fields", "-e", "frame.number", "-e", "tcp.stream").Output()
	if err != nil {
		t.Fatal(err)
	}
	stream := map[int64]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Split(l, "\t"); len(f) == 2 && f[1] != "" {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			stream[n] = f[1]
		}
	}
	stdout, stderr, code := runKidscope(t, "analyze", "-o", "json", "--fail-on", "never", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d struct {
		Connections []struct {
			TCPStream *int `json:"tcp_stream"`
			First     struct {
				Frame int64 `json:"frame"`
			} `json:"first"`
		} `json:"connections"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Connections {
		s := "null"
		if c.TCPStream != nil {
			s = strconv.Itoa(*c.TCPStream)
		}
		if s != stream[c.First.Frame] {
			t.Errorf("connection at frame %d: tcp_stream %s, tshark %q", c.First.Frame, s, stream[c.First.Frame])
		}
		got = append(got, s)
	}
	// The Kafka connections are streams 1 and 3 (0 is HTTP, 2 SSH).
	if strings.Join(got, ",") != "1,3" {
		t.Errorf("tcp_stream %v, want 1,3", got)
	}
}
