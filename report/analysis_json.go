package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"time"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// AnalysisSchemaVersion is the schema_version of analyze's json and ndjson
// output. Fields may be added without changing it; none is renamed or
// removed, and none changes type. 2: expected and seen are typed objects,
// related frames carry their role, findings carry the broker's answer
// typed, and the document says kidscope's version, the options and the
// inputs (docs/schema/analysis.schema.json).
const AnalysisSchemaVersion = 2

// The types below are the JSON schema of `kidscope analyze -o json`
// (docs/formats.md; docs/schema/analysis.schema.json, which a test holds them to).
// The field order is the output order. Pointers are null when the value
// does not exist; slices are never null.

type analysisJSON struct {
	SchemaVersion int `json:"schema_version"`
	runJSON
	Summary     summaryJSON      `json:"summary"`
	Findings    []findingJSON    `json:"findings"`
	Connections []connectionJSON `json:"connections"`
	Instances   []instanceJSON   `json:"instances"`
	Brokers     []brokerJSON     `json:"brokers"`
	Matrix      matrixJSON       `json:"matrix"`
	// FindingCounts count every finding made of each rule on each
	// connection that has one in findings, listed or not.
	FindingCounts []findingCountJSON `json:"finding_counts"`
	// Agents and Fleet: kidscope fleet's report only.
	Agents []agentJSON `json:"agents,omitempty"`
	Fleet  *fleetJSON  `json:"fleet,omitempty"`
}

type findingCountJSON struct {
	Rule         string `json:"rule"`
	ConnectionID int    `json:"connection_id"`
	Count        int64  `json:"count"`
	Listed       int    `json:"listed"`
}

type severityCounts struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

type summaryJSON struct {
	Files              []string       `json:"files"`
	Packets            int64          `json:"packets"`
	Bytes              int64          `json:"bytes"`
	Connections        int64          `json:"connections"`
	Requests           int64          `json:"requests"`
	Responses          int64          `json:"responses"`
	FindingsBySeverity severityCounts `json:"findings_by_severity"`
	// Extras.
	First              *string `json:"first"`
	Last               *string `json:"last"`
	Gaps               int64   `json:"gaps"`
	Resyncs            int64   `json:"resyncs"`
	Malformed          int64   `json:"malformed"`
	MalformedPackets   int64   `json:"malformed_packets"`
	CutPackets         int64   `json:"cut_packets"`
	NotKafka           int64   `json:"not_kafka"`
	Unanswered         int64   `json:"unanswered"`
	NoResponseExpected int64   `json:"no_response_expected"`
	Unmatched          int64   `json:"unmatched"`
	UnknownAPI         int64   `json:"unknown_api"`
	TruncatedStreams   int64   `json:"truncated_streams"`
	ConnectionsDropped int64   `json:"connections_dropped"`
	ConnectionsReused  int64   `json:"connections_reused"`
	KernelDrops        int64   `json:"kernel_drops"`
	Filtered           int64   `json:"filtered"`
	// OutsideTime counts the packets --from/--to dropped before
	// reassembly (counted in Packets too).
	OutsideTime int64 `json:"outside_time"`
	// Bodies not decoded: over --max-body-buffer, over the decoder's cap.
	BodiesSkippedBudget   int64 `json:"bodies_skipped_budget"`
	BodiesSkippedTooLarge int64 `json:"bodies_skipped_too_large"`
	// Input over a limit, read past (hostile or broken files).
	OversizedFrames      int64 `json:"oversized_frames"`
	ExtraInterfaces      int64 `json:"extra_interfaces"`
	ExtraInterfaceFrames int64 `json:"extra_interface_frames"`
	// What the report's caps left out (a long live run).
	DroppedConnections int64 `json:"dropped_connections"`
	DroppedFindings    int64 `json:"dropped_findings"`
	DroppedInstances   int64 `json:"dropped_instances"`
	// Caps of the rules' report, set by newAnalysisJSON.
	DroppedBrokerConnections int64            `json:"dropped_broker_connections"`
	FindingsByRule           map[string]int64 `json:"findings_by_rule"`
	Problems                 []string         `json:"problems"`
	Interrupted              bool             `json:"interrupted"`
	// Scope is set when --instance, --client, --broker or --connection
	// narrowed the lists (report/scope.go).
	Scope *scopeJSON `json:"scope,omitempty"`
}

