package main

import (
	"sort"
	"strconv"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// plant is one planted violation: a client instance of its own, with one
// connection, that opens once the file reaches the fraction at of its
// target size and, after a normal setup, sends the one request a rule of
// docs/design/rules.md finds wrong. Everything else it does is clean, so the finding
// is the only one it causes.
type plant struct {
	rule, severity string
	at             float64 // fraction of the target size at which it starts
	app            app
	role           role
	newClient      bool
	why            string

	started bool
	done    bool
	// The finding, from the frames written.
	client, broker string
	frame          int64
	key, ver       int16
	corr           int32
	answer         *string // the broker's answer as kidscope names it; nil: no error code
}

func newPlants() []*plant {
	return []*plant{
		{rule: "header-id-changed", severity: "error", at: 0.15, app: appProducer, role: roleProducer, newClient: true,
			why: "a new client (seed profile) sends one Metadata request with a header instance ID other than the one its connection established; the broker answers it normally"},
		{rule: "telemetry-body-mismatch", severity: "error", at: 0.35, app: appProducer, role: roleProducer, newClient: true,
			why: "a new client sends GetTelemetrySubscriptions v0 with header ID H and body ID ZERO; the broker answers INVALID_REQUEST, the client retries with body ID H"},
		{rule: "join-member-id-not-used", severity: "error", at: 0.55, app: appConsumer, role: roleGroup, newClient: true,
			why: "JoinGroup answered MEMBER_ID_REQUIRED with member ID M; the client's next JoinGroup carries an empty member ID, answered MEMBER_ID_REQUIRED again, and the third uses the new ID"},
		{rule: "heartbeat-member-id-empty", severity: "error", at: 0.75, app: appConsumer848, role: roleGroup848, newClient: false,
			why: "an old client joins a KIP-848 group with ConsumerGroupHeartbeat v1 and an empty member ID; the broker answers INVALID_REQUEST, the client retries with a generated ID"},
		{rule: "heartbeat-member-id-changed", severity: "warning", at: 0.90, app: appConsumer848, role: roleGroup848, newClient: true,
			why: "a KIP-848 member sends a heartbeat with another member ID without leaving first; the broker answers UNKNOWN_MEMBER_ID and the client rejoins with that ID"},
	}
}

func (g *gen) plantsDone() bool {
	for _, p := range g.plants {
		if !p.started {
			return false
		}
	}
	return true
}

// plantExchange opens the planted violation's connection and runs its
// setup with the violation in it.
func (g *gen) plantExchange(p *plant) *exchange {
	in := g.newInstance(p.app, p.newClient)
	in.plant = p
	n := 0
	for _, q := range g.plants {
		if q == p {
			break
		}
		n++
	}
	c := g.newConn(in, p.role, g.brokers[n%len(g.brokers)])
	c.seq = [2]uint32{g.rng.Uint32(), g.rng.Uint32()}
	steps := []step{{kind: stepSYN}, {kind: stepSYNACK}, {kind: stepACK}}
	if g.tls != nil {
		steps = append(steps, g.tlsHandshake(c)...)
	}
	steps = append(steps, g.apiVersions(c)...)
	steps = append(steps, g.metadata(c, headerID{})...)
	mark := func(s []step, code int16, hasCode bool) []step {
		s[0].m.plant = p
		if hasCode {
			name := decode.ErrorName(code)
			p.answer = &name
		}
		return s
	}
	switch p.rule {
	case "header-id-changed":
		steps = append(steps, g.telemetry(c)...)
		// Metadata v12 keeps its codes per topic: the broker's are all NONE.
		steps = append(steps, mark(g.metadata(c, headerID{set: true, has: true, id: g.uuid()}), 0, true)...)
	case "telemetry-body-mismatch":
		steps = append(steps, mark(g.getTelemetry(c, kafka.UUID{}, errInvalidRequest), errInvalidRequest, true)...)
		steps = append(steps, g.getTelemetry(c, in.hid, errNone)...)
		steps = append(steps, g.pushTelemetry(c, false)...)
	case "join-member-id-not-used":
		steps = append(steps, g.telemetry(c)...)
		first := in.clientID + "-" + g.memberID()
		in.member = in.clientID + "-" + g.memberID()
		steps = append(steps, g.joinGroup(c, "", errMemberIDRequired, first)...)
		steps = append(steps, mark(g.joinGroup(c, "", errMemberIDRequired, in.member), errMemberIDRequired, true)...)
		steps = append(steps, g.joinGroup(c, in.member, errNone, in.member)...)
		steps = append(steps, g.syncGroup(c)...)
	case "heartbeat-member-id-empty":
		steps = append(steps, g.telemetry(c)...)
		steps = append(steps, mark(g.consumerHeartbeat(c, "", 0, errInvalidRequest), errInvalidRequest, true)...)
		in.member = g.memberID()
		steps = append(steps, g.consumerHeartbeat(c, in.member, 0, errNone)...)
	case "heartbeat-member-id-changed":
		steps = append(steps, g.telemetry(c)...)
		in.member = g.memberID()
		steps = append(steps, g.consumerHeartbeat(c, in.member, 0, errNone)...)
		in.member = g.memberID()
		steps = append(steps, mark(g.consumerHeartbeat(c, in.member, in.generation, errUnknownMemberID), errUnknownMemberID, true)...)
		steps = append(steps, g.consumerHeartbeat(c, in.member, 0, errNone)...)
	default:
		panic("loadgen: no plant for rule " + p.rule)
	}
	return &exchange{c: c, steps: steps}
}

// record notes where the planted request became complete.
func (p *plant) record(c *conn, m *message, frame int64) {
	p.done = true
	p.client, p.broker = c.clientAddr(), c.brokerAddr()
	p.frame, p.key, p.ver, p.corr = frame, m.key, m.ver, m.corr
}

// Expectation is what the -expect file holds: what the capture contains
// and what kidscope must find in it.
type Expectation struct {
	Generator string            `json:"generator"`
	Flags     map[string]string `json:"flags"`
	File      string            `json:"file"`
	Bytes     int64             `json:"bytes"`
	Packets   int64             `json:"packets"`
	// Connections counts every TCP connection in the capture; MidStream
	// those open before it started.
	Connections int `json:"connections"`
	MidStream   int `json:"mid_stream_connections"`
	Reconnects  int `json:"reconnects"`
	Restarts    int `json:"restarts"`
	// Requests and Responses are the Kafka messages whose bytes are all
	// in the capture (what `kidscope frames` lists); Unmatched of the
	// responses answer a request that began before the capture.
	Requests           int64            `json:"requests"`
	Responses          int64            `json:"responses"`
	Unmatched          int64            `json:"unmatched_responses"`
	RequestsByKey      map[string]int64 `json:"requests_by_api_key"`
	ResponsesByKey     map[string]int64 `json:"responses_by_api_key"`
	OutOfOrderSegments int64            `json:"out_of_order_segments"`
	Retransmitted      int64            `json:"retransmitted_segments"`
	// Findings are the error and warning findings kidscope must report,
	// exactly: the planted violations.
	Findings []ExpectedFinding `json:"findings"`
	// InfoFindings are the info findings the load makes by design.
	InfoFindings []ExpectedFinding `json:"info_findings"`
	// TLS is how kidscope must name every connection's TLS when it has the
	// key log (-tls), e.g. "TLS 1.3 TLS_AES_128_GCM_SHA256"; "" for a
	// plaintext load.
	TLS string `json:"tls,omitempty"`
}

// ExpectedFinding is one finding, with the fields of kidscope's JSON.
type ExpectedFinding struct {
	Rule          string  `json:"rule"`
	Severity      string  `json:"severity"`
	Client        string  `json:"client"`
	Broker        string  `json:"broker"`
	Frame         int64   `json:"frame"`
	APIKey        *int16  `json:"api_key,omitempty"`
	APIVersion    *int16  `json:"api_version,omitempty"`
	CorrelationID *int32  `json:"correlation_id,omitempty"`
	BrokerAnswer  *string `json:"broker_answer"`
	Why           string  `json:"why,omitempty"`
}

// expectation sums up what was written.
func (g *gen) expectation(file string, flags map[string]string) *Expectation {
	e := &Expectation{Generator: "kidscope bench/loadgen", Flags: flags, File: file, Bytes: g.pw.bytes,
		Packets: g.pw.packets, Connections: g.st.connections, MidStream: g.st.midstream,
		Reconnects: g.st.reconnects, Restarts: g.st.restarts, Unmatched: g.st.orphans,
		RequestsByKey: map[string]int64{}, ResponsesByKey: map[string]int64{},
		OutOfOrderSegments: g.st.ooo, Retransmitted: g.st.dups,
		Findings: []ExpectedFinding{}, InfoFindings: []ExpectedFinding{}}
	if g.tls != nil {
		e.TLS = "TLS 1.3 " + g.tls.suite.name
	}
	for k := range g.st.reqs {
		if n := g.st.reqs[k]; n > 0 {
			e.RequestsByKey[strconv.Itoa(k)] = n
			e.Requests += n
		}
		if n := g.st.resps[k]; n > 0 {
			e.ResponsesByKey[strconv.Itoa(k)] = n
			e.Responses += n
		}
	}
	e.Responses += g.st.orphans
	for _, p := range g.plants {
		if !p.done {
			continue
		}
		key, ver, corr := p.key, p.ver, p.corr
		e.Findings = append(e.Findings, ExpectedFinding{Rule: p.rule, Severity: p.severity, Client: p.client,
			Broker: p.broker, Frame: p.frame, APIKey: &key, APIVersion: &ver, CorrelationID: &corr,
			BrokerAnswer: p.answer, Why: p.why})
	}
	for _, c := range g.mids {
		e.InfoFindings = append(e.InfoFindings, ExpectedFinding{Rule: "stream-mid-start", Severity: "info",
			Client: c.clientAddr(), Broker: c.brokerAddr(), Frame: c.firstData,
			Why: "the connection was open before the capture started"})
	}
	sort.SliceStable(e.Findings, func(i, j int) bool { return e.Findings[i].Frame < e.Findings[j].Frame })
	sort.SliceStable(e.InfoFindings, func(i, j int) bool { return e.InfoFindings[i].Frame < e.InfoFindings[j].Frame })
	return e
}
