package fleet

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// An agent's report: what it would print itself when it stops (its totals,
// connections, client instances and brokers), published as records when
// it stops, so that the fleet's report shows, in every section, the union
// of what its agents saw. The rows come first, the summary last: it says
// how many rows came before it, so that a fleet knows whether it read the
// whole report. The observations cannot stand for it: they carry only what
// the rules across connections read, not every packet, request and
// answer.

// WireSummary is an agent run's totals (result.Summary), named as the
// JSON report's summary names them.
type WireSummary struct {
	Files                 []string   `json:"files"` // its inputs, as its frames name them
	First                 *time.Time `json:"first,omitempty"`
	Last                  *time.Time `json:"last,omitempty"`
	Packets               int64      `json:"packets"`
	Bytes                 int64      `json:"bytes"`
	Connections           int64      `json:"connections"`
	Requests              int64      `json:"requests"`
	Responses             int64      `json:"responses"`
	Gaps                  int64      `json:"gaps,omitempty"`
	Resyncs               int64      `json:"resyncs,omitempty"`
	Malformed             int64      `json:"malformed,omitempty"`
	MalformedPackets      int64      `json:"malformed_packets,omitempty"`
	CutPackets            int64      `json:"cut_packets,omitempty"`
	NotKafka              int64      `json:"not_kafka,omitempty"`
	Unanswered            int64      `json:"unanswered,omitempty"`
	NoResponseExpected    int64      `json:"no_response_expected,omitempty"`
	Unmatched             int64      `json:"unmatched,omitempty"`
	UnknownAPI            int64      `json:"unknown_api,omitempty"`
	TruncatedStreams      int64      `json:"truncated_streams,omitempty"`
	ConnectionsDropped    int64      `json:"connections_dropped,omitempty"`
	ConnectionsReused     int64      `json:"connections_reused,omitempty"`
	KernelDrops           int64      `json:"kernel_drops,omitempty"`
	Filtered              int64      `json:"filtered,omitempty"`
	OutsideTime           int64      `json:"outside_time,omitempty"`
	BodiesSkippedBudget   int64      `json:"bodies_skipped_budget,omitempty"`
	BodiesSkippedTooLarge int64      `json:"bodies_skipped_too_large,omitempty"`
	OversizedFrames       int64      `json:"oversized_frames,omitempty"`
	ExtraInterfaces       int64      `json:"extra_interfaces,omitempty"`
	ExtraInterfaceFrames  int64      `json:"extra_interface_frames,omitempty"`
	// Problems are its input problems, one line each (the first
	// maxProblems).
	Problems    []string      `json:"problems,omitempty"`
	Comments    []WireComment `json:"comments,omitempty"`
	Interrupted bool          `json:"interrupted,omitempty"`
	// What its caps left out of its tables (rules.Dropped).
	DroppedConnections       int64 `json:"dropped_connections,omitempty"`
	DroppedInstances         int64 `json:"dropped_instances,omitempty"`
	DroppedBrokerConnections int64 `json:"dropped_broker_connections,omitempty"`
	// UnlistedOld and UnlistedNew are the closed Kafka connections, by
	// client kind, to the brokers past its brokers list: the matrix counts
	// them as of brokers of unknown verdict.
	UnlistedOld int `json:"unlisted_old_clients,omitempty"`
	UnlistedNew int `json:"unlisted_new_clients,omitempty"`
	// The rows of the report published before the summary.
	ConnectionRows int `json:"connection_rows"`
	InstanceRows   int `json:"instance_rows"`
	BrokerRows     int `json:"broker_rows"`
}

// WireComment is a capture comment of one of its inputs.
type WireComment struct {
	File string `json:"file"`
	Text string `json:"text"`
}

