package rules

import (
	"net/netip"

	"github.com/kidscope/kidscope/kafka"
)

// ValueKind says what an expected or seen value of a finding is. The
// report words each kind; the rules only choose it and fill its raw fields.
type ValueKind int8

const (
	ValueNone ValueKind = iota // the finding has no such value

	// IDs, with Value.ID.
	ValueID           // an ID, always in its text form
	ValueIDNamed      // an ID, with ZERO and ONE named as such
	ValueNoID         // no ID at all
	ValueNonReserved  // any ID but ZERO and ONE
	ValueFirstV3ID    // a non-reserved ID in the first header-v3 request
	ValueNoIDFirst    // no ID, as the first flexible-header request carried none
	ValueNoIDRepeated // no ID, as the connection already established it
	ValueHeaderID     // an ID in the request header
	ValueNoIDAnywhere // no ID in the header nor on the connection

	// Request headers.
	ValueNullClientID // a null ClientId
	ValueClientID     // ClientId Text

	// Telemetry bodies and exchanges, with Value.ID.
	ValueHeaderBodyID    // the v0 body carrying the header's ID
	ValueBodyID          // the v0 body's ID (ZERO named)
	ValueNoPushAfterEnd  // no push after a terminating one
	ValuePushFor         // a push for ID
	ValueExchangedID     // an ID a GetTelemetrySubscriptions exchange produced
	ValueNewID           // a newly assigned instance ID
	ValueEchoOrZero      // ID echoed, or ZERO
	ValueSeenElsewhereID // ID, already seen on another connection
	ValueAccepted        // the request accepted
	ValueErrorCode       // the error code Code

	// Group membership.
	ValueMemberID          // member ID Text
	ValueGeneratedMemberID // a member ID the client generated
	ValueEmptyMemberID     // an empty member ID
	ValueJoinGroupV4       // JoinGroup v4 or later, which knows MEMBER_ID_REQUIRED
	ValueJoinGroupVersion  // JoinGroup of version Version

	// Client instances across connections.
	ValueOneAddress      // one client address: Addr, where the ID was first used
	ValueAlsoFrom        // ID, also used from address Addr
	ValueOtherConnection // ID, as the client's other open connection carries

	// Streams.
	ValueNotKafka // what the bytes are instead of Kafka: Text ("TLS")
)

// Value is an expected or seen value of a finding: its kind and the raw
// values it is about. Text holds capture-derived strings (client and
// member IDs), unescaped: the report escapes them for its formats. One
// longer than 256 bytes is cut, and ends with its length and a digest:
// "…[32767 bytes, sha256 …]".
type Value struct {
	Kind    ValueKind
	ID      kafka.UUID
	Text    string
	Addr    netip.Addr
	Version int16
	Code    int16
}

// AnswerState is what became of the request a finding concerns.
type AnswerState int8

const (
	// NotAnswerable: the finding concerns no request.
	NotAnswerable AnswerState = iota
	// Answered: the broker answered with Codes (its top-level code, or
	// its items' distinct codes; none when it carries no error code).
	Answered
	// NoResponse: the capture holds no answer.
	NoResponse
	// NoResponseByDesign: a Produce with acks = 0, which no broker
	// answers.
	NoResponseByDesign
	// ClosedByBroker: the broker closed the connection after it,
	// without an answer.
	ClosedByBroker
)

// Answer is the broker's answer to the request a finding concerns.
type Answer struct {
	State AnswerState
	Codes []int16
}

// Role says why a frame is related to a finding.
type Role int8

const (
	RoleEstablished     Role = iota + 1 // the request that established the connection's ID, or its absence
	RoleAnswer                          // the broker's answer to the request
	RoleRequest                         // the request a finding about an answer concerns
	RoleAssigned                        // the answer that gave the client the ID it should have used
	RoleTerminated                      // the terminating push
	RoleFirstSeen                       // where the ID was first seen from another client or address
	RoleOtherConnection                 // the first frame of the client's other open connection
	RolePrevious                        // the last request that carried the value before the one seen
)

// Related is a frame that supports a finding, and why.
type Related struct {
	Frame kafka.FrameRef
	Role  Role
}

// StreamKind says what a finding about a connection's bytes (docs/design/rules.md §8)
// shows.
type StreamKind int8

const (
	AboutRequest       StreamKind = iota // the finding is about a request or answer, not the stream
	LostBytes                            // bytes of Side were lost
	NotKafkaBytes                        // the bytes are not Kafka; Seen says what they are
	MissedStart                          // the connection began before the capture
	UnansweredRequests                   // Finding.Count requests got no response
)

// Stream is the evidence of a finding about a connection's bytes.
type Stream struct {
	Kind StreamKind
	Side kafka.Direction
	// Resynced: the Kafka framing was found again, Skipped bytes later
	// (LostBytes).
	Resynced bool
	Skipped  int64
}
