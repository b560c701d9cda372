package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
