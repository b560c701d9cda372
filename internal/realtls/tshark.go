package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// GoldenSuffix is the suffix of a capture's tshark expectation: NAME.pcap
// has NAME.tshark.txt.
const GoldenSuffix = ".tshark.txt"

// Msg is one Kafka message tshark dissected. A request has its API key,
// version and client ID; a response has the API key and version of the
// request tshark matched it with (kafka.response_key; -1 when tshark
// matched none), and no client ID nor version (tshark 4.0 shows no kafka.api_version
// in a response: Version is -1).
type Msg struct {
	Frame    int
	Request  bool
	Key      int
	Version  int
	Corr     int
	ClientID string
	// Malformed is tshark's _ws.malformed on the frame (not in the
	// golden file).
	Malformed bool
}

// Line is the message as a line of the golden file:
//
//	FRAME request KEY VERSION CORR CLIENT_ID
//	FRAME response KEY CORR
//
// A client ID is quoted with strconv.Quote.
func (m Msg) Line() string {
	if m.Request {
		return fmt.Sprintf("%d request %d %d %d %s", m.Frame, m.Key, m.Version, m.Corr, strconv.Quote(m.ClientID))
	}
	return fmt.Sprintf("%d response %d %d", m.Frame, m.Key, m.Corr)
}

// Fields are the tshark fields Tshark extracts, in this order.
var Fields = []string{
	"frame.number", "tcp.dstport", "kafka.correlation_id", "kafka.request_key", "kafka.response_key",
	"kafka.api_version", "kafka.client_id", "_ws.malformed",
}

// TsharkArgs are the arguments Tshark gives tshark: Kafka on the broker
// ports, out-of-order segments reassembled, and the key log when keylog is
// not empty. Over TLS (overTLS), Kafka is what TLS carries on the ports
// (-d tls.port==N,kafka; tshark finds TLS on TCP by itself): -d
// tcp.port==N,kafka would have it read the TLS records as Kafka.
func TsharkArgs(file, keylog string, overTLS bool, ports []uint16) []string {
	args := []string{"-r", file, "-n", "-o", "tcp.reassemble_out_of_order:TRUE"}
	if keylog != "" {
		args = append(args, "-o", "tls.keylog_file:"+keylog)
	}
	for _, p := range ports {
		table := "tcp.port"
		if overTLS {
			table = "tls.port"
		}
		args = append(args, "-d", fmt.Sprintf("%s==%d,kafka", table, p))
	}
	args = append(args, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|")
	for _, f := range Fields {
		args = append(args, "-e", f)
	}
	return args
}

// Tshark runs tshark over file and returns every Kafka message it
// dissects, in frame order. A frame can hold several messages (TCP
// reassembly ends several PDUs in it): tshark gives every field once per
// message, in message order, and the fields of one message are matched up
// by position. A frame whose fields do not line up is an error.
func Tshark(tshark, file, keylog string, overTLS bool, ports []uint16) ([]Msg, error) {
	cmd := exec.Command(tshark, TsharkArgs(file, keylog, overTLS, ports)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tshark: %v: %s", err, stderr.String())
	}
	broker := map[string]bool{}
	for _, p := range ports {
		broker[strconv.Itoa(int(p))] = true
	}
	var msgs []Msg
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		cols := strings.Split(l, "\t")
		col := func(i int) []string {
			if i < len(cols) && cols[i] != "" {
				return strings.Split(cols[i], "|")
			}
			return nil
		}
		corrs := col(2)
		if len(corrs) == 0 {
			continue // no Kafka message in this frame
		}
		frame, err := strconv.Atoi(cols[0])
		if err != nil {
			return nil, fmt.Errorf("tshark line %q: frame number", l)
		}
		request := broker[cols[1]]
		// tshark 4.0 calls a frame malformed when it holds a version it
		// does not dissect (ApiVersions v4+, Fetch v14+, …): it has read
		// the headers, which is all that is kept.
		malformed := len(col(7)) > 0
		keys, vers, ids := col(4), col(5), col(6)
		if request {
			keys = col(3)
		}
		if !request && len(keys) == 0 {
			// tshark matched no request to these responses.
			keys = make([]string, len(corrs))
			for i := range keys {
				keys[i] = "-1"
			}
		}
		if len(keys) != len(corrs) || request && (len(vers) != len(corrs) || len(ids) != len(corrs)) || !request && (len(vers) != 0 || len(ids) != 0) {
			return nil, fmt.Errorf("frame %d: %d correlation IDs, %d API keys, %d versions, %d client IDs: tshark line %q",
				frame, len(corrs), len(keys), len(vers), len(ids), l)
		}
		for i := range corrs {
			m := Msg{Frame: frame, Request: request, Version: -1, Malformed: malformed}
			conv := []struct {
				s string
				v *int
			}{{corrs[i], &m.Corr}, {keys[i], &m.Key}}
			if request {
				conv = append(conv, struct {
					s string
					v *int
				}{vers[i], &m.Version})
			}
			for _, f := range conv {
				if *f.v, err = strconv.Atoi(f.s); err != nil {
					return nil, fmt.Errorf("frame %d: %q: %v", frame, f.s, err)
				}
			}
			if request {
				m.ClientID = ids[i]
			}
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}

// FormatGolden is the golden file of msgs: a comment, then a line per
// message.
func FormatGolden(msgs []Msg) []byte {
	var b bytes.Buffer
	b.WriteString("# Kafka messages tshark dissects (internal/realtls, TestTsharkReference):\n")
	b.WriteString("# FRAME request API_KEY API_VERSION CORRELATION_ID CLIENT_ID\n")
	b.WriteString("# FRAME response API_KEY CORRELATION_ID (the key of the request tshark matched it with)\n")
	for _, m := range msgs {
		b.WriteString(m.Line())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ParseGolden reads a golden file back.
func ParseGolden(data []byte) ([]Msg, error) {
	var msgs []Msg
	for n, l := range strings.Split(string(data), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.SplitN(l, " ", 6)
		m := Msg{Request: len(f) > 1 && f[1] == "request", Version: -1}
		switch {
		case m.Request && len(f) == 6:
		case len(f) == 4 && f[1] == "response":
		default:
			return nil, fmt.Errorf("line %d: %q", n+1, l)
		}
		ints := []*int{&m.Frame, &m.Key, &m.Corr}
		cols := []int{0, 2, 3}
		if m.Request {
			ints = []*int{&m.Frame, &m.Key, &m.Version, &m.Corr}
			cols = []int{0, 2, 3, 4}
		}
		var err error
		for i, v := range ints {
			if *v, err = strconv.Atoi(f[cols[i]]); err != nil {
				return nil, fmt.Errorf("line %d: %q: %v", n+1, l, err)
			}
		}
		if m.Request {
			if m.ClientID, err = strconv.Unquote(f[5]); err != nil {
				return nil, fmt.Errorf("line %d: client ID %s: %v", n+1, f[5], err)
			}
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}
