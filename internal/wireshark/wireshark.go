// Package wireshark holds what the tests know of Wireshark 4.0's Kafka
// dissector (the tshark that Debian 12 ships and CI installs): which API
// versions it decodes, so a comparison with it looks only where it can
// see, and how the tests run it.
package wireshark

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// max is the highest version of each API key that Wireshark 4.0's Kafka
// dissector decodes (from its "Unsupported … version. Supports v0-N"
// notes). Keys 48 and up it does not know at all. A body of a newer
// version, or of an unknown key, is "malformed" to it; nothing else may be.
var max = map[int16]int16{
	0: 8, 1: 11, 2: 5, 3: 9, 8: 8, 9: 7, 10: 3, 11: 7, 13: 4, 15: 5, 16: 3, 18: 3, 19: 5, 20: 4, 21: 1,
	22: 3, 23: 3, 24: 1, 25: 1, 26: 1, 27: 0, 28: 3, 29: 2, 30: 2, 31: 2, 32: 2, 33: 1, 34: 1, 35: 1,
	37: 2, 38: 2, 41: 2, 42: 2, 45: 0, 47: 0,
}

// Reads reports whether Wireshark 4.0 can dissect this API version.
func Reads(key, version int16) bool {
	if key >= 48 {
		return false
	}
	// Wireshark 4.0.17 misreads the group protocols of every non-flexible
	// JoinGroup (v0-v5), whatever the metadata holds: "Protocol Metadata:
	// <MISSING>", then "Dissected message does not end at the pdu length
	// offset". The bytes follow the schema and kmsg reads them back.
	if key == 11 && version <= 5 {
		return false
	}
	if m, ok := max[key]; ok {
		return version <= m
	}
	return true
}

// Path returns tshark's path, or "" when it is not installed.
func Path() string {
	p, err := exec.LookPath("tshark")
	if err != nil {
		return ""
	}
	return p
}

// Need returns tshark's path. Without tshark it skips the test, or fails it
// under CI, which installs tshark.
func Need(t testing.TB) string {
	t.Helper()
	p := Path()
	if p == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("tshark is not installed; .ci/run installs it (apt-get install tshark)")
		}
		t.Skip("tshark is not installed (apt-get install tshark): the Wireshark cross-check is skipped")
	}
	return p
}

// Fields runs `tshark -T fields` over file, Kafka dissected on ports and
// out-of-order segments reassembled, and returns a row per frame: for each
// field asked for, its occurrences in the frame (none when empty).
func Fields(tshark, file string, ports []uint16, fields ...string) ([][][]string, error) {
	args := []string{"-r", file, "-n", "-o", "tcp.reassemble_out_of_order:TRUE"}
	for _, p := range ports {
		args = append(args, "-d", fmt.Sprintf("tcp.port==%d,kafka", p))
	}
	args = append(args, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|")
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(tshark, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tshark: %v: %s", err, stderr.String())
	}
	var rows [][][]string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		cols := strings.Split(l, "\t")
		row := make([][]string, len(fields))
		for i := range row {
			if i < len(cols) && cols[i] != "" {
				row[i] = strings.Split(cols[i], "|")
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}