type scopeJSON struct {
	Flags            string `json:"flags"`
	Findings         int    `json:"findings"`
	FindingsTotal    int    `json:"findings_total"`
	Connections      int    `json:"connections"`
	ConnectionsTotal int    `json:"connections_total"`
}

type endpointsJSON struct {
	Client string `json:"client"`
	Broker string `json:"broker"`
}

// relatedJSON is a frame that supports a finding, and its role.
type relatedJSON struct {
	File  string `json:"file"`
	Frame int64  `json:"frame"`
	Role  string `json:"role"`
}

type whereJSON struct {
	File  string  `json:"file"`
	Frame int64   `json:"frame"`
	Time  *string `json:"time"`
}

type findingJSON struct {
	// ID is the finding's stable ID (FindingID).
	ID            string         `json:"id"`
	Rule          string         `json:"rule"`
	Severity      string         `json:"severity"`
	File          string         `json:"file"`
	Frame         int64          `json:"frame"`
	Time          *string        `json:"time"`
	RelatedFrames []int64        `json:"related_frames"`
	Related       []relatedJSON  `json:"related"`
	Connection    endpointsJSON  `json:"connection"`
	ConnectionID  int            `json:"connection_id"`
	APIKey        *int16         `json:"api_key"`
	APIName       *string        `json:"api_name"`
	APIVersion    *int16         `json:"api_version"`
	CorrelationID *int32         `json:"correlation_id"`
	Expected      *evidenceValue `json:"expected"`
	Seen          *evidenceValue `json:"seen"`
	BrokerAnswer  *string        `json:"broker_answer"`
	Answer        *answerJSON    `json:"answer"`
	Message       string         `json:"message"`
	AfterGap      bool           `json:"after_gap"`
	Also          []string       `json:"also"`
	Count         int64          `json:"count"`
}

type connectionJSON struct {
	ID int `json:"id"`
	// TCPStream is Wireshark's tcp.stream of the connection; null past
	// the cap on 4-tuples numbered.
	TCPStream  *int       `json:"tcp_stream"`
	Client     string     `json:"client"`
	Broker     string     `json:"broker"`
	ClientID   *string    `json:"client_id"`
	InstanceID *string    `json:"instance_id"`
	Profile    *string    `json:"profile"`
	MidStream  bool       `json:"mid_stream"`
	Requests   int64      `json:"requests"`
	Responses  int64      `json:"responses"`
	Gaps       int        `json:"gaps"`
	Unanswered int64      `json:"unanswered"`
	NewClient  bool       `json:"new_client"`
	NotKafka   *string    `json:"not_kafka"`
	TLS        *string    `json:"tls"`
	First      *whereJSON `json:"first"`
	Last       *whereJSON `json:"last"`
}

type instanceJSON struct {
	InstanceID      string     `json:"instance_id"`
	ClientIDs       []string   `json:"client_ids"`
	ClientAddresses []string   `json:"client_addresses"`
	Brokers         []string   `json:"brokers"`
	Connections     []int      `json:"connections"`
	ConnectionCount int64      `json:"connections_total"`
	FirstSeen       *whereJSON `json:"first_seen"`
	LastSeen        *whereJSON `json:"last_seen"`
	TelemetryIDs    []string   `json:"telemetry_ids"`
}

type evidenceJSON struct {
	File    string `json:"file"`
	Frame   int64  `json:"frame"`
	Verdict string `json:"verdict"` // "enforces" or "ignores"
}

