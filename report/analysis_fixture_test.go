package report

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/kidscope/kidscope/capture"
	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/result"
	"github.com/kidscope/kidscope/rules"
)

// Hand-built results for the golden tests: what the engine would make of
// two captures.

func mustUUID(s string) kafka.UUID {
	var u kafka.UUID
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		panic("bad uuid " + s)
	}
	copy(u[:], b)
	return u
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func ad(s string) netip.Addr { return netip.MustParseAddr(s) }

var (
	t0     = time.Date(2025, 3, 4, 9, 15, 2, 125_000_000, time.UTC)
	instA  = mustUUID("5b2f3c4d-6e7f-4a8b-9c0d-1e2f3a4b5c6d") // payments-producer
	instB  = mustUUID("0a9b8c7d-6e5f-4041-8223-344556677889") // analytics-consumer
	otherX = mustUUID("c1d2e3f4-a5b6-4c7d-8e9f-a0b1c2d3e4f5")
	otherY = mustUUID("11223344-5566-4778-899a-abbccddeeff0")
	telA   = mustUUID("7e57ab1e-0000-4000-8000-00000000beef")
	telB   = mustUUID("deadbeef-1234-4567-89ab-cdef01234567")
)

func at(file int, frame int64, secs float64) kafka.FrameRef {
	return kafka.FrameRef{File: file, Frame: frame, Time: t0.Add(time.Duration(secs * float64(time.Second)))}
}

func fr(file int, frame int64) kafka.FrameRef { return kafka.FrameRef{File: file, Frame: frame} }

func est(file int, frame int64) rules.Related {
	return rules.Related{Frame: fr(file, frame), Role: rules.RoleEstablished}
}

func answer(file int, frame int64) rules.Related {
	return rules.Related{Frame: fr(file, frame), Role: rules.RoleAnswer}
}

func answered(code int16) rules.Answer {
	return rules.Answer{State: rules.Answered, Codes: []int16{code}}
}

func id(u kafka.UUID) rules.Value    { return rules.Value{Kind: rules.ValueID, ID: u} }
func named(u kafka.UUID) rules.Value { return rules.Value{Kind: rules.ValueIDNamed, ID: u} }