// WireConnection is a row of its connections table (rules.Connection).
type WireConnection struct {
	ID         int     `json:"id"`
	Client     string  `json:"client"`
	Broker     string  `json:"broker"`
	TCPStream  *int    `json:"tcp_stream,omitempty"`
	ClientID   *string `json:"client_id,omitempty"`
	InstanceID string  `json:"instance_id,omitempty"`
	Profile    string  `json:"profile,omitempty"` // report.ProfileNames; "" none
	MidStream  bool    `json:"mid_stream,omitempty"`
	NewClient  bool    `json:"new_client,omitempty"`
	Requests   int64   `json:"requests"`
	Responses  int64   `json:"responses"`
	Unanswered int64   `json:"unanswered,omitempty"`
	Gaps       int     `json:"gaps,omitempty"`
	NotKafka   string  `json:"not_kafka,omitempty"`
	TLS        string  `json:"tls,omitempty"`
	First      Ref     `json:"first"`
	Last       Ref     `json:"last"`
}

// WireInstance is a client instance ID it saw (rules.Instance); its
// connections are the agent's numbers.
type WireInstance struct {
	ID              string   `json:"instance_id"`
	ClientIDs       []string `json:"client_ids,omitempty"`
	Addresses       []string `json:"client_addresses,omitempty"`
	Brokers         []string `json:"brokers,omitempty"`
	Connections     []int    `json:"connections,omitempty"`
	ConnectionCount int64    `json:"connections_total"`
	First           Ref      `json:"first_seen"`
	Last            Ref      `json:"last_seen"`
	TelemetryIDs    []string `json:"telemetry_ids,omitempty"`
}

// WireBroker is a broker endpoint it saw and what its answers said of
// KIP-1313 (rules.Broker); the fleet makes the verdict of every agent's.
type WireBroker struct {
	Broker        string `json:"broker"`
	EnforceFrames []Ref  `json:"enforce_frames,omitempty"`
	IgnoreFrames  []Ref  `json:"ignore_frames,omitempty"`
	Enforced      int64  `json:"enforced,omitempty"`
	Ignored       int64  `json:"ignored,omitempty"`
	Connections   int    `json:"connections"`
	TLSNoKey      int    `json:"tls_no_key,omitempty"`
	// OldClients and NewClients count its closed Kafka connections that
	// sent a request, by client kind (rules.Broker.Kinds).
	OldClients int   `json:"old_clients,omitempty"`
	NewClients int   `json:"new_clients,omitempty"`
	Telemetry  *bool `json:"telemetry,omitempty"` // nil: no ApiVersions answer seen
}

// maxProblems bounds the input problems a summary carries.
const maxProblems = 100

// EncodeReport is an agent run's report: a record per connection, client
// instance and broker of res, then its summary.
func EncodeReport(sum *result.Summary, res *rules.Result, files Files) []Record {
	var out []Record
	for i := range res.Connections {
		out = append(out, Record{Type: TypeConnection, Connection: connectionOf(&res.Connections[i], files)})
	}
	for i := range res.Instances {
		out = append(out, Record{Type: TypeInstance, Instance: instanceOf(&res.Instances[i], files)})
	}
	unlisted := [2]int{}
	for kind, row := range res.Matrix.Cells {
		for _, n := range row {
			unlisted[kind] += n
		}
	}
	for i := range res.Brokers {
		b := &res.Brokers[i]
		unlisted[0] -= b.Kinds[0]
		unlisted[1] -= b.Kinds[1]
		out = append(out, Record{Type: TypeBroker, Broker: brokerOf(b, files)})
	}
	s := summaryOf(sum, files)
	s.DroppedConnections, s.DroppedInstances = res.Dropped.Connections, res.Dropped.Instances
	s.DroppedBrokerConnections = res.Dropped.BrokerConnections
	s.UnlistedOld, s.UnlistedNew = unlisted[0], unlisted[1]
	s.ConnectionRows, s.InstanceRows, s.BrokerRows = len(res.Connections), len(res.Instances), len(res.Brokers)
	return append(out, Record{Type: TypeSummary, Summary: s})
}