type brokerJSON struct {
	Broker         string         `json:"broker"`
	KIP1313        string         `json:"kip1313"`
	EvidenceFrames []int64        `json:"evidence_frames"`
	EnforceFrames  []int64        `json:"enforce_frames"`
	IgnoreFrames   []int64        `json:"ignore_frames"`
	Evidence       []evidenceJSON `json:"evidence"`
	// The lists keep the first frames of each verdict; these count them
	// all.
	EvidenceTotal int64 `json:"evidence_total"`
	EnforceTotal  int64 `json:"enforce_total"`
	IgnoreTotal   int64 `json:"ignore_total"`
	Connections   int   `json:"connections"`
	TLSNoKey      int   `json:"tls_no_key"`
	Telemetry     *bool `json:"telemetry"`
}

type matrixRowJSON struct {
	OldBroker int `json:"old_broker"`
	NewBroker int `json:"new_broker"`
	Unknown   int `json:"unknown"`
}

type matrixJSON struct {
	OldClient matrixRowJSON `json:"old_client"`
	NewClient matrixRowJSON `json:"new_client"`
}

func strPtr(s string) *string { return &s }

// optText is null for "", else s.
func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timeText(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return strPtr(t.UTC().Format(time.RFC3339Nano))
}

func whereOf(files []string, w kafka.FrameRef) *whereJSON {
	if w.Frame == 0 {
		return nil
	}
	return &whereJSON{File: fileName(files, w.File), Frame: w.Frame, Time: timeText(w.Time)}
}

func newFindingJSON(files []string, origins []Origin, f *rules.Finding, form UUIDForm) findingJSON {
	j := findingJSON{
		ID: FindingID(originOf(files, origins, f.At.File), f), Rule: f.Rule, Severity: f.Severity.String(), File: fileName(files, f.At.File), Frame: f.At.Frame,
		Time: timeText(f.At.Time), RelatedFrames: []int64{}, Related: []relatedJSON{},
		Connection:   endpointsJSON{Client: f.Conn.Client.String(), Broker: f.Conn.Broker.String()},
		ConnectionID: f.ConnID,
		Expected:     newEvidenceValue(f.Expected, form.format), Seen: newEvidenceValue(f.Seen, form.format),
		BrokerAnswer: optText(answerName(f.Answer)), Answer: newAnswerJSON(f.Answer), Message: findingMessage(f), AfterGap: f.AfterGap,
		Also: append([]string{}, f.Also...), Count: f.Count,
	}
	if j.Count == 0 {
		j.Count = 1
	}
	for _, r := range f.Related {
		j.RelatedFrames = append(j.RelatedFrames, r.Frame.Frame)
		j.Related = append(j.Related, relatedJSON{File: fileName(files, r.Frame.File), Frame: r.Frame.Frame, Role: roleName(r.Role)})
	}
	if f.HasAPI {
		key, ver, corr := f.APIKey, f.APIVersion, f.CorrelationID
		j.APIKey, j.APIVersion, j.CorrelationID = &key, &ver, &corr
		j.APIName = strPtr(decode.APIName(key))
	}
	return j
}

func newConnectionJSON(files []string, c *rules.Connection, form UUIDForm) connectionJSON {
	j := connectionJSON{
		ID: c.ID, Client: c.Key.Client.String(), Broker: c.Key.Broker.String(),
		Profile: optText(profileName(c.Profile)), MidStream: c.MidStream, Requests: c.Requests, Responses: c.Responses,
		Gaps: c.Gaps, Unanswered: c.Unanswered, NewClient: c.NewClient, NotKafka: optText(c.NotKafka), TLS: optText(c.TLS),
		First: whereOf(files, c.First), Last: whereOf(files, c.Last),
	}
	if c.HasClient {
		j.ClientID = strPtr(c.ClientID)
	}
	if c.HasInstanceID {
		j.InstanceID = strPtr(form.format(c.InstanceID))
	}
	if c.HasTCPStream {
		n := c.TCPStream
		j.TCPStream = &n
	}
	return j
}