// incidentAnalysis is two files, IPv4 and IPv6, errors, warnings and
// repeated infos, instances, and brokers that enforce, ignore, mix and
// tell nothing.
func incidentAnalysis() *Analysis {
	c1 := kafka.Endpoints{Client: ap("10.1.4.20:51234"), Broker: ap("10.1.0.11:9092")}
	c2 := kafka.Endpoints{Client: ap("10.1.4.20:51240"), Broker: ap("10.1.0.12:9092")}
	c3 := kafka.Endpoints{Client: ap("[2001:db8:10::7]:40112"), Broker: ap("[2001:db8::11]:9092")}
	c4 := kafka.Endpoints{Client: ap("10.1.7.3:60001"), Broker: ap("10.1.0.11:9092")}
	c5 := kafka.Endpoints{Client: ap("10.1.9.9:44321"), Broker: ap("10.1.0.13:9092")}
	c6 := kafka.Endpoints{Client: ap("10.2.0.5:51999"), Broker: ap("10.1.0.12:9092")}

	api := func(f rules.Finding, key, ver int16, corr int32) rules.Finding {
		f.HasAPI, f.APIKey, f.APIVersion, f.CorrelationID = true, key, ver, corr
		return f
	}
	fs := []rules.Finding{
		{Rule: rules.StreamNotKafka, Severity: rules.Info, At: at(0, 60, 0.4), Conn: c5, ConnID: 5,
			Seen: rules.Value{Kind: rules.ValueNotKafka, Text: "TLS"}, Stream: rules.Stream{Kind: rules.NotKafkaBytes}},
		api(rules.Finding{Rule: rules.HeaderIDChanged, Severity: rules.Error, At: at(0, 117, 1.5), Conn: c1, ConnID: 1,
			Related: []rules.Related{est(0, 5), answer(0, 118)}, Expected: id(instA), Seen: named(otherX),
			Answer: answered(42)}, 3, 12, 41),
		api(rules.Finding{Rule: rules.HeaderIDChanged, Severity: rules.Error, At: at(0, 239, 2.25), Conn: c1, ConnID: 1,
			Related: []rules.Related{est(0, 5), answer(0, 240)}, Expected: id(instA), Seen: named(otherY),
			Answer: answered(42)}, 0, 11, 97),
		api(rules.Finding{Rule: rules.HeaderIDChanged, Severity: rules.Error, At: at(0, 388, 3.0), Conn: c1, ConnID: 1,
			Related: []rules.Related{est(0, 5)}, Expected: id(instA), Seen: named(otherX),
			Answer: rules.Answer{State: rules.ClosedByBroker}}, 3, 12, 130),
		api(rules.Finding{Rule: rules.TelemetryBodyMismatch, Severity: rules.Error, At: at(0, 1501, 20), Conn: c2, ConnID: 2,
			Related: []rules.Related{answer(0, 1502)}, Expected: rules.Value{Kind: rules.ValueHeaderBodyID, ID: instA},
			Seen:   rules.Value{Kind: rules.ValueBodyID},
			Answer: answered(0), Also: []string{rules.TelemetryIDNotReused}}, 71, 0, 3),
		api(rules.Finding{Rule: rules.JoinMemberIDRequiredOldVersion, Severity: rules.Warning, At: at(0, 2004, 31), Conn: c4, ConnID: 4,
			Related: []rules.Related{{Frame: fr(0, 2003), Role: rules.RoleRequest}}, Expected: rules.Value{Kind: rules.ValueJoinGroupV4},
			Seen:   rules.Value{Kind: rules.ValueJoinGroupVersion, Version: 3},
			Answer: answered(79)}, 11, 3, 8),
		{Rule: rules.StreamGap, Severity: rules.Info, At: at(0, 2950, 40), Conn: c2, ConnID: 2,
			Stream: rules.Stream{Kind: rules.LostBytes, Side: kafka.ToBroker, Resynced: true, Skipped: 1380}},
		{Rule: rules.StreamUnanswered, Severity: rules.Info, At: at(0, 4410, 95), Conn: c4, ConnID: 4, Count: 11,
			Stream: rules.Stream{Kind: rules.UnansweredRequests}},
		{Rule: rules.StreamUnanswered, Severity: rules.Info, At: at(0, 4411, 95.5), Conn: c2, ConnID: 2, Count: 3,
			Stream: rules.Stream{Kind: rules.UnansweredRequests}},
		{Rule: rules.StreamMidStart, Severity: rules.Info, At: at(1, 12, 0.1), Conn: c3, ConnID: 3,
			Stream: rules.Stream{Kind: rules.MissedStart}},
		api(rules.Finding{Rule: rules.HeaderClientIDRepeated, Severity: rules.Warning, At: at(1, 76, 0.9), Conn: c3, ConnID: 3,
			Related: []rules.Related{est(1, 12), answer(1, 77)}, Expected: rules.Value{Kind: rules.ValueNullClientID},
			Seen:   rules.Value{Kind: rules.ValueClientID, Text: "analytics-consumer"},
			Answer: answered(0)}, 71, 1, 5),
	}
	for i, frame := range []int64{310, 910, 1510, 2110} {
		fs = append(fs, api(rules.Finding{Rule: rules.HeaderIDRepeated, Severity: rules.Info, At: at(1, frame, float64(10+i*30)),
			Conn: c3, ConnID: 3, Related: []rules.Related{est(1, 12), answer(1, frame+1)}, Expected: rules.Value{Kind: rules.ValueNoIDRepeated},
			Seen: named(instB), Answer: answered(0)}, 72, 1, int32(20+i)))
	}
	fs = append(fs,
		api(rules.Finding{Rule: rules.InstanceIDShared, Severity: rules.Warning, At: at(1, 790, 50), Conn: c6, ConnID: 6,
			Related:  []rules.Related{{Frame: fr(0, 5), Role: rules.RoleFirstSeen}, answer(1, 791)},
			Expected: rules.Value{Kind: rules.ValueOneAddress, Addr: ad("10.1.4.20")},
			Seen:     rules.Value{Kind: rules.ValueAlsoFrom, ID: instA, Addr: ad("10.2.0.5")}, Answer: answered(0)}, 3, 12, 1),
		api(rules.Finding{Rule: rules.HeaderIDDropped, Severity: rules.Error, At: at(1, 802, 51), Conn: c6, ConnID: 6,
			Related: []rules.Related{est(1, 790), answer(1, 803)}, Expected: id(instA), Seen: rules.Value{Kind: rules.ValueNoID}, AfterGap: true,
			Answer: answered(42)}, 0, 11, 12),
		api(rules.Finding{Rule: rules.TelemetryPushUnknownID, Severity: rules.Warning, At: at(1, 2210, 80), Conn: c6, ConnID: 6,
			Expected: rules.Value{Kind: rules.ValueExchangedID}, Seen: id(telB), Answer: rules.Answer{State: rules.NoResponse}}, 72, 0, 30),
		rules.Finding{Rule: rules.StreamGap, Severity: rules.Info, At: at(1, 4980, 300), Conn: c6, ConnID: 6,
			Stream: rules.Stream{Kind: rules.LostBytes, Side: kafka.ToClient}},
	)

	conns := []rules.Connection{
		{ID: 1, Key: c1, ClientID: "payments-producer", HasClient: true, InstanceID: instA, HasInstanceID: true,
			Profile: rules.ProfileSeed, NewClient: true, Requests: 812, Responses: 812, First: at(0, 3, 0.01), Last: at(0, 4402, 94)},
		{ID: 2, Key: c2, ClientID: "payments-producer", HasClient: true, InstanceID: instA, HasInstanceID: true,
			Profile: rules.ProfileSeed, NewClient: true, Requests: 233, Responses: 230, Unanswered: 3, Gaps: 1,
			First: at(0, 7, 0.02), Last: at(0, 4411, 95.5)},
		{ID: 3, Key: c3, ClientID: "analytics-consumer", HasClient: true, InstanceID: instB, HasInstanceID: true,
			Profile: rules.ProfileAccepted, MidStream: true, NewClient: true, Requests: 4100, Responses: 4100,
			First: at(1, 12, 0.1), Last: at(1, 4975, 299)},
		{ID: 4, Key: c4, ClientID: "legacy-app", HasClient: true, Requests: 3900, Responses: 3889, Unanswered: 11,
			First: at(0, 9, 0.05), Last: at(0, 4410, 95)},
		{ID: 5, Key: c5, NotKafka: "TLS", First: at(0, 58, 0.39), Last: at(0, 61, 0.41)},
		{ID: 6, Key: c6, ClientID: "payments-producer", HasClient: true, InstanceID: instA, HasInstanceID: true,
			Profile: rules.ProfileSeed, NewClient: true, Requests: 75, Responses: 74, Gaps: 1, First: at(1, 788, 49.9), Last: at(1, 4980, 300)},
	}
	instances := []rules.Instance{
		{ID: instA, ClientIDs: []string{"payments-producer"}, Addresses: []netip.Addr{ad("10.1.4.20"), ad("10.2.0.5")},
			Brokers: []netip.AddrPort{ap("10.1.0.11:9092"), ap("10.1.0.12:9092")}, Connections: []int{1, 2, 6},
			First: at(0, 5, 0.015), Last: at(1, 2210, 80), TelemetryIDs: []kafka.UUID{telA}},
		{ID: instB, ClientIDs: []string{"analytics-consumer"}, Addresses: []netip.Addr{ad("2001:db8:10::7")},
			Brokers: []netip.AddrPort{ap("[2001:db8::11]:9092")}, Connections: []int{3},
			First: at(1, 12, 0.1), Last: at(1, 2110, 100)},
	}
	brokers := []rules.Broker{
		{Endpoint: ap("10.1.0.11:9092"), Verdict: rules.VerdictEnforces, EnforceFrames: []kafka.FrameRef{fr(0, 118), fr(0, 240)},
			Connections: 2, Telemetry: true, TelemetryKnown: true},
		{Endpoint: ap("10.1.0.12:9092"), Verdict: rules.VerdictMixed, EnforceFrames: []kafka.FrameRef{fr(1, 803)},
			IgnoreFrames: []kafka.FrameRef{fr(0, 1502)}, Connections: 2},
		{Endpoint: ap("10.1.0.13:9092"), Verdict: rules.VerdictUnknown, Connections: 1},
		{Endpoint: ap("[2001:db8::11]:9092"), Verdict: rules.VerdictIgnores, IgnoreFrames: []kafka.FrameRef{fr(1, 77)},
			Connections: 1, Telemetry: true, TelemetryKnown: true},
	}
	files := []string{"captures/broker-a.pcapng", "captures/broker-b.pcap.gz"}
	return &Analysis{
		Files: files,
		Run: &RunInfo{Version: "v1.4.0", Options: testOptions(), Inputs: []Input{
			{Kind: InputFile, Name: files[0], Size: sizeOf(31877412 - 1200), SHA256: "5f7b3c0d9e2a41b8c6d0f1e2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6"},
			{Kind: InputFile, Name: files[1], Size: sizeOf(1200), SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		}},
		Summary: result.Summary{
			Files: files, First: t0, Last: t0.Add(6*time.Minute + 45775*time.Millisecond),
			Capture:     capture.Stats{Packets: 48213, Bytes: 31877412, TCP: 48100, Cut: 3, Malformed: 1},
			Connections: 6, Gaps: 2, NotKafka: 1, Truncated: 1,
			Counters: decode.Counters{Requests: 9120, Responses: 9105, Unmatched: 1, Unanswered: 14, Resyncs: 1, Malformed: 2},
			Problems: []error{errors.New("captures/broker-b.pcap.gz: truncated at frame 5120: unexpected EOF")},
		},
		Result: rules.Result{
			Findings: fs, Connections: conns, Instances: instances, Brokers: brokers,
			Matrix: rules.Matrix{Cells: [2][3]int{{0, 1, 0}, {1, 1, 2}}},
			Start:  t0, End: t0.Add(300 * time.Second),
		},
	}
}

func sizeOf(n int64) *int64 { return &n }

// testOptions are analyze's defaults on a laptop.
func testOptions() RunOptions {
	return RunOptions{Ports: []string{"9092", "19092-19094"}, Profile: "auto", HeaderV3: []string{"3:13"}, MinSeverity: "info",
		UUID: "kafka", Workers: 8, MaxFrame: 100 << 20, MaxConnections: 100000, MaxBuffer: 8192, MaxBufferPerConnection: 512,
		MaxResyncBuffer: 13107200, MaxBodyBuffer: 13107200}
}

// quietAnalysis is one file, one IPv6 connection of an old client to a
// broker that tells nothing: a warning with UUIDs in its text, and
// repeated info findings that the table hides.
func quietAnalysis() *Analysis {
	c := kafka.Endpoints{Client: ap("[fd00:1::20]:53012"), Broker: ap("[fd00:1::9]:9092")}
	fs := []rules.Finding{
		{Rule: rules.BrokerIDConflict, Severity: rules.Warning, At: at(0, 14, 0.2), Conn: c, ConnID: 1,
			Related: []rules.Related{{Frame: fr(0, 13), Role: rules.RoleRequest}}, HasAPI: true, APIKey: 71, APIVersion: 0, CorrelationID: 2,
			Expected: rules.Value{Kind: rules.ValueEchoOrZero, ID: telA}, Seen: id(telB), Answer: answered(0)},
		{Rule: rules.StreamGap, Severity: rules.Info, At: at(0, 220, 3), Conn: c, ConnID: 1,
			Stream: rules.Stream{Kind: rules.LostBytes, Side: kafka.ToBroker, Resynced: true, Skipped: 96}},
		{Rule: rules.StreamGap, Severity: rules.Info, At: at(0, 380, 5), Conn: c, ConnID: 1,
			Stream: rules.Stream{Kind: rules.LostBytes, Side: kafka.ToBroker, Resynced: true, Skipped: 1024}},
		{Rule: rules.StreamUnanswered, Severity: rules.Info, At: at(0, 402, 6), Conn: c, ConnID: 1, Count: 1,
			Stream: rules.Stream{Kind: rules.UnansweredRequests}},
	}
	opts := testOptions()
	opts.Filter, opts.Rules, opts.UUID = "host 10.0.0.9 and port 9092", []string{"broker-*", "stream-*"}, "rfc4122"
	return &Analysis{
		Files: []string{"kafka-dev.pcap"},
		Run: &RunInfo{Version: "(devel) 5724755c0ffe+dirty", Options: opts, Inputs: []Input{
			{Kind: InputFile, Name: "kafka-dev.pcap", Unhashed: "not a regular file: read once, by the analysis"},
		}},
		Summary: result.Summary{
			Files: []string{"kafka-dev.pcap"}, First: t0, Last: t0.Add(6 * time.Second),
			Capture:     capture.Stats{Packets: 402, Bytes: 88120, TCP: 402},
			Connections: 1, Gaps: 2, Counters: decode.Counters{Requests: 57, Responses: 56, Unanswered: 1, Resyncs: 2},
		},
		Result: rules.Result{
			Findings: fs,
			Connections: []rules.Connection{{ID: 1, Key: c, ClientID: "dev-tool", HasClient: true, Requests: 57, Responses: 56,
				Unanswered: 1, Gaps: 2, First: at(0, 1, 0), Last: at(0, 402, 6)}},
			Brokers: []rules.Broker{{Endpoint: c.Broker, Connections: 1}},
			Matrix:  rules.Matrix{Cells: [2][3]int{{0, 0, 1}, {0, 0, 0}}},
			Start:   t0, End: t0.Add(6 * time.Second),
		},
	}
}

// shortValues rewrites the IPv6 endpoints of an analysis as IPv4 ones: the
// table must fit 80 columns when the values are short.
func shortValues(a *Analysis) *Analysis {
	addr := func(x netip.Addr) netip.Addr {
		if x.Is4() {
			return x
		}
		b := x.As16()
		return netip.AddrFrom4([4]byte{10, 6, b[14], b[15]})
	}
	ep := func(x netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(addr(x.Addr()), x.Port()) }
	key := func(k kafka.Endpoints) kafka.Endpoints {
		return kafka.Endpoints{Client: ep(k.Client), Broker: ep(k.Broker)}
	}
	r := &a.Result
	for i := range r.Findings {
		r.Findings[i].Conn = key(r.Findings[i].Conn)
	}
	for i := range r.Connections {
		r.Connections[i].Key = key(r.Connections[i].Key)
	}
	for i := range r.Instances {
		for j := range r.Instances[i].Addresses {
			r.Instances[i].Addresses[j] = addr(r.Instances[i].Addresses[j])
		}
		for j := range r.Instances[i].Brokers {
			r.Instances[i].Brokers[j] = ep(r.Instances[i].Brokers[j])
		}
	}
	for i := range r.Brokers {
		r.Brokers[i].Endpoint = ep(r.Brokers[i].Endpoint)
	}
	return a
}
