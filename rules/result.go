package rules

import (
	"net/netip"
	"time"

	"github.com/kidscope/kidscope/kafka"
)

// Severity of a finding.
type Severity int

const (
	Info Severity = iota
	Warning
	Error
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "info"
}

// ParseSeverity reads "info", "warning" or "error".
func ParseSeverity(s string) (Severity, bool) {
	switch s {
	case "info":
		return Info, true
	case "warning":
		return Warning, true
	case "error":
		return Error, true
	}
	return 0, false
}

// Profile is the KIP-1313 revision a connection is judged by (docs/design/rules.md §2).
type Profile int

const (
	ProfileNone     Profile = iota // not determined (or no header rule applies)
	ProfileSeed                    // the source documents: every flexible-header request
	ProfileAccepted                // the accepted KIP: header v3 requests
)

func (p Profile) String() string {
	switch p {
	case ProfileSeed:
		return "seed"
	case ProfileAccepted:
		return "accepted"
	}
	return ""
}

// ProfileChoice is the --profile flag: a forced profile or auto.
type ProfileChoice int

const (
	ProfileAuto ProfileChoice = iota
	ForceSeed
	ForceAccepted
)

// Finding is one rule that fired, with its evidence as values: the report
// words it.
type Finding struct {
	Rule     string
	Severity Severity
	At       kafka.FrameRef // the frame the finding points at (request, or response for the broker's answer)
	// Related are frames that support it, each with its role.
	Related    []Related
	Conn       kafka.Endpoints
	ConnID     int
	APIKey     int16
	APIVersion int16
	HasAPI     bool
	// CorrelationID of the request concerned (HasAPI).
	CorrelationID int32
	Expected      Value
	Seen          Value
	// Answer is what the broker did with the request concerned (HasAPI).
	Answer Answer
	// Stream is the evidence of the §8 findings, about no one request.
	Stream Stream
	// AfterGap is true when bytes of the connection were lost before it:
	// what the capture shows before it is incomplete.
	AfterGap bool
	// Also names the other §3/§4 rules that applied to the same request.
	Also []string
	// Count is how many events a finding stands for: the requests a
	// stream-unanswered finding counts, the pushes with one unknown ID a
	// telemetry-push-unknown-id finding stands for (0 for the others).
	Count int64
}

// Verdict is what a broker's answers say of KIP-1313 (docs/design/rules.md §5).
type Verdict int

const (
	VerdictUnknown Verdict = iota
	VerdictEnforces
	VerdictIgnores
	VerdictMixed
)

func (v Verdict) String() string {
	switch v {
	case VerdictEnforces:
		return "enforces"
	case VerdictIgnores:
		return "ignores"
	case VerdictMixed:
		return "mixed"
	}
	return "unknown"
}

// Broker is one broker endpoint and its KIP-1313 behaviour.
type Broker struct {
	Endpoint netip.AddrPort
	Verdict  Verdict
	// EnforceFrames are the responses (or closes) that rejected a
	// violating request, IgnoreFrames the ones that accepted one: the
	// first Options.MaxEvidence of each. Enforced and Ignored count them
	// all, kept or not.
	EnforceFrames     []kafka.FrameRef
	IgnoreFrames      []kafka.FrameRef
	Enforced, Ignored int64
	// Connections counts every connection to it, listed or not; TLSNoKey
	// those that were TLS without their keys in the key logs.
	Connections int
	TLSNoKey    int
	// Kinds counts its closed Kafka connections that sent a request, by
	// client kind (0 old, 1 new): its row of the Matrix.
	Kinds [2]int
	// Telemetry says whether its ApiVersions offered keys 71 and 72
	// (unknown when no ApiVersions response was seen).
	Telemetry      bool
	TelemetryKnown bool
}

// Connection is the summary of one connection.
type Connection struct {
	ID  int
	Key kafka.Endpoints
	// TCPStream is Wireshark's tcp.stream index (kafka.Conn's), when
	// HasTCPStream.
	TCPStream    int
	HasTCPStream bool
	ClientID     string
	HasClient    bool
	// InstanceID is the connection's established (or first) header ID.
	InstanceID    kafka.UUID
	HasInstanceID bool
	Profile       Profile
	MidStream     bool
	NewClient     bool // sent header instance IDs
	Requests      int64
	Responses     int64
	Unanswered    int64
	Gaps          int
	NotKafka      string
	// TLS is the TLS the connection was decrypted from; empty for
	// plaintext (decode.Outcome.TLS).
	TLS         string
	First, Last kafka.FrameRef
}

// Instance is one client instance ID and where it was seen.
type Instance struct {
	ID          kafka.UUID
	ClientIDs   []string
	Addresses   []netip.Addr
	Brokers     []netip.AddrPort
	Connections []int
	// ConnectionCount counts the connections that used it, listed in
	// Connections or not. The other lists stop at MaxPerInstance
	// entries: a full one may have left values out, uncounted.
	ConnectionCount int64
	First, Last     kafka.FrameRef
	// TelemetryIDs are the telemetry client instance IDs it used.
	TelemetryIDs []kafka.UUID
}

// MaxPerInstance caps each list an Instance keeps (client IDs, addresses,
// brokers, connections): a long capture must not grow them without end.
const MaxPerInstance = 64

// Matrix counts connections per client kind (old: no header IDs, new:
// header IDs) and broker verdict, as the seed's old/new table: every
// Kafka connection that sent a request, listed in Result.Connections or
// not.
type Matrix struct {
	// Cells[client][broker]: client 0 old, 1 new; broker 0 ignores (old),
	// 1 enforces (new), 2 unknown or mixed.
	Cells [2][3]int
}

// Result is everything the engine found.
type Result struct {
	Findings    []Finding
	Connections []Connection
	Instances   []Instance
	Brokers     []Broker
	Matrix      Matrix
	// Start and End of the traffic seen.
	Start, End time.Time
	// FindingsBySeverity counts every finding made, kept or not, by
	// Severity (before any filtering by the caller).
	FindingsBySeverity [3]int64
	// FindingsByRule counts every finding made, kept or not, by rule (of
	// the rules the caller's Filter keeps, once applied).
	FindingsByRule map[string]int64
	// FindingCounts counts every finding made, kept or not, of each rule
	// on each connection that has a finding of it in Findings: with the
	// findings cap, many more than Findings holds.
	FindingCounts map[FindingGroup]int64
	// Dropped is what the engine's caps left out of this Result.
	Dropped Dropped
}

// FindingGroup is one rule on one connection (Finding.ConnID).
type FindingGroup struct {
	Rule   string
	ConnID int
}

// Dropped counts what the caps of Options left out of a Result.
type Dropped struct {
	Connections int64 // oldest rows of the connections table
	Findings    int64 // findings after the first MaxFindings
	Instances   int64 // least recently seen client instances
	// BrokerConnections are connections to broker endpoints past the
	// first MaxBrokers, which the brokers list leaves out; the matrix
	// counts them as of brokers of unknown verdict.
	BrokerConnections int64
}