func profileName(p rules.Profile) string {
	s, _ := ProfileNames.Name(p)
	return s
}

func newInstanceJSON(files []string, in *rules.Instance, form UUIDForm) instanceJSON {
	j := instanceJSON{
		InstanceID: form.format(in.ID), ClientIDs: append([]string{}, in.ClientIDs...),
		ClientAddresses: []string{}, Brokers: []string{}, Connections: append([]int{}, in.Connections...),
		FirstSeen: whereOf(files, in.First), LastSeen: whereOf(files, in.Last), TelemetryIDs: []string{},
		ConnectionCount: max(in.ConnectionCount, int64(len(in.Connections))),
	}
	for _, a := range in.Addresses {
		j.ClientAddresses = append(j.ClientAddresses, a.String())
	}
	for _, b := range in.Brokers {
		j.Brokers = append(j.Brokers, b.String())
	}
	for _, t := range in.TelemetryIDs {
		j.TelemetryIDs = append(j.TelemetryIDs, form.format(t))
	}
	return j
}

// brokerEvidence is a broker's evidence frames in capture order, each with
// the verdict it supports.
func brokerEvidence(b *rules.Broker) []evidenceFrame {
	var ev []evidenceFrame
	for _, f := range b.EnforceFrames {
		ev = append(ev, evidenceFrame{f, rules.VerdictEnforces})
	}
	for _, f := range b.IgnoreFrames {
		ev = append(ev, evidenceFrame{f, rules.VerdictIgnores})
	}
	slices.SortStableFunc(ev, func(a, b evidenceFrame) int { return a.at.Compare(b.at) })
	return ev
}

type evidenceFrame struct {
	at      kafka.FrameRef
	verdict rules.Verdict
}

func newBrokerJSON(files []string, b *rules.Broker) brokerJSON {
	j := brokerJSON{Broker: b.Endpoint.String(), KIP1313: b.Verdict.String(), EvidenceFrames: []int64{},
		EnforceFrames: []int64{}, IgnoreFrames: []int64{}, Evidence: []evidenceJSON{}, Connections: b.Connections, TLSNoKey: b.TLSNoKey}
	for _, f := range b.EnforceFrames {
		j.EnforceFrames = append(j.EnforceFrames, f.Frame)
	}
	for _, f := range b.IgnoreFrames {
		j.IgnoreFrames = append(j.IgnoreFrames, f.Frame)
	}
	for _, e := range brokerEvidence(b) {
		j.EvidenceFrames = append(j.EvidenceFrames, e.at.Frame)
		j.Evidence = append(j.Evidence, evidenceJSON{File: fileName(files, e.at.File), Frame: e.at.Frame, Verdict: e.verdict.String()})
	}
	if b.TelemetryKnown {
		t := b.Telemetry
		j.Telemetry = &t
	}
	j.EnforceTotal = max(b.Enforced, int64(len(b.EnforceFrames)))
	j.IgnoreTotal = max(b.Ignored, int64(len(b.IgnoreFrames)))
	j.EvidenceTotal = j.EnforceTotal + j.IgnoreTotal
	return j
}

func newMatrixJSON(m *rules.Matrix) matrixJSON {
	row := func(r [3]int) matrixRowJSON { return matrixRowJSON{OldBroker: r[0], NewBroker: r[1], Unknown: r[2]} }
	return matrixJSON{OldClient: row(m.Cells[0]), NewClient: row(m.Cells[1])}
}

func countSeverities(fs []rules.Finding) severityCounts {
	var c severityCounts
	for i := range fs {
		switch fs[i].Severity {
		case rules.Error:
			c.Error++
		case rules.Warning:
			c.Warning++
		default:
			c.Info++
		}
	}
	return c
}

