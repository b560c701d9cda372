package realcapture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MetaSuffix is the sidecar's suffix: NAME.pcap has NAME.meta.json.
const MetaSuffix = ".meta.json"

// Meta is a capture file's sidecar: which client and broker made it, the
// broker ports (to pass to kidscope --port or tshark -d), and what the
// harness counted in the file. It is written by the harness on every run;
// what the capture must show is in the hand-written NAME.expect.json.
type Meta struct {
	Scenario      string `json:"scenario"`
	Client        string `json:"client"`
	ClientVersion string `json:"client_version"`
	Broker        string `json:"broker"`
	BrokerVersion string `json:"broker_version"`
	Role          string `json:"role"`
	// TLS is the TLS version the connections use ("1.2", "1.3"), empty
	// for plaintext. Kafka inside TLS is not counted (Requests and the
	// counts after it stay empty): the key log NAME.keylog decrypts it.
	TLS   string   `json:"tls,omitempty"`
	Ports []uint16 `json:"ports"`
	// Summary is the client's own account of the run (records, groups,
	// the keys its hooks saw); no payload bytes.
	Summary     string              `json:"summary"`
	Bytes       int64               `json:"bytes"`
	Frames      int                 `json:"frames"`
	Connections int                 `json:"connections"`
	Requests    map[string]APICount `json:"requests"`
	// Flexible is how many requests use a flexible version (header v2),
	// HeaderIDs how many carry a KIP-1313 instance ID (header tag 0).
	Flexible  int `json:"flexible_requests"`
	HeaderIDs int `json:"header_ids"`
	// TerminatingPushes is how many PushTelemetry requests have
	// Terminating set.
	TerminatingPushes int `json:"terminating_pushes"`
	// EmptyMemberHeartbeats is how many ConsumerGroupHeartbeat v1+
	// requests have an empty MemberId.
	EmptyMemberHeartbeats int `json:"empty_member_heartbeats"`
}

// APICount is how many requests of one API key a file holds, and in which
// versions.
type APICount struct {
	Name     string  `json:"name"`
	Count    int     `json:"count"`
	Versions []int16 `json:"versions"`
}

// PortList is Ports as kidscope's --port takes it: "p1,p2,p3".
func (m Meta) PortList() string {
	s := make([]string, len(m.Ports))
	for i, p := range m.Ports {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}

// WriteMeta writes m as indented JSON.
func WriteMeta(path string, m Meta) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ReadMeta reads a sidecar.
func ReadMeta(path string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if len(m.Ports) == 0 {
		return m, fmt.Errorf("%s: no broker ports", path)
	}
	return m, nil
}

// Captures lists the capture files in dir (NAME.pcap), each with its
// sidecar, sorted by name. A capture without a sidecar is an error.
func Captures(dir string) ([]string, map[string]Meta, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.pcap"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	metas := map[string]Meta{}
	for _, f := range files {
		m, err := ReadMeta(strings.TrimSuffix(f, ".pcap") + MetaSuffix)
		if err != nil {
			return nil, nil, err
		}
		metas[f] = m
	}
	return files, metas, nil
}