func summaryOf(s *result.Summary, files Files) *WireSummary {
	w := &WireSummary{Packets: s.Capture.Packets, Bytes: s.Capture.Bytes, Connections: s.Connections,
		Requests: s.Requests, Responses: s.Responses, Gaps: s.Gaps, Resyncs: s.Resyncs, Malformed: s.Malformed,
		MalformedPackets: s.Capture.Malformed, CutPackets: s.Capture.Cut, NotKafka: s.NotKafka, Unanswered: s.Unanswered,
		NoResponseExpected: s.NoResponse, Unmatched: s.Unmatched, UnknownAPI: s.UnknownAPI, TruncatedStreams: s.Truncated,
		ConnectionsDropped: s.Reassembly.ConnectionsDropped, ConnectionsReused: s.Reassembly.Reused,
		KernelDrops: s.Capture.KernelDrops, Filtered: s.Capture.Filtered, OutsideTime: s.OutsideTime,
		BodiesSkippedBudget: s.BodiesSkippedBudget, BodiesSkippedTooLarge: s.BodiesSkippedTooLarge,
		OversizedFrames: s.Capture.OversizedFrames, ExtraInterfaces: s.Capture.ExtraInterfaces,
		ExtraInterfaceFrames: s.Capture.ExtraInterfaceFrames, Interrupted: s.Interrupted}
	for i := range max(len(s.Files), 1) {
		w.Files = append(w.Files, files(i))
	}
	if !s.First.IsZero() {
		first, last := s.First.UTC(), s.Last.UTC()
		w.First, w.Last = &first, &last
	}
	for _, p := range s.Problems[:min(len(s.Problems), maxProblems)] {
		w.Problems = append(w.Problems, p.Error())
	}
	for _, c := range s.Comments {
		w.Comments = append(w.Comments, WireComment{File: files(c.File), Text: c.Text})
	}
	return w
}

func connectionOf(c *rules.Connection, files Files) *WireConnection {
	w := &WireConnection{ID: c.ID, Client: c.Key.Client.String(), Broker: c.Key.Broker.String(),
		Profile: nameOf(report.ProfileNames, c.Profile, rules.ProfileNone), MidStream: c.MidStream, NewClient: c.NewClient,
		Requests: c.Requests, Responses: c.Responses, Unanswered: c.Unanswered, Gaps: c.Gaps, NotKafka: c.NotKafka, TLS: c.TLS,
		First: refOf(c.First, files), Last: refOf(c.Last, files)}
	if c.HasTCPStream {
		n := c.TCPStream
		w.TCPStream = &n
	}
	if c.HasClient {
		id := c.ClientID
		w.ClientID = &id
	}
	if c.HasInstanceID {
		w.InstanceID = idText(c.InstanceID)
	}
	return w
}

func instanceOf(in *rules.Instance, files Files) *WireInstance {
	w := &WireInstance{ID: idText(in.ID), ClientIDs: slices.Clone(in.ClientIDs), Connections: slices.Clone(in.Connections),
		ConnectionCount: in.ConnectionCount, First: refOf(in.First, files), Last: refOf(in.Last, files)}
	for _, a := range in.Addresses {
		w.Addresses = append(w.Addresses, a.String())
	}
	for _, b := range in.Brokers {
		w.Brokers = append(w.Brokers, b.String())
	}
	for _, t := range in.TelemetryIDs {
		w.TelemetryIDs = append(w.TelemetryIDs, idText(t))
	}
	return w
}

func brokerOf(b *rules.Broker, files Files) *WireBroker {
	w := &WireBroker{Broker: b.Endpoint.String(), Enforced: b.Enforced, Ignored: b.Ignored, Connections: b.Connections,
		TLSNoKey: b.TLSNoKey, OldClients: b.Kinds[0], NewClients: b.Kinds[1]}
	for _, f := range b.EnforceFrames {
		w.EnforceFrames = append(w.EnforceFrames, refOf(f, files))
	}
	for _, f := range b.IgnoreFrames {
		w.IgnoreFrames = append(w.IgnoreFrames, refOf(f, files))
	}
	if b.TelemetryKnown {
		t := b.Telemetry
		w.Telemetry = &t
	}
	return w
}

// The decoder's side: rows in the rules' types, on the fleet's files and
// connection numbers.

func (d *decoder) addr(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		d.fail(fmt.Errorf("address %q: %w", s, err))
	}
	return a
}