func newSummaryJSON(a *Analysis) summaryJSON {
	s := &a.Summary
	first, last := s.First, s.Last
	if first.IsZero() {
		first, last = a.Result.Start, a.Result.End
	}
	j := summaryJSON{
		Files: append([]string{}, a.Files...), Packets: s.Capture.Packets, Bytes: s.Capture.Bytes,
		Connections: s.Connections, Requests: s.Requests, Responses: s.Responses,
		FindingsBySeverity: countSeverities(a.Result.Findings),
		First:              timeText(first), Last: timeText(last),
		Gaps: s.Gaps, Resyncs: s.Resyncs, Malformed: s.Malformed, MalformedPackets: s.Capture.Malformed,
		CutPackets: s.Capture.Cut, NotKafka: s.NotKafka, Unanswered: s.Unanswered, NoResponseExpected: s.NoResponse, Unmatched: s.Unmatched,
		UnknownAPI: s.UnknownAPI, TruncatedStreams: s.Truncated, ConnectionsDropped: s.Reassembly.ConnectionsDropped,
		ConnectionsReused: s.Reassembly.Reused,
		KernelDrops:       s.Capture.KernelDrops, Filtered: s.Capture.Filtered, OutsideTime: s.OutsideTime,
		DroppedConnections: a.Result.Dropped.Connections, DroppedFindings: a.Result.Dropped.Findings,
		DroppedInstances: a.Result.Dropped.Instances,
		Problems:         []string{}, Interrupted: s.Interrupted,
	}
	j.BodiesSkippedBudget, j.BodiesSkippedTooLarge = s.BodiesSkippedBudget, s.BodiesSkippedTooLarge
	j.OversizedFrames, j.ExtraInterfaces = s.Capture.OversizedFrames, s.Capture.ExtraInterfaces
	j.ExtraInterfaceFrames = s.Capture.ExtraInterfaceFrames
	for _, p := range s.Problems {
		j.Problems = append(j.Problems, p.Error())
	}
	if n := a.Scope; n != nil {
		j.Scope = &scopeJSON{Flags: n.Text, Findings: n.Findings, FindingsTotal: n.FindingsTotal,
			Connections: n.Connections, ConnectionsTotal: n.ConnectionsTotal}
	}
	return j
}

func newAnalysisJSON(a *Analysis, form UUIDForm) *analysisJSON {
	res := &a.Result
	doc := &analysisJSON{
		SchemaVersion: AnalysisSchemaVersion, runJSON: newRunJSON(a.Run), Summary: newSummaryJSON(a),
		Findings: []findingJSON{}, Connections: []connectionJSON{}, Instances: []instanceJSON{}, Brokers: []brokerJSON{},
		Matrix: newMatrixJSON(&res.Matrix),
	}
	for i := range res.Findings {
		doc.Findings = append(doc.Findings, newFindingJSON(a.Files, a.Origins, &res.Findings[i], form))
	}
	for i := range res.Connections {
		doc.Connections = append(doc.Connections, newConnectionJSON(a.Files, &res.Connections[i], form))
	}
	for i := range res.Instances {
		doc.Instances = append(doc.Instances, newInstanceJSON(a.Files, &res.Instances[i], form))
	}
	for i := range res.Brokers {
		doc.Brokers = append(doc.Brokers, newBrokerJSON(a.Files, &res.Brokers[i]))
	}
	// True counts, not those of the lists the caps cut.
	doc.Summary.FindingsBySeverity = severityTotals(res)
	doc.Summary.DroppedBrokerConnections = res.Dropped.BrokerConnections
	doc.Summary.FindingsByRule = findingsByRule(res)
	doc.FindingCounts = findingCounts(res)
	doc.Agents, doc.Fleet = newAgentsJSON(a)
	return doc
}

// findingsByRule counts every finding made by rule, listed or not.
func findingsByRule(res *rules.Result) map[string]int64 {
	m := map[string]int64{}
	for i := range res.Findings {
		m[res.Findings[i].Rule]++
	}
	for rule, n := range res.FindingsByRule {
		m[rule] = max(m[rule], n)
	}
	return m
}

// findingCounts is a count per rule and connection of the listed
// findings, in the order of their first listed finding.
func findingCounts(res *rules.Result) []findingCountJSON {
	out := []findingCountJSON{}
	at := map[rules.FindingGroup]int{}
	for i := range res.Findings {
		f := &res.Findings[i]
		g := rules.FindingGroup{Rule: f.Rule, ConnID: f.ConnID}
		k, ok := at[g]
		if !ok {
			k = len(out)
			at[g] = k
			out = append(out, findingCountJSON{Rule: f.Rule, ConnectionID: f.ConnID})
		}
		out[k].Listed++
	}
	for i := range out {
		out[i].Count = int64(groupTotal(res, out[i].Rule, out[i].ConnectionID, out[i].Listed))
	}
	return out
}

func writeAnalysisJSON(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(newAnalysisJSON(a, opt.UUID)); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := indentJSON(bw, bytes.TrimSuffix(compact.Bytes(), []byte("\n"))); err != nil {
		return err
	}
	bw.WriteByte('\n')
	return bw.Flush()
}

// NDJSON lines: "kind" first, then the fields of the JSON document's
// object of that kind.

type ndjsonFinding struct {
	Kind string `json:"kind"`
	*findingJSON
}

type ndjsonConnection struct {
	Kind string `json:"kind"`
	*connectionJSON
}

type ndjsonInstance struct {
	Kind string `json:"kind"`
	*instanceJSON
}

type ndjsonBroker struct {
	Kind string `json:"kind"`
	*brokerJSON
}

type ndjsonAgent struct {
	Kind string `json:"kind"`
	*agentJSON
}

type ndjsonFleet struct {
	Kind string `json:"kind"`
	*fleetJSON
}

type ndjsonSummary struct {
	Kind          string `json:"kind"`
	SchemaVersion int    `json:"schema_version"`
	*summaryJSON
	Matrix matrixJSON `json:"matrix"`
}

func writeAnalysisNDJSON(w io.Writer, a *Analysis, opt AnalysisOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	doc := newAnalysisJSON(a, opt.UUID)
	if !opt.OmitRun {
		if err := enc.Encode(ndjsonRun{"run", AnalysisSchemaVersion, doc.runJSON}); err != nil {
			return err
		}
	}
	for i := range doc.Findings {
		if opt.OmitFindings {
			break // already streamed (live)
		}
		if err := enc.Encode(ndjsonFinding{"finding", &doc.Findings[i]}); err != nil {
			return err
		}
	}
	for i := range doc.Connections {
		if err := enc.Encode(ndjsonConnection{"connection", &doc.Connections[i]}); err != nil {
			return err
		}
	}
	for i := range doc.Instances {
		if err := enc.Encode(ndjsonInstance{"instance", &doc.Instances[i]}); err != nil {
			return err
		}
	}
	for i := range doc.Brokers {
		if err := enc.Encode(ndjsonBroker{"broker", &doc.Brokers[i]}); err != nil {
			return err
		}
	}
	for i := range doc.Agents {
		if err := enc.Encode(ndjsonAgent{"agent", &doc.Agents[i]}); err != nil {
			return err
		}
	}
	if doc.Fleet != nil {
		if err := enc.Encode(ndjsonFleet{"fleet", doc.Fleet}); err != nil {
			return err
		}
	}
	if err := enc.Encode(ndjsonSummary{"summary", AnalysisSchemaVersion, &doc.Summary, doc.Matrix}); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteFindingLine writes one finding as an ndjson line of kind "finding",
// with the fields of analyze's JSON findings, in one Write: what `live`
// streams as findings are made. files are the input names the finding's
// file index refers to, origins what they stand for in its ID
// (Analysis.Origins).
func WriteFindingLine(w io.Writer, files []string, origins []Origin, f *rules.Finding, form UUIDForm) error {
	j := newFindingJSON(files, origins, f, form)
	b, err := marshalLine(ndjsonFinding{"finding", &j})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// marshalLine is json.Marshal without HTML escaping, newline-terminated.
func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