// connection is a row of an agent's connections table as the fleet's
// connection id.
func (d *decoder) connection(w *WireConnection, id int) rules.Connection {
	c := rules.Connection{ID: id, Key: kafka.Endpoints{Client: d.addrPort(w.Client), Broker: d.addrPort(w.Broker)},
		Profile: named(d, report.ProfileNames, "profile", w.Profile, rules.ProfileNone), MidStream: w.MidStream,
		NewClient: w.NewClient, Requests: w.Requests, Responses: w.Responses, Unanswered: w.Unanswered, Gaps: w.Gaps,
		NotKafka: w.NotKafka, TLS: w.TLS, First: d.ref(w.First), Last: d.ref(w.Last)}
	if w.TCPStream != nil {
		c.TCPStream, c.HasTCPStream = *w.TCPStream, true
	}
	if w.ClientID != nil {
		c.ClientID, c.HasClient = *w.ClientID, true
	}
	if w.InstanceID != "" {
		c.InstanceID, c.HasInstanceID = d.id(w.InstanceID), true
	}
	return c
}

// instance is a client instance an agent saw, its connections numbered by
// connID.
func (d *decoder) instance(w *WireInstance, connID func(int) int) rules.Instance {
	in := rules.Instance{ID: d.id(w.ID), ClientIDs: slices.Clone(w.ClientIDs), ConnectionCount: w.ConnectionCount,
		First: d.ref(w.First), Last: d.ref(w.Last)}
	for _, a := range w.Addresses {
		in.Addresses = append(in.Addresses, d.addr(a))
	}
	for _, b := range w.Brokers {
		in.Brokers = append(in.Brokers, d.addrPort(b))
	}
	for _, c := range w.Connections {
		in.Connections = append(in.Connections, connID(c))
	}
	for _, t := range w.TelemetryIDs {
		in.TelemetryIDs = append(in.TelemetryIDs, d.id(t))
	}
	return in
}

// broker is a broker an agent saw, without its verdict (the fleet's is
// every agent's).
func (d *decoder) broker(w *WireBroker) rules.Broker {
	b := rules.Broker{Endpoint: d.addrPort(w.Broker), Enforced: w.Enforced, Ignored: w.Ignored, Connections: w.Connections,
		TLSNoKey: w.TLSNoKey, Kinds: [2]int{w.OldClients, w.NewClients}}
	for _, f := range w.EnforceFrames {
		b.EnforceFrames = append(b.EnforceFrames, d.ref(f))
	}
	for _, f := range w.IgnoreFrames {
		b.IgnoreFrames = append(b.IgnoreFrames, d.ref(f))
	}
	if w.Telemetry != nil {
		b.Telemetry, b.TelemetryKnown = *w.Telemetry, true
	}
	return b
}

// summary is an agent run's totals on the fleet's files, its problems
// named by agent.
func (d *decoder) summary(w *WireSummary, agent string) result.Summary {
	s := result.Summary{Connections: w.Connections, OutsideTime: w.OutsideTime, Gaps: w.Gaps, NotKafka: w.NotKafka,
		Truncated: w.TruncatedStreams, Interrupted: w.Interrupted,
		Capture: capture.Stats{Packets: w.Packets, Bytes: w.Bytes, Cut: w.CutPackets, Malformed: w.MalformedPackets,
			Filtered: w.Filtered, KernelDrops: w.KernelDrops, OversizedFrames: w.OversizedFrames,
			ExtraInterfaces: w.ExtraInterfaces, ExtraInterfaceFrames: w.ExtraInterfaceFrames},
		Counters: decode.Counters{Requests: w.Requests, Responses: w.Responses, Unmatched: w.Unmatched, Unanswered: w.Unanswered,
			Resyncs: w.Resyncs, Malformed: w.Malformed, UnknownAPI: w.UnknownAPI, BodiesSkippedTooLarge: w.BodiesSkippedTooLarge,
			BodiesSkippedBudget: w.BodiesSkippedBudget, NoResponse: w.NoResponseExpected}}
	s.Reassembly.ConnectionsDropped, s.Reassembly.Reused = w.ConnectionsDropped, w.ConnectionsReused
	for _, f := range w.Files {
		d.file(f)
	}
	if w.First != nil && w.Last != nil {
		s.First, s.Last = *w.First, *w.Last
	}
	for _, p := range w.Problems {
		s.Problems = append(s.Problems, errors.New(agent+": "+p))
	}
	for _, c := range w.Comments {
		s.Comments = append(s.Comments, capture.FileComment{File: d.file(c.File), Text: c.Text})
	}
	return s
}
